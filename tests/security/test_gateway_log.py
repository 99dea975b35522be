"""The local gateway's access log: a request path cannot forge log lines or drive the terminal."""

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.gateway import Gateway, printable
from local_stack.local_users import LocalUser


def _answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"statusCode": 404, "headers": {"content-type": "application/json"}, "body": "{}"}


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    import threading

    served = Gateway(_answer, {"t": LocalUser("alice", {})}, port=0)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    thread.join(5)


def raw_request(gateway: Gateway, target: str) -> None:
    """Send the request line as it is (a client library would re-encode the path)."""
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n".encode())
        connection.recv(65536)


@pytest.mark.parametrize(
    ("target", "logged"),
    [
        ("/v1/exports/x%0d%0a12:00:00%20INFO%20forged", "/v1/exports/x\\x0d\\x0a12:00:00 INFO forged"),
        ("/v1/%1b[31mred%1b[0m", "/v1/\\x1b[31mred\\x1b[0m"),
        ("/v1/a%E2%80%A8b", "/v1/a\\u2028b"),
        ("/v1/back%5Cx0aslash", "/v1/back\\\\x0aslash"),
    ],
    ids=["CRLF", "ANSI escapes", "a line separator", "a backslash that looks like an escape"],
)
def test_the_access_log_escapes_what_would_forge_a_line(
    gateway: Gateway, caplog: pytest.LogCaptureFixture, target: str, logged: str
) -> None:
    with caplog.at_level(logging.INFO, logger="local_stack.gateway"):
        raw_request(gateway, target)

    lines = [record.getMessage() for record in caplog.records if record.name == "local_stack.gateway"]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"GET {logged} 404 "), lines[0]
    assert all(character.isprintable() for character in lines[0]), lines[0]


def test_printable_text_is_left_as_it_is() -> None:
    assert printable("/v1/exports/exp_01J?limit=5&名前=é") == "/v1/exports/exp_01J?limit=5&名前=é"
