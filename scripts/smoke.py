"""`make smoke URL=... TOKEN=...`: the README walkthrough against a deployed stack, checked.

Steps, each printed with what it saw: list the export types; submit an export of the last few
days (``orders``, else ``orders_dynamodb``, unless ``--export-type``); poll it to
COMPLETED; download the file and check its sha256 against the one the service reported; submit
a second export and cancel it; and, with ``--callback-url``, submit one more whose signed
callback goes to that URL (a receiver you run, e.g. a request bin) and wait until the service
reports the callback DELIVERED. Any failed step makes the exit status 1.

Works against ``make run`` too (``--url http://127.0.0.1:8000``, the banner's token). Uses the
Python SDK of ./client (installed in .venv by the Makefile).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from exports_client import ConflictError, ExportsClient, ExportsError

# Without --export-type, the first of these the stack offers (exports.toml declares orders on
# PostgreSQL and orders_dynamodb on the demo DynamoDB table); any type whose parameters are
# date_from and date_to works.
EXPORT_TYPE_CHOICES = ("orders", "orders_dynamodb")


@dataclass
class Smoke:
    """One run: the client, what the steps learnt, and their outcomes."""

    client: ExportsClient
    callback_url: str | None
    wait_sec: float
    export_type: str | None = None
    today: date = field(default_factory=lambda: datetime.now(UTC).date())
    task_id: str = ""
    results: list[tuple[str, bool, str]] = field(default_factory=list)

    def filters(self, days: int) -> dict[str, str]:
        """The last ``days`` days (the demo data covers the last 90)."""
        return {"date_from": (self.today - timedelta(days=days)).isoformat(), "date_to": self.today.isoformat()}

    def step(self, name: str, run: Callable[[], str]) -> bool:
        """Run one step; print and keep its outcome."""
        started = time.monotonic()
        try:
            detail, passed = run(), True
        except (ExportsError, AssertionError, OSError) as error:
            detail, passed = f"{type(error).__name__}: {error}", False
        elapsed = time.monotonic() - started
        print(f"{'PASS' if passed else 'FAIL'}  {name:<24} {elapsed:6.1f} s  {detail}", flush=True)
        self.results.append((name, passed, detail))
        return passed


def export_types(smoke: Smoke) -> str:
    """GET /v1/export-types lists the export type the walkthrough uses."""
    types = {item.name: item for item in smoke.client.export_types()}
    wanted = (smoke.export_type,) if smoke.export_type else EXPORT_TYPE_CHOICES
    offered = [name for name in wanted if name in types]
    assert offered, f"none of {list(wanted)} is offered: {sorted(types)}"
    smoke.export_type = offered[0]
    return f"{len(types)} types: {', '.join(sorted(types))}; exporting {smoke.export_type}"


def submit(smoke: Smoke) -> str:
    """POST /v1/exports answers 202 with a task id."""
    accepted = smoke.client.submit(str(smoke.export_type), smoke.filters(7), format="csv")
    smoke.task_id = accepted.task_id
    return f"task {accepted.task_id} {accepted.status}"


def poll(smoke: Smoke) -> str:
    """GET /v1/exports/{id} until the task ends: it must be COMPLETED."""
    assert smoke.task_id, "no task was submitted"
    task = smoke.client.wait(smoke.task_id, timeout=smoke.wait_sec)
    assert task.status == "COMPLETED", f"ended {task.status}: {task.error}"
    return f"COMPLETED, {task.rows} rows, {task.size_bytes} bytes"


def download(smoke: Smoke) -> str:
    """GET /v1/exports/{id}/download, then the file's sha256 against the task's."""
    assert smoke.task_id, "no task was submitted"
    with tempfile.TemporaryDirectory(prefix="exports-smoke-") as folder:
        # The SDK checks the sha256 while it streams; checked again here, from the file on disk.
        path = smoke.client.download(smoke.task_id, Path(folder) / "")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        expected = smoke.client.get(smoke.task_id).sha256
        assert digest == expected, f"sha256 {digest}, the service reported {expected}"
        return f"{path.name}, {path.stat().st_size} bytes, sha256 {digest[:16]}... matches"


def cancel(smoke: Smoke) -> str:
    """A freshly submitted (large, low-priority) export cancelled before it ends."""
    accepted = smoke.client.submit(str(smoke.export_type), smoke.filters(89), format="xlsx", priority=10)
    try:
        task = smoke.client.cancel(accepted.task_id)
    except ConflictError:
        task = smoke.client.get(accepted.task_id)
        assert task.status == "COMPLETED", f"not cancellable and ended {task.status}"
        return f"task {accepted.task_id} ended before the cancel reached it (COMPLETED): nothing to cancel"
    assert task.status == "CANCELLED", f"answered {task.status}"
    return f"task {accepted.task_id} CANCELLED"


def callback(smoke: Smoke) -> str:
    """An export with ``callback_url``: the service reports its signed callback DELIVERED."""
    assert smoke.callback_url, "no --callback-url given"
    accepted = smoke.client.submit(
        str(smoke.export_type), smoke.filters(3), format="csv", callback_url=smoke.callback_url
    )
    task = smoke.client.wait(accepted.task_id, timeout=smoke.wait_sec)
    deadline = time.monotonic() + smoke.wait_sec
    while task.callback is not None and task.callback.status == "PENDING" and time.monotonic() < deadline:
        time.sleep(2)
        task = smoke.client.get(accepted.task_id)
    assert task.callback is not None, "the task has no callback"
    assert task.callback.status == "DELIVERED", f"callback {task.callback.status}: {task.callback.last_error}"
    return (
        f"task {accepted.task_id}: callback DELIVERED to {smoke.callback_url} after {task.callback.attempts}"
        " attempt(s); check its webhook-signature with the stack's secret (docs/deploy.md)"
    )


STEPS: list[tuple[str, Callable[[Smoke], str]]] = [
    ("export types", export_types),
    ("submit", submit),
    ("poll", poll),
    ("download + sha256", download),
    ("cancel", cancel),
    ("signed callback", callback),
]


def run(
    url: str,
    token: str,
    callback_url: str | None,
    wait_sec: float,
    export_type: str | None = None,
    **client_options: Any,
) -> bool:
    """Every step in order; True when all passed (the callback step is skipped without a URL)."""
    with ExportsClient(url, token, **client_options) as client:
        smoke = Smoke(client=client, callback_url=callback_url, wait_sec=wait_sec, export_type=export_type)
        for name, step in STEPS:
            if step is callback and not callback_url:
                print(f"SKIP  {name:<24}          no --callback-url (CALLBACK_URL=https://...) given", flush=True)
                continue
            smoke.step(name, partial(step, smoke))
    failed = [name for name, passed, _ in smoke.results if not passed]
    print(f"\nsmoke: {len(smoke.results) - len(failed)} passed, {len(failed)} failed", flush=True)
    return not failed


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and run; the exit status is 0 only when every step passed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the stack's ApiUrl output (or http://127.0.0.1:8000)")
    parser.add_argument("--token", required=True, help="a bearer token of one API user")
    parser.add_argument("--callback-url", help="an https URL whose receiver answers 2xx to the signed callback")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for each export (default 300)")
    parser.add_argument(
        "--export-type",
        help=f"a type with date_from/date_to (default: the first offered of {', '.join(EXPORT_TYPE_CHOICES)})",
    )
    options = parser.parse_args(argv)
    if not options.url or not options.token:
        parser.error("give the stack's URL and a token: make smoke URL=https://... TOKEN=...")
    return 0 if run(options.url, options.token, options.callback_url, options.wait, options.export_type) else 1


if __name__ == "__main__":
    sys.exit(main())
