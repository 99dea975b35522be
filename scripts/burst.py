"""A burst: many distinct exports submitted at once, as at month-end or Monday 08:00 (docs/capacity.md).

``python -m scripts.load --burst N`` runs it: ``--users`` users each submit their share of ``N``
distinct small CSV exports of ``orders`` (one day each, columns varied) from ``--client-threads``
threads, all with ``--timeout-sec``. A refused submit (429) waits its ``Retry-After`` plus up to
half again at random and submits again, as the SDK does, until ``--give-up`` seconds after the
burst began. Then every accepted task is read until it ends. Reported: accepted and refused (and
whether every refusal carried ``Retry-After``), outcomes by status, how many COMPLETED within
``--timeout-sec`` of the burst's start, the queue wait (started_at - created_at) p50/p95/p99, and
how close each ``estimated_completion_sec`` was (within 2x + 5 s of the real time), with the load
average before and after.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import requests

REQUEST_TIMEOUT_SEC = 10
_COLUMNS = ["order_id", "amount", "status", "country", "currency", "created_at", "customer_id"]


@dataclass
class Accepted:
    """One accepted export: whose, which, when, and what it was promised."""

    token: str
    task_id: str
    submitted_at: float
    estimated_completion_sec: int


@dataclass
class Burst:
    """What the clients saw, shared under a lock."""

    accepted: list[Accepted] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    refusals_without_retry_after: int = 0
    errors: list[str] = field(default_factory=list)
    gave_up: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def requests_of(count: int, tokens: Sequence[str], seed: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """``count`` distinct export requests, dealt round-robin to the users."""
    rng = random.Random(seed)
    today = datetime.now(UTC).date()
    seen: set[tuple[date, tuple[str, ...]]] = set()
    made: list[tuple[str, dict[str, Any]]] = []
    while len(made) < count:
        day = today - timedelta(days=rng.randrange(1, 365))
        columns = tuple(sorted(rng.sample(_COLUMNS, 3)))
        if (day, columns) in seen:
            continue
        seen.add((day, columns))
        filters = {"date_from": day.isoformat(), "date_to": day.isoformat(), "columns": list(columns)}
        made.append((tokens[len(made) % len(tokens)], {"export_type": "orders", "format": "csv", "filters": filters}))
    return made


def submit_all(
    url: str, work: list[tuple[str, dict[str, Any]]], timeout_sec: int, give_up_at: float, burst: Burst, seed: int
) -> None:
    """One client thread: submit each request, waiting out refusals as the SDK does."""
    rng = random.Random(seed)
    session = requests.Session()
    for token, request in work:
        body = {**request, "timeout_sec": timeout_sec}
        headers = {"Authorization": f"Bearer {token}"}
        while True:
            try:
                response = session.post(f"{url}/v1/exports", json=body, headers=headers, timeout=REQUEST_TIMEOUT_SEC)
            except requests.RequestException as error:
                with burst.lock:
                    burst.errors.append(f"{type(error).__name__}: {error}")
                break
            if response.status_code == 202:
                answer = response.json()
                with burst.lock:
                    burst.accepted.append(
                        Accepted(token, answer["task_id"], time.monotonic(), answer["estimated_completion_sec"])
                    )
                break
            if response.status_code != 429:
                with burst.lock:
                    burst.errors.append(f"POST {response.status_code}: {response.text[:200]}")
                break
            retry_after = response.headers.get("Retry-After")
            with burst.lock:
                burst.refusals[_code(response)] += 1
                burst.refusals_without_retry_after += retry_after is None
            wait = float(retry_after or 1) * (1 + 0.5 * rng.random())
            if time.monotonic() + wait > give_up_at:
                with burst.lock:
                    burst.gave_up += 1
                break
            time.sleep(wait)


def _code(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP_{response.status_code}"


def outcomes(url: str, burst: Burst, wait_sec: float) -> list[dict[str, Any]]:
    """Every accepted task, read until it ended (or ``wait_sec`` passed)."""
    ended: dict[str, dict[str, Any]] = {}
    session = requests.Session()
    deadline = time.monotonic() + wait_sec
    while len(ended) < len(burst.accepted) and time.monotonic() < deadline:
        for accepted in burst.accepted:
            if accepted.task_id in ended:
                continue
            response = session.get(
                f"{url}/v1/exports/{accepted.task_id}",
                headers={"Authorization": f"Bearer {accepted.token}"},
                timeout=REQUEST_TIMEOUT_SEC,
            )
            task = response.json()
            if task.get("status") in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"):
                ended[accepted.task_id] = task
        if len(ended) < len(burst.accepted):
            time.sleep(1)
    return list(ended.values())


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@dataclass(frozen=True)
class BurstResult:
    """What a burst measured."""

    count: int
    users: int
    timeout_sec: int
    threads: int
    submitted_in_sec: float
    accepted: int
    refusals: dict[str, int]
    refusals_without_retry_after: int
    gave_up: int
    errors: list[str]
    statuses: dict[str, int]
    # TIMEOUT by error code: DEADLINE_PASSED (waited or ran past it), DEADLINE_UNREACHABLE (not begun).
    timeouts: dict[str, int]
    completed_within_deadline: int
    queue_waits: list[float]
    # Seconds in the queue of the tasks not begun (DEADLINE_UNREACHABLE), until they ended.
    not_begun_waits: list[float]
    estimates_close: int
    estimates_checked: int
    unfinished: int
    load_before: float
    load_after: float

    @property
    def failed(self) -> bool:
        """An accepted task timed out or never ended, or a request failed."""
        return self.statuses.get("TIMEOUT", 0) > 0 or bool(self.errors) or self.unfinished > 0

    def text(self) -> str:
        """The report printed by ``make load``."""
        refusals = ", ".join(f"{code} x{n}" for code, n in sorted(self.refusals.items())) or "never"
        share = f" ({100 * self.estimates_close / self.estimates_checked:.0f} %)" if self.estimates_checked else ""
        waits = self.queue_waits
        lines = [
            f"burst of {self.count} distinct exports from {self.users} users, timeout_sec {self.timeout_sec}, "
            f"{self.threads} client threads (submits done in {self.submitted_in_sec:.1f} s)",
            f"accepted {self.accepted}; refused {sum(self.refusals.values())} times ({refusals}), "
            f"{self.refusals_without_retry_after} without Retry-After; gave up {self.gave_up}; "
            f"errors {len(self.errors)}",
            "outcomes: "
            + ", ".join(f"{status} {n}" for status, n in sorted(self.statuses.items()))
            + (f"; {self.unfinished} not ended" if self.unfinished else "")
            + (f" (TIMEOUT by code: {self.timeouts})" if self.timeouts else ""),
            f"COMPLETED within {self.timeout_sec} s of the burst's start: {self.completed_within_deadline}",
            f"queue wait p50 {percentile(waits, 0.5):.1f} s, p95 {percentile(waits, 0.95):.1f} s, "
            f"p99 {percentile(waits, 0.99):.1f} s",
            *(
                [
                    f"not begun after {min(self.not_begun_waits):.1f} to {max(self.not_begun_waits):.1f} s "
                    f"in the queue (p50 {percentile(self.not_begun_waits, 0.5):.1f} s)"
                ]
                if self.not_begun_waits
                else []
            ),
            f"estimated_completion_sec within 2x + 5 s of the real time: "
            f"{self.estimates_close} of {self.estimates_checked}{share}",
            f"load average before {self.load_before:.2f}, after {self.load_after:.2f} ({os.cpu_count()} cores)",
        ]
        return "\n".join(lines + [f"  {error}" for error in self.errors[:10]])


def run_burst(
    url: str, tokens: Sequence[str], count: int, timeout_sec: int, threads: int, give_up_sec: float
) -> BurstResult:
    """Submit the burst, follow every accepted task to its end, and measure."""
    load_before = os.getloadavg()[0]
    work = requests_of(count, tokens)
    burst = Burst()
    started_wall = datetime.now(UTC)
    started = time.monotonic()
    give_up_at = started + give_up_sec
    shares = [work[n::threads] for n in range(threads)]
    clients = [
        threading.Thread(target=submit_all, args=(url, share, timeout_sec, give_up_at, burst, n), daemon=True)
        for n, share in enumerate(shares)
    ]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    submitted_in = time.monotonic() - started
    tasks = outcomes(url, burst, wait_sec=timeout_sec + 60)
    window_end = started_wall + timedelta(seconds=timeout_sec)
    promised = {accepted.task_id: accepted.estimated_completion_sec for accepted in burst.accepted}
    real = {
        task["task_id"]: (_at(task["finished_at"]) - _at(task["created_at"])).total_seconds()
        for task in tasks
        if task["status"] == "COMPLETED"
    }
    return BurstResult(
        count=count,
        users=len(tokens),
        timeout_sec=timeout_sec,
        threads=threads,
        submitted_in_sec=submitted_in,
        accepted=len(burst.accepted),
        refusals=dict(burst.refusals),
        refusals_without_retry_after=burst.refusals_without_retry_after,
        gave_up=burst.gave_up,
        errors=list(burst.errors),
        statuses=dict(Counter(task["status"] for task in tasks)),
        timeouts=dict(Counter(task["error"]["code"] for task in tasks if task["status"] == "TIMEOUT")),
        completed_within_deadline=sum(
            1 for task in tasks if task["status"] == "COMPLETED" and _at(task["finished_at"]) <= window_end
        ),
        queue_waits=[
            (_at(task["started_at"]) - _at(task["created_at"])).total_seconds()
            for task in tasks
            if task.get("started_at")
        ],
        not_begun_waits=[
            (_at(task["finished_at"]) - _at(task["created_at"])).total_seconds()
            for task in tasks
            if task["status"] == "TIMEOUT" and task["error"]["code"] == "DEADLINE_UNREACHABLE"
        ],
        estimates_close=sum(
            1 for task_id, seconds in real.items() if abs(promised[task_id] - seconds) <= 2 * seconds + 5
        ),
        estimates_checked=len(real),
        unfinished=len(burst.accepted) - len(tasks),
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
