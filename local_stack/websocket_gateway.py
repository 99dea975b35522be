"""Local mode's WebSocket API: plays API Gateway's WebSocket events (``$connect``,
``$disconnect``, the client's messages) to the same Lambda handler the WebSocket API invokes, and
API Gateway's management API (``POST /@connections/{id}``, ``GoneException``) to the push
function's boto3 client, on 127.0.0.1 (docs/push.md, "In local mode").

No client holds up another: the function runs one event at a time, taken in the order they
came, and each connection has at most one waiting (its thread waits for the answer before it
reads the next message), so a client that floods gets a turn per round like every other; what
is posted to a connection waits in its own bounded outbox, sent by its own thread, so a client
that reads slowly or not at all stalls only itself, and is closed once its outbox is full (a
flood of 5,000 messages from one client used to time out another's connection)."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from http import HTTPStatus
from typing import Any, Final

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request as WsRequest
from websockets.http11 import Response as WsResponse
from websockets.sync.server import ServerConnection, serve
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from exports.core.config.push import Push
from local_stack.lambda_context import LocalLambdaContext

logger = logging.getLogger("local_stack.websocket")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# The routes the CDK app gives the WebSocket API (route selection: $request.body.action).
ROUTES = frozenset({"subscribe", "unsubscribe", "ping"})
# Messages posted to one connection and not sent yet: a client this far behind is closed (its
# posts then answer GoneException, as for any connection gone).
MAX_UNSENT_MESSAGES: Final = 1000


def ws_event(
    connection_id: str, route: str, event_type: str, headers: dict[str, str] | None = None, body: str | None = None
) -> dict[str, Any]:
    """The event API Gateway's WebSocket API gives a Lambda integration."""
    now = time.time()
    event: dict[str, Any] = {
        "requestContext": {
            "routeKey": route,
            "eventType": event_type,
            "connectionId": connection_id,
            "messageDirection": "IN",
            "requestId": str(uuid.uuid4()),
            "domainName": "127.0.0.1",
            "stage": "local",
            "apiId": "local",
            "requestTimeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if headers is not None:
        event["headers"] = headers
    if body is not None:
        event["body"] = body
    return event


def route_of(body: str) -> str:
    """The route API Gateway selects for a message by its ``action`` (else ``$default``)."""
    try:
        action = json.loads(body).get("action")
    except (ValueError, AttributeError):
        return "$default"
    return action if isinstance(action, str) and action in ROUTES else "$default"


class _Environment:
    """The function's execution environment: one event at a time, as Lambda gives one (the
    function keeps per-event state in module globals), in the order the events came."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._events: queue.SimpleQueue[tuple[dict[str, Any], Future[dict[str, Any]]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ws-function", daemon=True)
        self._thread.start()

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """The handler's answer to ``event``, after the events that came before it."""
        answer: Future[dict[str, Any]] = Future()
        self._events.put((event, answer))
        return answer.result()

    def _run(self) -> None:
        while (item := self._events.get()) is not None:
            event, answer = item
            try:
                answer.set_result(self._handler(event, LocalLambdaContext("exports-stream", timeout_sec=29)))
            except BaseException as error:  # the caller's, as an exception of its own invocation
                answer.set_exception(error)

    def stop(self) -> None:
        """End the environment's thread once the events before it are done."""
        self._events.put(None)


class _Outbox:
    """What was posted to one connection, sent by a thread of its own."""

    def __init__(self, connection: ServerConnection) -> None:
        self._connection = connection
        self._messages: queue.Queue[str | None] = queue.Queue(maxsize=MAX_UNSENT_MESSAGES)
        threading.Thread(target=self._send, name="ws-outbox", daemon=True).start()

    def post(self, message: str) -> bool:
        """Queue ``message``; False (and the connection closed) when the client is too far behind."""
        try:
            self._messages.put_nowait(message)
        except queue.Full:
            logger.warning("closing a connection %d messages behind", MAX_UNSENT_MESSAGES)
            # Shut down first: it wakes the outbox's thread, blocked in a send that holds the
            # connection's lock, which close_socket() waits for.
            with contextlib.suppress(OSError):
                self._connection.socket.shutdown(socket.SHUT_RDWR)
            self._connection.close_socket()
            return False
        return True

    def close(self) -> None:
        """Stop sending (a full outbox's thread stops at its next send, to the closed socket)."""
        with contextlib.suppress(queue.Full):
            self._messages.put_nowait(None)

    def _send(self) -> None:
        while (message := self._messages.get()) is not None:
            try:
                self._connection.send(message)
            except (ConnectionClosed, OSError):
                return


class WebSocketGateway:
    """The WebSocket API (``url``) and its management API (``management_url``)."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._environment = _Environment(handler)
        self._connections: dict[str, ServerConnection] = {}
        self._outboxes: dict[str, _Outbox] = {}
        self._ids: dict[int, str] = {}
        self._server = serve(
            self._serve,
            host,
            port,
            process_request=self._connect,
            select_subprotocol=self._select,
            compression=None,
        )
        self.url = f"ws://{host}:{self._server.socket.getsockname()[1]}/"
        self._management: BaseWSGIServer = make_server(host, 0, self._manage, threaded=True)
        self.management_url = f"http://{host}:{self._management.server_port}"
        self._threads: list[threading.Thread] = []

    def _invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._environment.invoke(event)

    def _connect(self, connection: ServerConnection, request: WsRequest) -> WsResponse | None:
        connection_id = uuid.uuid4().hex[:16]
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        result = self._invoke(ws_event(connection_id, "$connect", "CONNECT", headers=headers))
        status = int(result.get("statusCode", 500))
        logger.info("CONNECT %s %s", connection_id, status)
        if status != HTTPStatus.OK:
            return connection.respond(HTTPStatus(status), f"{HTTPStatus(status).phrase}\n")
        self._ids[id(connection)] = connection_id
        self._connections[connection_id] = connection
        self._outboxes[connection_id] = _Outbox(connection)
        return None

    @staticmethod
    def _select(connection: ServerConnection, offered: Any) -> Any:
        return Push.SUBPROTOCOL if Push.SUBPROTOCOL in offered else None

    def _serve(self, connection: ServerConnection) -> None:
        connection_id = self._ids.pop(id(connection))
        try:
            for message in connection:
                body = message if isinstance(message, str) else message.decode("utf-8", "replace")
                self._invoke(ws_event(connection_id, route_of(body), "MESSAGE", body=body))
        except ConnectionClosed:
            pass
        finally:
            self._connections.pop(connection_id, None)
            outbox = self._outboxes.pop(connection_id, None)
            if outbox is not None:
                outbox.close()
            self._invoke(ws_event(connection_id, "$disconnect", "DISCONNECT"))
            logger.info("DISCONNECT %s", connection_id)

    def _manage(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        prefix = "/@connections/"
        outbox = self._outboxes.get(request.path.removeprefix(prefix)) if request.path.startswith(prefix) else None
        if request.method != "POST" or outbox is None or not outbox.post(request.get_data().decode("utf-8")):
            gone = Response(
                json.dumps({"__type": "GoneException", "message": "the connection is gone"}),
                status=410,
                content_type="application/json",
                headers={"x-amzn-ErrorType": "GoneException"},
            )
            return gone(environ, start_response)
        return Response("", status=200)(environ, start_response)

    def drop(self, connection_id: str) -> None:
        """Close a connection without telling the functions first (as a client that vanished)."""
        connection = self._connections.pop(connection_id, None)
        outbox = self._outboxes.pop(connection_id, None)
        if outbox is not None:
            outbox.close()
        if connection is not None:
            connection.close_socket()

    def start(self) -> None:
        """Serve both APIs on daemon threads."""
        for target, name in (
            (self._server.serve_forever, "websocket"),
            (self._management.serve_forever, "ws-management"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def shutdown(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._management.shutdown()
        self._management.server_close()
        self._environment.stop()
