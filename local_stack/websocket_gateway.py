"""Local mode's WebSocket API: plays API Gateway's WebSocket events (``$connect``,
``$disconnect``, the client's messages) to the same Lambda handler the WebSocket API invokes, and
API Gateway's management API (``POST /@connections/{id}``, ``GoneException``) to the push
function's boto3 client, on 127.0.0.1 (docs/push.md, "Local mode")."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request as WsRequest
from websockets.http11 import Response as WsResponse
from websockets.sync.server import ServerConnection, serve
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from exports.config import Push
from local_stack.lambda_context import LocalLambdaContext

logger = logging.getLogger("local_stack.websocket")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# The routes the CDK app gives the WebSocket API (route selection: $request.body.action).
ROUTES = frozenset({"subscribe", "unsubscribe", "ping"})


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


class WebSocketGateway:
    """The WebSocket API (``url``) and its management API (``management_url``)."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._handler = handler
        # One event at a time, as Lambda gives an execution environment (see Gateway).
        self._one_at_a_time = threading.Lock()
        self._connections: dict[str, ServerConnection] = {}
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
        with self._one_at_a_time:
            return self._handler(event, LocalLambdaContext("exports-stream", timeout_sec=29))

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
            self._invoke(ws_event(connection_id, "$disconnect", "DISCONNECT"))
            logger.info("DISCONNECT %s", connection_id)

    def _manage(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        prefix = "/@connections/"
        connection = (
            self._connections.get(request.path.removeprefix(prefix)) if request.path.startswith(prefix) else None
        )
        if request.method != "POST" or connection is None:
            gone = Response(
                json.dumps({"__type": "GoneException", "message": "the connection is gone"}),
                status=410,
                content_type="application/json",
                headers={"x-amzn-ErrorType": "GoneException"},
            )
            return gone(environ, start_response)
        try:
            connection.send(request.get_data().decode("utf-8"))
        except ConnectionClosed:
            return Response("", status=410, headers={"x-amzn-ErrorType": "GoneException"})(environ, start_response)
        return Response("", status=200)(environ, start_response)

    def drop(self, connection_id: str) -> None:
        """Close a connection without telling the functions first (as a client that vanished)."""
        connection = self._connections.pop(connection_id, None)
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
