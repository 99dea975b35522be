"""A bounded load run on loopback: sustained submits, each followed by a read of its task.

    .venv/bin/python -m scripts.load                      # starts its own local stack (free ports, 50 users)
    .venv/bin/python -m scripts.load --url http://127.0.0.1:8000 --token dev-...   # against make run
    .venv/bin/python -m scripts.load --duration 30 --concurrency 4

Each of ``--concurrency`` clients loops for ``--duration`` seconds: ``POST /v1/exports`` (a one-day
``orders`` export, distinct per request so nothing is deduplicated), then ``GET`` of the task it
got. Users take turns, so the per-user quota (10 active tasks) is what refuses work once the
workers fall behind: ``429`` answers are the service protecting itself and are counted, not
failed. Anything else that is not ``2xx`` (or a network error) is an error, and the exit status
says so. Only loopback addresses are accepted as targets; the run stops by itself (duration,
``--max-requests``, 10 s per request).

Reported: requests and throughput, accepted submits per second, p50/p99/max latency of POST and
GET, answers by status and error code, and how far the workers got (tasks by status, sampled).

    .venv/bin/python -m scripts.load --burst 600 --users 60 --timeout-sec 30     # a month-end burst

``--burst N`` runs scripts/burst.py instead: N distinct exports submitted at once, refusals waited
out as the SDK does, every accepted task followed to its end (docs/capacity.md).

    .venv/bin/python -m scripts.load --schedules 200                             # Monday 08:00

``--schedules N`` runs scripts/schedule_burst.py instead, on a stack of its own whose schedule
clock it moves: N schedules on the same minute, their arrivals over the spread window, and every
run followed to its end.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from exports.config.env import Env
from local_stack.demo_tenants import TENANTS
from local_stack.stack import CLOCK_VARIABLE
from scripts.burst import percentile, run_burst
from scripts.schedule_burst import run_schedule_burst

ROOT = Path(__file__).resolve().parent.parent
REQUEST_TIMEOUT_SEC = 10


@dataclass
class Results:
    """Everything the clients measured, shared under a lock."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"POST": [], "GET": []})
    answers: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    accepted: list[tuple[str, str]] = field(default_factory=list)  # (token, task id)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, method: str, seconds: float, answer: str) -> None:
        with self.lock:
            self.requests += 1
            self.latencies[method].append(seconds)
            self.answers[f"{method} {answer}"] += 1


def _answer(response: requests.Response) -> str:
    if response.status_code < 400:
        return str(response.status_code)
    try:
        return f"{response.status_code} {response.json()['error']['code']}"
    except (ValueError, KeyError, TypeError):
        return f"{response.status_code} (not the JSON error shape)"


def client(url: str, tokens: Sequence[str], deadline: float, limit: int, results: Results, seed: int) -> None:
    """One client: submit, read, repeat until the deadline or the request limit."""
    rng = random.Random(seed)
    session = requests.Session()
    today = datetime.now(UTC).date()
    while time.monotonic() < deadline and results.requests < limit:
        token = tokens[rng.randrange(len(tokens))]
        headers = {"Authorization": f"Bearer {token}"}
        day = (today - timedelta(days=rng.randrange(90))).isoformat()
        columns = rng.sample(["order_id", "amount", "status", "country", "currency", "created_at"], 3)
        body: dict[str, Any] = {
            "export_type": "orders",
            "filters": {"date_from": day, "date_to": day, "columns": columns},
        }
        try:
            started = time.monotonic()
            response = session.post(f"{url}/v1/exports", json=body, headers=headers, timeout=REQUEST_TIMEOUT_SEC)
            results.record("POST", time.monotonic() - started, _answer(response))
            if response.status_code != 202:
                if response.status_code != 429:
                    results.errors.append(f"POST {response.status_code}: {response.text[:200]}")
                continue
            task_id = response.json()["task_id"]
            with results.lock:
                results.accepted.append((token, task_id))
            started = time.monotonic()
            response = session.get(f"{url}/v1/exports/{task_id}", headers=headers, timeout=REQUEST_TIMEOUT_SEC)
            results.record("GET", time.monotonic() - started, _answer(response))
            if response.status_code != 200:
                results.errors.append(f"GET {response.status_code}: {response.text[:200]}")
        except requests.RequestException as error:
            with results.lock:
                results.errors.append(f"{type(error).__name__}: {error}")


def progress(url: str, results: Results, sample: int, rng: random.Random) -> Counter[str]:
    """Statuses of a sample of the accepted tasks, right after the run."""
    chosen = rng.sample(results.accepted, min(sample, len(results.accepted)))
    statuses: Counter[str] = Counter()
    for token, task_id in chosen:
        response = requests.get(
            f"{url}/v1/exports/{task_id}", headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_TIMEOUT_SEC
        )
        statuses[response.json().get("status", str(response.status_code))] += 1
    return statuses


