"""In-memory stand-ins for the schedule ports (tests/contract/test_schedule_contracts.py holds
them to the adapters' behaviour)."""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from exports.core.errors import ConditionFailed, InvalidRequest
from exports.finishing.ports import Attachment
from exports.schedules.dynamodb_schedules import FIRING_LEASE
from exports.schedules.model import SCHEDULE_ID_PATTERN, Schedule
from exports.schedules.ports import FiringClaim, ScheduleLimitReached, SchedulePage


@dataclass
class _Firing:
    state: str
    token: str
    lease_until: datetime
    task_id: str | None = None


class FakeScheduleStore:
    """:class:`exports.schedules.ports.ScheduleStore` in memory (thread-safe, conditional)."""

    def __init__(self) -> None:
        self.schedules: dict[str, Schedule] = {}
        self.firings: dict[tuple[str, datetime], _Firing] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def create(self, schedule: Schedule, max_per_user: int) -> None:
        with self._lock:
            if self.counts.get(schedule.user_id, 0) >= max_per_user:
                raise ScheduleLimitReached(max_per_user)
            if schedule.schedule_id in self.schedules:
                raise ConditionFailed(f"schedule {schedule.schedule_id} exists")
            self.schedules[schedule.schedule_id] = schedule
            self.counts[schedule.user_id] = self.counts.get(schedule.user_id, 0) + 1

    def get(self, schedule_id: str) -> Schedule | None:
        return self.schedules.get(schedule_id)

    def list_for_user(self, user_id: str, limit: int, cursor: str | None) -> SchedulePage:
        if cursor is not None and not re.fullmatch(SCHEDULE_ID_PATTERN, cursor):
            raise InvalidRequest("next_token is not valid", field="next_token")
        mine = sorted(
            (s for s in self.schedules.values() if s.user_id == user_id and (cursor is None or s.schedule_id < cursor)),
            key=lambda s: s.schedule_id,
            reverse=True,
        )
        page = mine[:limit]
        more = len(mine) > limit
        return SchedulePage(page, page[-1].schedule_id if more and page else None)

    def replace(self, before: Schedule, after: Schedule) -> Schedule:
        with self._lock:
            stored = self.schedules.get(before.schedule_id)
            if stored is None or stored.version != before.version:
                raise ConditionFailed(f"schedule {before.schedule_id} changed meanwhile")
            written = after.model_copy(update={"version": before.version + 1})
            self.schedules[before.schedule_id] = written
            return written

    def delete(self, schedule: Schedule) -> None:
        with self._lock:
            if self.schedules.pop(schedule.schedule_id, None) is not None:
                self.counts[schedule.user_id] -= 1

    def claim_firing(self, schedule_id: str, scheduled_for: datetime, now: datetime) -> FiringClaim:
        with self._lock:
            key = (schedule_id, scheduled_for)
            held = self.firings.get(key)
            if held is None or held.state == "released" or (held.state == "claimed" and held.lease_until < now):
                token = secrets.token_hex(8)
                self.firings[key] = _Firing("claimed", token, now + FIRING_LEASE)
                return FiringClaim(won=True, token=token)
            return FiringClaim(won=False, token=held.token, task_id=held.task_id)

    def finish_firing(self, schedule_id: str, scheduled_for: datetime, token: str, task_id: str | None) -> None:
        with self._lock:
            held = self.firings.get((schedule_id, scheduled_for))
            if held is None or held.token != token:
                raise ConditionFailed("the firing's claim was taken over")
            held.state, held.task_id = "done", task_id

    def release_firing(self, schedule_id: str, scheduled_for: datetime, token: str) -> None:
        with self._lock:
            held = self.firings.get((schedule_id, scheduled_for))
            if held is not None and held.token == token and held.state == "claimed":
                held.state = "released"


@dataclass
class FakeTimer:
    """:class:`exports.schedules.ports.ScheduleTimer` that records what it was told."""

    schedules: dict[str, Schedule] = field(default_factory=dict)
    # Per schedule id: the instant of its one-time schedule for a firing moved out of a DST gap.
    moved: dict[str, datetime] = field(default_factory=dict)
    # (schedule id, firing time) -> when its retry is due, for firings refused for capacity.
    deferred: dict[tuple[str, datetime], datetime] = field(default_factory=dict)
    fail: bool = False

    def create(self, schedule: Schedule, now: datetime) -> None:
        self._check()
        self.schedules[schedule.schedule_id] = schedule

    def update(self, schedule: Schedule, now: datetime) -> None:
        self._check()
        self.schedules[schedule.schedule_id] = schedule

    def set_moved_firing(self, schedule: Schedule, at: datetime | None) -> None:
        self._check()
        if at is None:
            self.moved.pop(schedule.schedule_id, None)
        else:
            self.moved[schedule.schedule_id] = at

    def defer_firing(self, schedule: Schedule, scheduled_for: datetime, at: datetime) -> None:
        self._check()
        self.deferred[(schedule.schedule_id, scheduled_for)] = at

    def delete(self, schedule_id: str) -> None:
        self._check()
        self.schedules.pop(schedule_id, None)
        self.moved.pop(schedule_id, None)

    def _check(self) -> None:
        if self.fail:
            from exports.core.errors import RetryableError

            raise RetryableError("scheduler: ThrottlingException")


@dataclass
class FakeMailer:
    """:class:`exports.finishing.ports.Mailer` that keeps the messages."""

    sent: list[tuple[str, tuple[str, ...], str, str]] = field(default_factory=list)
    attachments: list[Attachment | None] = field(default_factory=list)

    def send(
        self, sender: str, to: Sequence[str], subject: str, text: str, attachment: Attachment | None = None
    ) -> None:
        self.sent.append((sender, tuple(to), subject, text))
        self.attachments.append(attachment)
