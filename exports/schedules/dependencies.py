"""The ports the schedule services work with (built by exports/schedules/composition.py)."""

from __future__ import annotations

from dataclasses import dataclass

from exports.accepting.dependencies import ApiDependencies
from exports.schedules.ports import ScheduleStore, ScheduleTimer


@dataclass(frozen=True)
class ScheduleDependencies:
    """The API's and the schedule function's: the submit path's ports (every firing creates its
    task as POST /v1/exports does), the schedules, and Scheduler (None: no Scheduler in this
    deployment, as in tests; local mode's loop fires from the store)."""

    api: ApiDependencies
    schedules: ScheduleStore
    timer: ScheduleTimer | None = None
