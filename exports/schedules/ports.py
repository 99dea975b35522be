"""What the schedule services need from outside: the schedules' store, EventBridge Scheduler
(the timer that fires them on AWS) and the mailer. Adapters: exports/adapters/dynamodb_schedules.py,
eventbridge_scheduler.py, ses_mailer.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from exports.domain.errors import ExportsError
from exports.schedules.model import Schedule


class ScheduleNotFound(ExportsError):
    """No such schedule, or not the caller's: both look the same from outside (404)."""

    code = "SCHEDULE_NOT_FOUND"

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id} not found", schedule_id=schedule_id)


class ScheduleLimitReached(ExportsError):
    """The user has as many schedules as a user may have (429)."""

    code = "SCHEDULE_LIMIT_REACHED"

    def __init__(self, limit: int) -> None:
        super().__init__(f"you have {limit} schedules, the most a user may have; delete one first", limit=limit)
        self.limit = limit


class FeedBusy(ExportsError):
    """A feed's previous run is still in flight: a run now would cover the same rows (409)."""

    code = "FEED_RUN_IN_PROGRESS"

    def __init__(self, schedule_id: str, task_id: str | None) -> None:
        super().__init__(
            f"schedule {schedule_id} has a run in flight ({task_id or 'being made'}); its next run covers this one's"
            " changes too",
            schedule_id=schedule_id,
            task_id=task_id,
        )
        self.task_id = task_id


class NoLatestFile(ExportsError):
    """The schedule has no COMPLETED run with a file that is still kept (404)."""

    code = "NO_LATEST_FILE"

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id} has no completed run with a file (yet, or any more)")


@dataclass(frozen=True)
class SchedulePage:
    """A page of a user's schedules, newest first."""

    schedules: Sequence[Schedule]
    cursor: str | None = None


@dataclass(frozen=True)
class FiringClaim:
    """The outcome of claiming one firing: ``won`` (this invocation creates its task, holding
    ``token``), or another invocation's claim (``task_id`` once it made the task)."""

    won: bool
    token: str
    task_id: str | None = None


class ScheduleStore(Protocol):
    """Schedules and their firing records; every write is conditional."""

    def create(self, schedule: Schedule, max_per_user: int) -> None:
        """Store a new schedule, counting it against its user's cap
        (:class:`ScheduleLimitReached`)."""

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, or None."""

    def list_for_user(self, user_id: str, limit: int, cursor: str | None) -> SchedulePage:
        """The user's schedules, newest first, from an index (never a scan)."""

    def replace(self, before: Schedule, after: Schedule) -> Schedule:
        """Write ``after`` (its version one above ``before``'s) if the stored schedule is still
        ``before``'s version; :class:`exports.domain.errors.ConditionFailed` otherwise."""

    def delete(self, schedule: Schedule) -> None:
        """Remove the schedule and give its place in the user's cap back."""

    def claim_firing(self, schedule_id: str, scheduled_for: datetime, now: datetime) -> FiringClaim:
        """Claim the firing of ``schedule_id`` at ``scheduled_for``: won by exactly one caller,
        or by a later one when the earlier claim was released or outlived its lease."""

    def finish_firing(self, schedule_id: str, scheduled_for: datetime, token: str, task_id: str | None) -> None:
        """Record the task the claim holder made (None: the firing made none, e.g. it paused)."""

    def release_firing(self, schedule_id: str, scheduled_for: datetime, token: str) -> None:
        """Give a claim up (its task could not be made): a retried delivery may claim it again."""


class ScheduleTimer(Protocol):
    """What fires schedules on AWS: one EventBridge Scheduler schedule per schedule."""

    def create(self, schedule: Schedule, now: datetime) -> None:
        """Create the Scheduler schedule of ``schedule`` (its window as of ``now``)."""

    def update(self, schedule: Schedule, now: datetime) -> None:
        """Bring the Scheduler schedule in line with ``schedule`` (expression, zone, state,
        window as of ``now``)."""

    def set_moved_firing(self, schedule: Schedule, at: datetime | None) -> None:
        """Keep the one-time Scheduler schedule of ``schedule``'s next firing moved out of a DST
        gap (Scheduler skips those) at ``at``; None removes it (nothing to do if it is gone)."""

    def defer_firing(self, schedule: Schedule, scheduled_for: datetime, at: datetime) -> None:
        """Deliver the firing of ``schedule`` at ``scheduled_for`` again at ``at`` (a one-time
        Scheduler schedule; a second deferral of the same firing moves it)."""

    def delete(self, schedule_id: str) -> None:
        """Remove it and its one-time companion (nothing to do if they are gone)."""


class Mailer(Protocol):
    """Sends a short text mail."""

    def send(self, sender: str, to: Sequence[str], subject: str, text: str) -> None:
        """Send it to every address of ``to``."""
