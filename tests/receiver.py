"""A real HTTP callback receiver on 127.0.0.1 that answers from a script and records requests."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.polling import poll_until


@dataclass
class Received:
    at: float
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Answers the n-th request with ``statuses[n]`` (the last one repeats)."""

    statuses: list[int]
    requests: list[Received] = field(default_factory=list)
    url: str = ""
    delay_sec: float = 0.0

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        return poll_until(
            lambda: self.requests, lambda requests: len(requests) >= count, timeout_sec=timeout, interval_sec=0.05
        )


@contextmanager
def receiver(statuses: list[int], delay_sec: float = 0.0) -> Iterator[Receiver]:
    script = Receiver(statuses=statuses, delay_sec=delay_sec)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            script.requests.append(
                Received(time.monotonic(), self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            time.sleep(script.delay_sec)
            status = script.statuses[min(len(script.requests), len(script.statuses)) - 1]
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    script.url = f"http://127.0.0.1:{server.server_port}/hooks/exports"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
