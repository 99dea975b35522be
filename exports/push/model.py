"""What the push channel is made of, without any AWS: who is watching, what changed, which event
that is, and the rate limit of progress events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from exports.core.caller import Caller
from exports.core.deliveries import change_event_type
from exports.core.errors import ExportsError
from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.finishing.webhooks.payload import PROGRESS_EVENT, PUSH_EVENT_TYPES, event_body


class PushError(Exception):
    """Base of the push channel's own errors."""


class Refused(PushError):
    """A connection without a valid credential (missing, unknown, expired or used ticket; a bad JWT)."""


class ConnectionGone(PushError):
    """The WebSocket connection no longer exists (API Gateway's GoneException)."""


class PushNotAvailable(ExportsError):
    """This deployment has no push channel (404 to ``POST /v1/stream-tickets``): poll instead."""

    code = "PUSH_NOT_AVAILABLE"


@dataclass(frozen=True)
class Viewer:
    """Who a connection belongs to: the verified user id and the claims of their token, as the
    ticket (or the JWT) carried them."""

    user_id: str
    claims: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, caller: Caller) -> Viewer:
        """The viewer of a verified HTTP caller."""
        return cls(caller.user_id, dict(caller.claims))

    def caller(self) -> Caller:
        """The viewer as the services' caller (tenancy-bound values are bound from it)."""
        return Caller(self.user_id, dict(self.claims))


@dataclass(frozen=True)
class Subscription:
    """A connection following one task (``task_id``) or all of its viewer's tasks (None)."""

    connection_id: str
    viewer: Viewer
    task_id: str | None = None


@dataclass(frozen=True)
class TaskChange:
    """One write of a task item, as its stream record shows it: the task after the write, the
    task before (None for a new item), the item's write counter, and when the write happened."""

    task: Task
    seq: int
    at: datetime
    before: Task | None = None

    @property
    def event_type(self) -> str | None:
        """The event this write is for watchers: a status change, a progress step, or nothing
        (a write of the callbacks' state or the workflow token changes nothing a watcher sees)."""
        if self.before is None or self.before.status is not self.task.status:
            return PUSH_EVENT_TYPES[self.task.status]
        if delivered := change_event_type(self.before.deliveries, self.task.deliveries):
            return delivered
        moved = (self.before.rows_written, self.before.progress) != (self.task.rows_written, self.task.progress)
        return PROGRESS_EVENT if moved and self.task.status is TaskStatus.RUNNING else None


def coalesce(changes: Sequence[TaskChange]) -> list[int]:
    """The positions of the changes worth an event, in order: every status change, and of a
    task's progress steps only those that no later change of the same task in ``changes``
    supersedes. The stream mapping hands over about a second of writes at a time, so a task sends
    at most about one progress event a second, however many partitions write its progress."""
    last = {change.task.task_id: index for index, change in enumerate(changes) if change.event_type}
    return [
        index
        for index, change in enumerate(changes)
        if change.event_type is not None and (change.event_type != PROGRESS_EVENT or last[change.task.task_id] == index)
    ]


def task_event(
    event_type: str,
    task: Task,
    seq: int,
    at: datetime,
    download_url: str | None = None,
    download_expires_at: datetime | None = None,
) -> dict[str, Any]:
    """An event of the push channel: the webhook's body (``type``, ``timestamp``, ``data`` as GET
    shows the task) with the task's ``seq``."""
    return {**event_body(event_type, task, at, download_url, download_expires_at), "seq": seq}


def current_event_type(task: Task) -> str:
    """The type of the event that shows a task's current state (sent first on every subscribe):
    a RUNNING task that has written rows is a progress step."""
    if task.status is TaskStatus.RUNNING and task.rows_written:
        return PROGRESS_EVENT
    return PUSH_EVENT_TYPES[task.status]
