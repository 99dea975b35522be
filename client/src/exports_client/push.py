"""Following a task over the service's push channel (a WebSocket, docs/push.md) instead of
polling: a single-use ticket from ``POST /v1/stream-tickets``, then ``subscribe``; the service
sends the task's current state first and then every change, each with a ``seq`` (older ones are
dropped). A dropped connection is opened again with a new ticket and subscribed again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from websockets.exceptions import InvalidHandshake, WebSocketException
from websockets.sync.client import connect

from exports_client.models import TaskView

SUBPROTOCOL: Final = "exports.v1"
# How often a connection that keeps dropping is opened again before falling back to polling.
MAX_RECONNECTS: Final = 5
_OPEN_TIMEOUT_SEC: Final = 10.0


class PushUnavailable(Exception):
    """The push channel cannot be used (none offered, refused, or kept dropping): poll."""


def follow(
    task_id: str,
    ticket: Callable[[], tuple[str, str] | None],
    deadline: float,
    clock: Callable[[], float],
    on_update: Callable[[TaskView], None] | None = None,
) -> TaskView | None:
    """The task once it ended, following it over the push channel; when ``deadline`` (on
    ``clock``) passed first, the last state seen (None if none was). ``ticket`` gives a fresh
    ``(url, ticket)``, or None when the service offers no push channel. :class:`PushUnavailable`
    when it cannot be used."""
    last_seq = -1
    last: TaskView | None = None
    reconnects = 0
    while True:
        given = ticket()
        if given is None:
            raise PushUnavailable("the service offers no push channel")
        url, value = given
        try:
            with connect(url, subprotocols=[SUBPROTOCOL, f"ticket.{value}"], open_timeout=_OPEN_TIMEOUT_SEC) as socket:  # type: ignore[list-item]
                socket.send(json.dumps({"action": "subscribe", "task_id": task_id}))
                while True:
                    remaining = deadline - clock()
                    if remaining <= 0:
                        return last
                    try:
                        message = json.loads(socket.recv(timeout=remaining))
                    except TimeoutError:
                        return last
                    if message.get("type") == "error":
                        raise PushUnavailable(str(message.get("error")))
                    if not str(message.get("type", "")).startswith("export.") or message["seq"] <= last_seq:
                        continue
                    last_seq = message["seq"]
                    last = TaskView.model_validate(message["data"])
                    if on_update is not None:
                        on_update(last)
                    if last.is_terminal:
                        return last
        except InvalidHandshake as refused:
            raise PushUnavailable(f"the push channel refused the connection: {refused}") from refused
        except (WebSocketException, OSError) as dropped:
            reconnects += 1
            if reconnects > MAX_RECONNECTS:
                raise PushUnavailable(f"the push channel kept dropping: {dropped}") from dropped