def report(results: Results, seconds: float, statuses: Counter[str], sample: int) -> str:
    accepted = len(results.accepted)
    lines = [
        f"{results.requests} requests in {seconds:.1f} s: {results.requests / seconds:.1f} requests/s, "
        f"{accepted} submits accepted ({accepted / seconds:.1f}/s)",
    ]
    for method, values in results.latencies.items():
        if values:
            lines.append(
                f"{method:4} n={len(values):6}  p50 {percentile(values, 0.5) * 1000:7.1f} ms  "
                f"p99 {percentile(values, 0.99) * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms"
            )
    lines.append("answers: " + ", ".join(f"{name} x{count}" for name, count in sorted(results.answers.items())))
    lines.append(f"errors (not 2xx, not 429): {len(results.errors)}")
    lines += [f"  {error}" for error in results.errors[:10]]
    if statuses:
        lines.append(f"tasks right after the run (sample of {sum(statuses.values())}): {dict(statuses)}")
    return "\n".join(lines)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def local_stack(
    users: int, demo_orders: int, log_path: str | None = None, environment: dict[str, str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """``python -m local_stack`` on free ports with ``users`` users (and ``environment`` set);
    (API URL, their tokens). Its output goes to ``log_path`` (or a temporary file)."""
    tokens = [f"load-{n}-{os.urandom(6).hex()}" for n in range(users)]
    port = _free_port()
    # The users spread over the demo tenants (the demo types bind the tenant claim).
    users_file = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)  # noqa: SIM115 (removed below)
    with users_file:
        for n in range(users):
            tenant = TENANTS[n % len(TENANTS)]
            users_file.write(f'[users.load-user-{n}]\nclaims = {{ "custom:tenant_id" = "{tenant}" }}\n')
    env = {
        **os.environ,
        "PORT": str(port),
        "EXPORTS_AWS_PORT": str(_free_port()),
        "EXPORTS_LOCAL_USERS": users_file.name,
        "EXPORTS_LOCAL_TOKENS": ",".join(f"{token}=load-user-{n}" for n, token in enumerate(tokens)),
        "EXPORTS_DEMO_ORDERS": str(demo_orders),
        "PYTHONUNBUFFERED": "1",
        **(environment or {}),
    }
    env.pop("AWS_ENDPOINT_URL", None)
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "w+") if log_path else tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen([sys.executable, "-m", "local_stack"], cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if requests.get(f"{url}/openapi.json", timeout=2).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"the local stack did not start:\n{log.read()[-3000:]}")
                time.sleep(0.3)
            yield url, tokens
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            os.unlink(users_file.name)


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(url: str, tokens: Sequence[str], duration: float, concurrency: int, limit: int, sample: int) -> int:
    results = Results()
    started = time.monotonic()
    deadline = started + duration
    clients = [
        threading.Thread(target=client, args=(url, tokens, deadline, limit, results, n), daemon=True)
        for n in range(concurrency)
    ]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(duration + 2 * REQUEST_TIMEOUT_SEC)
    seconds = time.monotonic() - started
    statuses = progress(url, results, sample, random.Random(0))
    print(report(results, seconds, statuses, sample))
    return 1 if results.errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running API on loopback (make run's: http://127.0.0.1:8000)")
    parser.add_argument("--token", action="append", default=[], help="bearer token(s) for --url (repeat, or a,b,c)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel clients (default 8)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="stop after this many requests")
    parser.add_argument("--users", type=int, default=50, help="users of the stack this script starts (default 50)")
    parser.add_argument("--demo-orders", type=int, default=20_000, help="orders the started stack seeds")
    parser.add_argument("--sample", type=int, default=200, help="accepted tasks read back after the run")
    parser.add_argument("--stack-log", help="keep the started stack's output (its functions' logs) in this file")
    parser.add_argument("--burst", type=int, help="submit this many distinct exports at once instead (a burst)")
    parser.add_argument("--timeout-sec", type=int, default=300, help="the burst's timeout_sec (default 300)")
    parser.add_argument("--client-threads", type=int, default=16, help="the burst's client threads (default 16)")
    parser.add_argument("--give-up", type=float, help="a refused burst client stops retrying after this many seconds")
    parser.add_argument(
        "--schedules", type=int, help="create this many schedules on the same minute instead (its own stack only)"
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="--url may be a deployed stack's (https) rather than loopback"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.concurrency <= 64 or not 0 < args.duration <= 3600:
        parser.error("--concurrency must be 1..64 and --duration 0..3600 s")
    if args.burst is not None and not 1 <= args.burst <= 20_000:
        parser.error("--burst must be 1..20000")
    if args.schedules is not None:
        if not 1 <= args.schedules <= 5_000 or args.url:
            parser.error("--schedules must be 1..5000, on the stack this script starts (its schedule clock is moved)")
        return _schedules(args)
    if args.url:
        if not (_loopback(args.url) or (args.allow_remote and args.url.startswith("https://"))):
            parser.error("--url must be a loopback address (or, with --allow-remote, a deployed stack's https URL)")
        tokens = [token for value in args.token for token in value.split(",") if token]
        if not tokens:
            parser.error("--url needs --token (make run prints one)")
        return _chosen(args, args.url.rstrip("/"), tokens)
    with local_stack(args.users, args.demo_orders, args.stack_log) as (url, tokens):
        print(f"local stack at {url} with {len(tokens)} users")
        return _chosen(args, url, tokens)


def _schedules(args: argparse.Namespace) -> int:
    """The schedule burst, on a stack whose schedule clock only this script moves."""
    per_user = -(-args.schedules // args.users)
    environment = {CLOCK_VARIABLE: "manual", Env.MAX_SCHEDULES_PER_USER: str(per_user)}
    with local_stack(args.users, args.demo_orders, args.stack_log, environment) as (url, tokens):
        print(f"local stack at {url} with {len(tokens)} users, its schedule clock moved by this script")
        result = run_schedule_burst(url, tokens, args.schedules)
        print(result.text())
        return 1 if result.failed else 0


def _chosen(args: argparse.Namespace, url: str, tokens: Sequence[str]) -> int:
    """The burst, or the sustained load."""
    if args.burst is not None:
        give_up = args.give_up if args.give_up is not None else 3 * args.timeout_sec
        result = run_burst(url, tokens, args.burst, args.timeout_sec, args.client_threads, give_up)
        print(result.text())
        return 1 if result.failed else 0
    print(f"{args.concurrency} clients for {args.duration:.0f} s")
    return run(url, tokens, args.duration, args.concurrency, args.max_requests, args.sample)


if __name__ == "__main__":
    sys.exit(main())
