"""The outside things the push channel talks to."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from exports.core.task import Task
from exports.push.model import Subscription, Viewer


class ConnectionStore(Protocol):
    """Open connections, their viewers and subscriptions (each expiring with the connection)."""

    def open(self, connection_id: str, viewer: Viewer, now: datetime) -> None:
        """Record a new connection of ``viewer``."""
        ...

    def viewer(self, connection_id: str) -> Viewer | None:
        """Whose connection this is; None when it is not (or no longer) open."""
        ...

    def subscribe(self, subscription: Subscription, now: datetime) -> None:
        """Record a subscription of an open connection."""
        ...

    def unsubscribe(self, connection_id: str, task_id: str | None) -> None:
        """Drop one subscription (``task_id`` None: the all-tasks one)."""
        ...

    def close(self, connection_id: str) -> None:
        """Forget the connection and every subscription of it."""
        ...

    def subscribers(self, task: Task) -> list[Subscription]:
        """The subscriptions that ask for ``task``'s events: to it, and to all of its owner's
        tasks (not yet checked against the task's tenancy-bound values)."""
        ...


class TicketStore(Protocol):
    """Single-use stream tickets."""

    def issue(self, ticket: str, viewer: Viewer, now: datetime, ttl_sec: int) -> None:
        """Store a new ticket of ``viewer``, valid ``ttl_sec``."""
        ...

    def redeem(self, ticket: str, now: datetime) -> Viewer | None:
        """The ticket's viewer, the ticket used up; None for an unknown, used or expired one."""
        ...


class Poster(Protocol):
    """Messages to open connections (API Gateway's management API)."""

    def post(self, connection_id: str, message: Mapping[str, Any]) -> None:
        """Send ``message`` as a JSON text frame; :class:`exports.push.model.ConnectionGone`
        when the connection no longer exists."""
        ...


class TokenVerifier(Protocol):
    """Verifies a JWT passed as a ``bearer.<jwt>`` subprotocol."""

    def verify(self, token: str) -> Viewer:
        """The token's viewer; :class:`exports.push.model.Refused` when it is not valid."""
        ...


class TaskVersions(Protocol):
    """A task with its write counter (the ``seq`` of its current state)."""

    def get(self, task_id: str) -> tuple[Task, int] | None:
        """The task and its write counter; None when there is no such task."""
        ...
