"""What EventBridge Scheduler is told of a schedule's window: its StartDate, EndDate and state.

The API takes any ``start_at`` and ``end_at`` its schema allows (docs/schedules.md, "The model": the window),
Scheduler does not: it refuses a StartDate more than 5 minutes ago, an EndDate in the past and
an EndDate before the StartDate. So the service's own rule (exports/schedules/expression.py)
decides what fires, and Scheduler is given the same firings in a form it takes:

- a ``start_at`` already past is no start for a cron (its times do not depend on it) and, for
  an ``every``, its first firing from now on (the rate keeps the phase counted from ``start_at``);
- a schedule with no firing ahead (paused, ended, or ``end_at`` not after ``start_at``) is kept
  disabled, without dates, until a change gives it one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from exports.schedules.expression import recurrence_of
from exports.schedules.model import Schedule


@dataclass(frozen=True)
class TimerWindow:
    """Scheduler's StartDate and EndDate (None: not given) and whether it is enabled."""

    start: datetime | None
    end: datetime | None
    enabled: bool


DISABLED = TimerWindow(start=None, end=None, enabled=False)


def timer_window(schedule: Schedule, now: datetime) -> TimerWindow:
    """The window Scheduler gets for ``schedule`` at ``now``."""
    if not schedule.is_active:
        return DISABLED
    first = next(recurrence_of(schedule).firings(now), None)
    if first is None:
        return DISABLED
    start = schedule.start_at
    if start is not None and start <= now:
        start = first if schedule.every is not None else None
    return TimerWindow(start=start, end=schedule.end_at, enabled=True)
