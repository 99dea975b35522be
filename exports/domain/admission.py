"""Admission and fairness rules: pure functions of their inputs."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from exports.config import LANES, Lane


def dedup_key(
    user_id: str,
    export_type: str,
    format: str,
    filters: dict[str, Any],
    csv_bom: bool,
    timeout_sec: int | None = None,
    csv_formula_guard: bool = True,
) -> str:
    """The same export asked twice by the same user has the same key.

    ``filters`` must already be canonical (validated and dumped by the export type's model, so
    equivalent inputs such as "2025-01-01" and a date object compare equal); key order does not
    matter. Everything that changes the file is in the key, and so is ``timeout_sec``: a task's
    deadline is fixed when its lifecycle starts, so requests that ask for different deadlines are
    not merged (each gets the deadline it asked for). Priority and the callback are not: a merged
    request raises the task's priority and adds its callback (see services/submission.py).
    """
    identity: dict[str, Any] = {"user": user_id, "type": export_type, "format": format, "filters": filters}
    identity["bom"] = csv_bom
    if timeout_sec is not None:
        identity["timeout_sec"] = timeout_sec
    if not csv_formula_guard:
        identity["formula_guard"] = False
    canonical = json.dumps(
        identity,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def lane_for(priority: int) -> Lane:
    """The lane that serves ``priority`` (1 highest .. 10 lowest)."""
    for lane in LANES:
        if lane.highest <= priority <= lane.lowest:
            return lane
    raise ValueError(f"no lane serves priority {priority}")


@dataclass(frozen=True)
class Bucket:
    """A token bucket's state: tokens left as of ``updated_at``."""

    tokens: float
    updated_at: datetime


def take_token(bucket: Bucket | None, now: datetime, rate_per_sec: float, burst: int) -> tuple[bool, Bucket, float]:
    """Try to take one token. Returns (allowed, the bucket after, seconds until a token is free)."""
    if bucket is None:
        tokens = float(burst)
    else:
        elapsed = max(0.0, (now - bucket.updated_at).total_seconds())
        tokens = min(float(burst), bucket.tokens + elapsed * rate_per_sec)
    if tokens >= 1:
        return True, Bucket(tokens=tokens - 1, updated_at=now), 0.0
    return False, Bucket(tokens=tokens, updated_at=now), (1 - tokens) / rate_per_sec


@dataclass(frozen=True)
class Throughput:
    """What recent runs of an export type achieved (moving averages)."""

    rows_per_sec: float
    task_sec: float
    rows_per_task: float


def updated_throughput(old: Throughput | None, rows: int, seconds: float, smoothing: float) -> Throughput:
    """Fold one finished run into the moving averages."""
    seconds = max(seconds, 0.001)
    measured = Throughput(rows_per_sec=rows / seconds, task_sec=seconds, rows_per_task=float(rows))
    if old is None:
        return measured

    def blend(new: float, previous: float) -> float:
        return smoothing * new + (1 - smoothing) * previous

    return Throughput(
        rows_per_sec=blend(measured.rows_per_sec, old.rows_per_sec),
        task_sec=blend(measured.task_sec, old.task_sec),
        rows_per_task=blend(measured.rows_per_task, old.rows_per_task),
    )


def estimate_completion_sec(throughput: Throughput, queued_ahead: int, workers: int, expected_rows: int | None) -> int:
    """Seconds until a new task should be done: the queue ahead of it drained by the lane's
    workers, then its own rows at the measured speed."""
    waiting = queued_ahead * throughput.task_sec / max(1, workers)
    rows = expected_rows if expected_rows is not None else throughput.rows_per_task
    running = rows / max(throughput.rows_per_sec, 0.001)
    return max(1, math.ceil(waiting + running))
