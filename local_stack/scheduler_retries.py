"""The one-time Scheduler schedules that deliver a firing refused for capacity again
(exports/schedules/eventbridge_scheduler.py, ``retry-...``), read from moto's Scheduler for local
mode's schedule loop: moto stores them, Scheduler would fire them at their ``at()`` time and then
delete them (``ActionAfterCompletion``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from exports.schedules.eventbridge_scheduler import DEFERRED_FIRING_PREFIX


class SchedulerRetries:
    """:class:`local_stack.schedule_loop.DeferredFirings` over moto's Scheduler."""

    def __init__(self, scheduler: Any, group: str) -> None:
        self._scheduler = scheduler
        self._group = group

    def take_due(self, now: datetime) -> list[tuple[str, datetime]]:
        """Each retry due by ``now`` as (schedule id, firing time), deleted as it is taken."""
        due = []
        listed = self._scheduler.list_schedules(GroupName=self._group, NamePrefix=DEFERRED_FIRING_PREFIX)
        for summary in listed.get("Schedules", []):
            detail = self._scheduler.get_schedule(Name=summary["Name"], GroupName=self._group)
            at = datetime.strptime(detail["ScheduleExpression"], "at(%Y-%m-%dT%H:%M:%S)").replace(tzinfo=UTC)
            if at > now:
                continue
            firing = json.loads(detail["Target"]["Input"])
            scheduled_for = datetime.strptime(firing["scheduled_time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            self._scheduler.delete_schedule(Name=summary["Name"], GroupName=self._group)
            due.append((firing["schedule_id"], scheduled_for))
        return due
