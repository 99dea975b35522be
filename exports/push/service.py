"""The push channel's services: stream tickets, the WebSocket routes, and the stream consumer's
delivery of task events to the connections that follow them (docs/push.md)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from exports.core.clock import utc_now
from exports.core.config.push import Push
from exports.core.config.settings import PushSettings
from exports.core.download_links import download_link
from exports.core.errors import ExportsError, InvalidRequest
from exports.core.ids import is_task_id
from exports.core.ports import BusinessMetrics, ResultStore
from exports.core.task import Task
from exports.export_types.registry import ExportTypeRegistry
from exports.push import protocol
from exports.push.model import (
    ConnectionGone,
    Refused,
    Subscription,
    TaskChange,
    Viewer,
    coalesce,
    current_event_type,
    task_event,
)
from exports.push.ports import ConnectionStore, Poster, TaskVersions, TicketStore, TokenVerifier

if TYPE_CHECKING:
    from exports.audit.service import AuditDependencies

logger = logging.getLogger(__name__)


@dataclass
class PushDependencies:
    """What the WebSocket routes and the stream consumer use."""

    settings: PushSettings
    connections: ConnectionStore
    tickets: TicketStore
    tasks: TaskVersions
    poster: Poster
    results: ResultStore
    registry: ExportTypeRegistry
    metrics: BusinessMetrics
    verifier: TokenVerifier | None = None
    clock: Callable[[], datetime] = field(default=utc_now)
    # The audit trail: the download links completed events carry (None: not recorded).
    audit: AuditDependencies | None = None


@dataclass(frozen=True)
class StreamTicket:
    """The answer to ``POST /v1/stream-tickets``."""

    ticket: str
    url: str
    expires_in: int


def issue_ticket(viewer: Viewer, tickets: TicketStore, url: str, now: datetime) -> StreamTicket:
    """A new single-use ticket of ``viewer``, valid ``Push.TICKET_TTL_SEC``."""
    ticket = secrets.token_urlsafe(32)
    tickets.issue(ticket, viewer, now, Push.TICKET_TTL_SEC)
    return StreamTicket(ticket=ticket, url=url, expires_in=Push.TICKET_TTL_SEC)


def may_see(task: Task, viewer: Viewer, registry: ExportTypeRegistry, now: datetime) -> bool:
    """Whether ``viewer`` owns ``task``: the same user, the task within its retention, and the
    values its export type binds from the viewer's token those the task was submitted with
    (another tenant of the same user sees nothing)."""
    if task.user_id != viewer.user_id or task.expires_at <= now:
        return False
    if not task.caller:
        return True
    caller = viewer.caller()
    try:
        return registry.get(task.export_type, caller).bind_caller(caller) == task.caller
    except ExportsError:
        return False


def connect(connection_id: str, subprotocols: str | None, deps: PushDependencies) -> Viewer:
    """Open a connection for the credential the client offers in ``Sec-WebSocket-Protocol``
    beside ``exports.v1``: a ticket (used up now) or a JWT. :class:`Refused` otherwise."""
    offered = protocol.credential(subprotocols)
    if offered is None:
        raise Refused("offer exports.v1 and a ticket.<ticket> or bearer.<jwt> subprotocol")
    kind, value = offered
    if kind == "ticket":
        viewer = deps.tickets.redeem(value, deps.clock())
        if viewer is None:
            raise Refused("the ticket is unknown, used or expired")
    elif deps.verifier is None:
        raise Refused("this deployment accepts tickets only")
    else:
        viewer = deps.verifier.verify(value)
    deps.connections.open(connection_id, viewer, deps.clock())
    return viewer


def disconnect(connection_id: str, deps: PushDependencies) -> None:
    """Forget the connection and what it followed."""
    deps.connections.close(connection_id)


def receive(connection_id: str, body: str | None, deps: PushDependencies) -> None:
    """Answer one client message (posted back on the connection)."""
    viewer = deps.connections.viewer(connection_id)
    if viewer is None:
        # $disconnect ran already, or the items expired: nothing to answer for.
        return
    try:
        message = protocol.parse_message(body)
    except InvalidRequest as error:
        _post(connection_id, protocol.error(error.code, error.message, field=error.details.get("field")), deps)
        return
    if isinstance(message, protocol.Ping):
        _post(connection_id, protocol.pong(), deps)
    elif isinstance(message, protocol.Unsubscribe):
        deps.connections.unsubscribe(connection_id, message.task_id)
        _post(connection_id, protocol.unsubscribed(message.task_id, message.all), deps)
    else:
        subscribe(connection_id, viewer, message.task_id, deps)


def subscribe(connection_id: str, viewer: Viewer, task_id: str | None, deps: PushDependencies) -> None:
    """Follow one task (its current state is sent first, after the acknowledgement) or all of
    the viewer's tasks. A task the viewer may not see is answered ``TASK_NOT_FOUND``, as GET
    answers it. The subscription is stored before the state is read, so no write between the
    two is missed (an event older than the state is dropped by its ``seq``)."""
    now = deps.clock()
    if task_id is None:
        deps.connections.subscribe(Subscription(connection_id, viewer, None), now)
        _post(connection_id, protocol.subscribed(None, True), deps)
        return
    found = deps.tasks.get(task_id) if is_task_id(task_id) else None
    if found is None or not may_see(found[0], viewer, deps.registry, now):
        _post(connection_id, protocol.error("TASK_NOT_FOUND", f"export task {task_id} not found", task_id), deps)
        return
    deps.connections.subscribe(Subscription(connection_id, viewer, task_id), now)
    _post(connection_id, protocol.subscribed(task_id, False), deps)
    task, seq = deps.tasks.get(task_id) or found
    _post(connection_id, _event(current_event_type(task), task, seq, now, deps), deps)


def deliver(change: TaskChange, event_type: str, deps: PushDependencies) -> int:
    """Send the event of ``change`` to every connection that follows its task and may see it
    (once per connection); a connection found gone is forgotten. Returns how many got it."""
    subscriptions = deps.connections.subscribers(change.task)
    if not subscriptions:
        return 0
    now = deps.clock()
    event: dict[str, Any] | None = None
    sent: set[str] = set()
    for subscription in subscriptions:
        if subscription.connection_id in sent or not may_see(change.task, subscription.viewer, deps.registry, now):
            continue
        # One link per event, for every connection of its owner.
        event = event or _event(event_type, change.task, change.seq, change.at, deps)
        sent.add(subscription.connection_id)
        try:
            deps.poster.post(subscription.connection_id, event)
        except ConnectionGone:
            logger.info("connection gone", extra={"connection_id": subscription.connection_id})
            deps.connections.close(subscription.connection_id)
            sent.discard(subscription.connection_id)
    return len(sent)


def _event(event_type: str, task: Task, seq: int, at: datetime, deps: PushDependencies) -> dict[str, Any]:
    """The event, with a fresh download link when the task is COMPLETED (as GET has it), that
    link recorded in the audit trail before it is sent: only the task's owner may see the event,
    so the link is theirs. Each link minted is its own record (a change the stream delivers again
    is sent with a new link), told apart by when it stops working."""
    if task.has_file:
        url, expires_at = download_link(task, deps)
        if deps.audit is not None:
            from exports.audit.service import record_link

            minted = f"push-{expires_at.isoformat()}"
            record_link(task, task.user_id, minted, expires_at, False, deps.audit, {"via": "push"})
        return task_event(event_type, task, seq, at, url, expires_at)
    return task_event(event_type, task, seq, at)


def _post(connection_id: str, message: dict[str, Any], deps: PushDependencies) -> None:
    """Answer on the connection; one gone meanwhile is forgotten."""
    try:
        deps.poster.post(connection_id, message)
    except ConnectionGone:
        deps.connections.close(connection_id)


def worth_sending(changes: Sequence[TaskChange]) -> list[tuple[int, str]]:
    """The positions of the changes that make an event, with the event's type (see
    :func:`exports.push.model.coalesce`)."""
    return [(index, str(changes[index].event_type)) for index in coalesce(changes)]
