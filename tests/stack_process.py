"""`make run`'s stack as a separate process on free ports, for tests that drive it over real HTTP.

Shared by the end-to-end suites: start it with :func:`running_stack` (a context manager) from a
module- or session-scoped fixture.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from local_stack.embedded_aws import client as embedded_aws_client

ROOT = Path(__file__).resolve().parents[1]
# The declaration the suites written for the DynamoDB demo types run with (their slow reads keep
# tasks running long enough to act on them); postgres=True runs make run's own exports.toml.
# Set to "1": the test session leaves moto as it ships (tests/conftest.py installs local_stack's
# speed-ups otherwise).
SPEED_UPS_OFF = "EXPORTS_TEST_SPEED_UPS_OFF"
DYNAMODB_DEMO = ROOT / "tests" / "declarations" / "dynamodb_demo.toml"
# alice, bob and carol are local-users.toml's (tenants acme, globex and initech; carol is in the
# admin group); dave is in no users file, so his token carries no claim but sub.
TOKENS: Mapping[str, str] = {"alice": "alice-token", "bob": "bob-token", "carol": "carol-token", "dave": "dave-token"}
# The signing secret of the stacks that tests verify callbacks of.
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# Generous: stacks of several test workers may start at once on two cores.
READY_TIMEOUT_SEC = 180
# The banner's last line.
READY_LINE = "Ctrl-C stops everything"
STOP_TIMEOUT_SEC = 30


def recent(days_ago: int) -> str:
    """A day inside the stack's demo orders (the last 90 days), as YYYY-MM-DD."""
    return (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()


def slow_filters(variant: int) -> dict[str, str]:
    """Orders filters for an export that runs for seconds (the worker reads a year, day by day).

    For tests that need a task that has not ended yet: they act on it right after submitting.
    Distinct ``variant``s give distinct requests, since an identical active export is not
    submitted twice (the service answers with the existing task).
    """
    return {"date_from": recent(365 + variant), "date_to": recent(variant)}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Stack:
    """A running local stack: its API, its embedded AWS and the process."""

    url: str
    aws_url: str
    process: subprocess.Popen
    log_path: Path
    database_uri: str
    tokens: Mapping[str, str] = field(default_factory=lambda: dict(TOKENS))

    def output(self) -> str:
        """Everything the stack printed so far (banner and request log)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def headers(self, user: str = "alice") -> dict[str, str]:
        """The Authorization header of ``user``."""
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    def client(self, service: str) -> Any:
        """A boto3 client of the stack's embedded AWS."""
        return embedded_aws_client(service, self.aws_url)


def _wait_until_ready(stack: Stack) -> None:
    """Until the API answers and the banner is printed (in that order: the API is up first)."""
    deadline = time.monotonic() + READY_TIMEOUT_SEC
    while True:
        try:
            if READY_LINE in stack.output() and requests.get(f"{stack.url}/openapi.json", timeout=5).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or too busy starting to answer
            pass
        if stack.process.poll() is not None or time.monotonic() > deadline:
            stack.process.kill()
            stack.process.wait()
            pytest.fail(f"local stack did not start:\n{stack.output()}")
        time.sleep(0.2)


@contextmanager
def running_stack(
    demo_orders: int = 1000, environment: Mapping[str, str] | None = None, postgres: bool = False
) -> Iterator[Stack]:
    """Start ``python -m local_stack`` on free ports, wait until it answers, stop it with SIGINT after.

    With ``postgres`` it serves the repository's exports.toml (the demo types on its embedded
    PostgreSQL, ``demo_orders`` orders there); otherwise the DynamoDB demo types, with
    ``demo_orders`` orders in the embedded DynamoDB. Each stack has its own PostgreSQL data
    directory. Its output goes to a file, not a pipe: a pipe nobody reads fills up and blocks it.
    """
    port, aws_port = free_port(), free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "EXPORTS_AWS_PORT": str(aws_port),
        "EXPORTS_LOCAL_TOKENS": ",".join(f"{token}={user}" for user, token in TOKENS.items()),
        "PYTHONUNBUFFERED": "1",
    }
    # The database the stack's types do not read gets a token amount: seeding moto costs ~4 ms an item.
    if postgres:
        env.pop("EXPORTS_CONFIG", None)
        # orders_dynamodb's type still reads the DynamoDB demo table.
        env.update({"EXPORTS_DEMO_ORDERS": str(demo_orders), "EXPORTS_DEMO_DYNAMODB_ORDERS": "200"})
    else:
        env.update(
            {
                "EXPORTS_CONFIG": str(DYNAMODB_DEMO),
                "EXPORTS_DEMO_ORDERS": "100",
                "EXPORTS_DEMO_DYNAMODB_ORDERS": str(demo_orders),
                # No DynamoDB-backed test exports customers: a few.
                "EXPORTS_DEMO_DYNAMODB_CUSTOMERS": "100",
            }
        )
    env.update(environment or {})
    env.pop("AWS_ENDPOINT_URL", None)
    with tempfile.TemporaryDirectory(prefix="exports-stack-") as folder:
        env["EXPORTS_POSTGRES_DIR"] = str(Path(folder) / "pg")
        database_uri = f"postgresql://postgres@/shop?host={Path(folder) / 'pg'}"
        log_path = Path(folder) / "stack.log"
        with log_path.open("w", encoding="utf-8") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "local_stack"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        stack = Stack(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{aws_port}", process, log_path, database_uri)
        try:
            _wait_until_ready(stack)
            yield stack
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=STOP_TIMEOUT_SEC)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
