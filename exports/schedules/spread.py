"""When a firing arrives and how long a refused one may wait (docs/capacity.md, "Schedules do not stampede"):
pure functions of the schedule.

Every Monday-08:00 schedule of a deployment firing in the same second would meet admission as
one burst. Scheduler's flexible time window spreads them: each firing is delivered at an instant
of its own within the window after its time, while the firing's own time (its ``scheduled_for``,
from which its relative window is resolved) stays exact. A run refused for capacity is tried
again within its deferral window rather than failed.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from exports.core.config.schedules import Schedules
from exports.schedules.expression import recurrence_of
from exports.schedules.model import Schedule

_MINUTE = timedelta(minutes=1)


def spread_window(schedule: Schedule) -> timedelta:
    """How long after its time each of the schedule's firings may arrive: whole minutes, at most
    ``SPREAD_MAX_MIN`` and at most ``SPREAD_SHARE_OF_GAP`` of the shortest gap between its
    firings (so a firing never arrives near the next one); none for a schedule that fires more
    often than hourly (the stampedes are the daily, weekly and monthly times everyone picks).
    Measured from when the schedule's timing was last set, so it changes only then."""
    gap = recurrence_of(schedule).shortest_gap(schedule.updated_at)
    most = timedelta(minutes=Schedules.SPREAD_MAX_MIN)
    if gap is None:
        return most
    if gap < timedelta(minutes=Schedules.SPREAD_MIN_GAP_MIN):
        return timedelta(0)
    minutes = int(min(most, gap * Schedules.SPREAD_SHARE_OF_GAP) / _MINUTE)
    return timedelta(minutes=minutes)


def spread_offset(schedule_id: str, scheduled_for: datetime, window: timedelta) -> timedelta:
    """Where in ``window`` the firing at ``scheduled_for`` arrives, locally: an instant of its
    own, the same however often it is asked (Scheduler picks one at random)."""
    if window <= timedelta(0):
        return timedelta(0)
    digest = hashlib.sha256(f"{schedule_id}@{scheduled_for.isoformat()}".encode()).digest()
    return timedelta(seconds=int.from_bytes(digest[:8], "big") % int(window.total_seconds()))


def deferral_deadline(schedule: Schedule, scheduled_for: datetime) -> datetime:
    """Until when a firing refused for capacity is tried again: ``DEFERRAL_WINDOW_MIN`` after
    its time, and never past the schedule's next firing (that run covers its own window)."""
    deadline = scheduled_for + timedelta(minutes=Schedules.DEFERRAL_WINDOW_MIN)
    following = recurrence_of(schedule).next_runs(scheduled_for, 1)
    return min(deadline, following[0]) if following else deadline
