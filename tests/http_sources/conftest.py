"""A real HTTP service on 127.0.0.1 whose answers each test scripts, and declarations of HTTP
types over it: the reader talks to a socket, never to a mock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from exports.core.aws.clients import ClientFactory
from exports.core.export_type import AnyExportType
from exports.export_types.build import build_export_types
from exports.export_types.loader import load_declarations
from exports.sources.kind import SourceReaders
from local_stack.demo_api import json_bytes


@dataclass(frozen=True)
class Asked:
    """One request the service received."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Answer:
    """What the service answers: a JSON document (or raw bytes), a status, headers, after a delay."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_sec: float = 0.0
    raw: bytes | None = None


Route = Callable[[Asked], Answer]


class Service:
    """A threaded HTTP server on 127.0.0.1 answering as :attr:`route` says, recording each request."""

    def __init__(self) -> None:
        self.route: Route = lambda _asked: Answer(status=404)
        self.asked: list[Asked] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            asked = Asked(parts.path, query, {key.lower(): value for key, value in self.headers.items()})
            service.asked.append(asked)
            answer = service.route(asked)
            if answer.delay_sec:
                time.sleep(answer.delay_sec)
            body = answer.raw if answer.raw is not None else json_bytes(answer.body)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    return Handler


@pytest.fixture
def service() -> Iterator[Service]:
    running = Service()
    yield running
    running.close()


def build_types(folder: Path, text: str, environ: dict[str, str] | None = None) -> dict[str, AnyExportType]:
    """The export types of the declaration ``text``, built as a deployment builds them."""
    path = folder / "exports.toml"
    path.write_text(text, encoding="utf-8")
    built = build_export_types(load_declarations(path), SourceReaders(client=ClientFactory(), environ=environ or {}))
    assert not built.left_out, built.left_out
    return {export_type.name: export_type for export_type in built.types}
