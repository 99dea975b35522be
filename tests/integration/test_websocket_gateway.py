"""Local mode's WebSocket gateway on 127.0.0.1 with a handler of the test's own: one client's
flood or one client that does not read holds up no other client."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from exports.core.config.push import Push
from local_stack.websocket_gateway import MAX_UNSENT_MESSAGES, WebSocketGateway

FLOOD = 5000
# Each event costs the function this much: the flood alone keeps it busy for 5 s.
EVENT_SEC = 0.001
# How long the quiet client may wait to connect and for its answer, flood or not.
BOUND_SEC = 1.0


class EchoFunction:
    """Answers ``$connect`` with 200 and every ``{"action": "ping"}`` with a post of ``pong`` to
    its connection through the management API, as the push function answers a ping."""

    def __init__(self) -> None:
        self.management_url = ""
        self.events = 0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events += 1
        time.sleep(EVENT_SEC)
        request = event["requestContext"]
        if request["routeKey"] == "ping":
            post(self.management_url, request["connectionId"], json.loads(event["body"])["reply"])
        return {"statusCode": 200}


def post(management_url: str, connection_id: str, message: str, timeout: float = 10) -> int:
    """POST ``message`` to the connection; the management API's status."""
    request = urllib.request.Request(f"{management_url}/@connections/{connection_id}", data=message.encode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def gateway() -> Iterator[tuple[WebSocketGateway, EchoFunction]]:
    function = EchoFunction()
    gateway = WebSocketGateway(function)
    function.management_url = gateway.management_url
    gateway.start()
    yield gateway, function
    gateway.shutdown()


def client(gateway: WebSocketGateway) -> ClientConnection:
    return connect(gateway.url, subprotocols=[Subprotocol(Push.SUBPROTOCOL)], open_timeout=BOUND_SEC)


def ping_and_wait(connection: ClientConnection, reply: str) -> str:
    connection.send(json.dumps({"action": "ping", "reply": reply}))
    answer = connection.recv(timeout=BOUND_SEC)
    return answer if isinstance(answer, str) else answer.decode()


def wait_until_still(function: EchoFunction, still_sec: float = 0.5, at_most_sec: float = 10.0) -> None:
    """Until the function has had no event for ``still_sec``."""
    deadline = time.monotonic() + at_most_sec
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        if function.events != seen:
            seen, since = function.events, time.monotonic()
        elif time.monotonic() - since >= still_sec:
            return
        time.sleep(0.05)
    raise AssertionError(f"the function was never still: {function.events} events")


def flood(connection: ClientConnection, message: str) -> None:
    """Send ``message`` FLOOD times; stop when the connection goes."""
    with contextlib.suppress(ConnectionClosed, OSError):
        for _ in range(FLOOD):
            connection.send(message)


def hang_up(connection: ClientConnection) -> None:
    """Drop the connection at once, even while a send to or from it is blocked."""
    with contextlib.suppress(OSError):
        connection.socket.shutdown(socket.SHUT_RDWR)
    connection.close_socket()


def test_a_clients_flood_does_not_keep_another_from_connecting_and_hearing_back(gateway) -> None:
    server, function = gateway
    with client(server) as noisy:
        try:
            # Pings whose answers it never reads: 20 MB of answers, more than the sockets buffer.
            ping = json.dumps({"action": "ping", "reply": "x" * 4096})
            flooding = threading.Thread(target=flood, args=(noisy, ping), daemon=True)
            flooding.start()
            wait_until_still(function)  # the flood filled every buffer on its way: no event comes now

            started = time.monotonic()
            with client(server) as quiet:
                assert ping_and_wait(quiet, "pong") == "pong"
                assert ping_and_wait(quiet, "pong again") == "pong again"
            waited = time.monotonic() - started

            assert waited < 2 * BOUND_SEC
            assert function.events < FLOOD  # the quiet client was served while the flood went on
        finally:
            hang_up(noisy)
    flooding.join(timeout=BOUND_SEC)


def test_a_client_that_does_not_read_is_closed_and_holds_up_no_post_to_another(gateway) -> None:
    server, _ = gateway
    with client(server) as deaf, client(server) as listening:  # deaf never reads
        try:
            assert ping_and_wait(listening, "hello") == "hello"
            deaf_id, listening_id = _connection_ids(server, deaf, listening)
            page = "x" * 64 * 1024
            statuses = [
                post(server.management_url, deaf_id, page, timeout=BOUND_SEC) for _ in range(MAX_UNSENT_MESSAGES * 2)
            ]

            assert statuses[0] == 200 and statuses[-1] == 410  # once too far behind, it is gone
            assert post(server.management_url, listening_id, "still here", timeout=BOUND_SEC) == 200
            assert listening.recv(timeout=BOUND_SEC) == "still here"
        finally:
            hang_up(deaf)


def _connection_ids(server: WebSocketGateway, *clients: ClientConnection) -> list[str]:
    """The gateway's connection ids of ``clients`` (matched by their local ports)."""
    by_port = {
        connection.remote_address[1]: connection_id for connection_id, connection in dict(server._connections).items()
    }
    return [by_port[each.local_address[1]] for each in clients]
