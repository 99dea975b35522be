"""Admission and fairness rules: pure functions of their inputs."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, Final

from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.zones import is_utc


class Estimates:
    """Run-time estimates before any throughput was measured, and how measurements are averaged."""

    DEFAULT_ROWS_PER_SEC: Final = 5000.0
    DEFAULT_TASK_SEC: Final = 5.0
    # Weight of the newest measurement in the moving average.
    SMOOTHING: Final = 0.3


def dedup_key(
    user_id: str,
    export_type: str,
    format: str,
    filters: dict[str, Any],
    csv_bom: bool,
    timeout_sec: int | None = None,
    csv_formula_guard: bool = True,
    caller: dict[str, Any] | None = None,
    timezone: str | None = None,
    run_of: str | None = None,
    csv_dialect: CsvDialect = DEFAULT_DIALECT,
    locale: str | None = None,
) -> str:
    """The same export asked twice by the same user, with the same caller-bound values (a
    tenant claim that changed makes another export), has the same key.

    ``filters`` must already be canonical (validated and dumped by the export type's model, so
    equivalent inputs such as "2025-01-01" and a date object compare equal); key order does not
    matter. Everything that changes the file is in the key, and so is ``timeout_sec``: a task's
    deadline is fixed when its lifecycle starts, so requests that ask for different deadlines are
    not merged (each gets the deadline it asked for). Priority and the callback are not: a merged
    request raises the task's priority and adds its callback (see exports/accepting/submission.py).
    ``locale``: given only when it is not the type's default. A scheduled run's key has its
    firing (``run_of``: schedule and time) in it: each firing is a run of its own, even while
    the previous one is still active (docs/schedules.md).
    """
    identity: dict[str, Any] = {"user": user_id, "type": export_type, "format": format, "filters": filters}
    identity["bom"] = csv_bom
    if caller:
        identity["caller"] = caller
    if timeout_sec is not None:
        identity["timeout_sec"] = timeout_sec
    if not csv_formula_guard:
        identity["formula_guard"] = False
    # The file's date-times differ by zone; the default's keys stay those of before zones.
    if timezone is not None and not is_utc(timezone):
        identity["timezone"] = timezone
    if run_of is not None:
        identity["run_of"] = run_of
    # Only what differs from the file of before dialects and locales: older keys stay as they were.
    if not csv_dialect.is_default:
        identity["csv_dialect"] = csv_dialect.model_dump(mode="json")
    if locale is not None:
        identity["locale"] = locale
    canonical = json.dumps(
        identity,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


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
    """What recent runs of an export type achieved: exponentially weighted means of each run's
    rows per second, seconds, rows, rows squared, rows times seconds and rows per day of its
    date range. The last three are None in statistics recorded before they existed."""

    rows_per_sec: float
    task_sec: float
    rows_per_task: float
    rows_squared: float | None = None
    rows_times_sec: float | None = None
    rows_per_day: float | None = None

    def run_sec(self, rows: float) -> float:
        """Seconds a run of ``rows`` rows should take: a fixed start-up plus a time per row,
        fitted (least squares) to the recorded runs when their sizes differ enough; the mean run
        when runs of different sizes took no longer for their rows (small exports, whose time
        is their start-up: scaled by rows, a streak of empty ones would make the next one of a
        hundred rows look a hundred times longer); with runs of one size only, in proportion to
        the mean run, unless they had no rows (which measured no row's cost)."""
        if self.rows_squared is not None and self.rows_times_sec is not None:
            variance = self.rows_squared - self.rows_per_task**2
            if variance > (_SIZE_SPREAD * self.rows_per_task) ** 2:
                covariance = self.rows_times_sec - self.rows_per_task * self.task_sec
                if covariance <= 0:
                    return self.task_sec
                per_row = covariance / variance
                start_up = self.task_sec - per_row * self.rows_per_task
                if start_up >= 0:
                    return start_up + per_row * rows
        if self.rows_per_task >= 1:
            return self.task_sec * rows / self.rows_per_task
        return self.task_sec


# Runs whose sizes spread less than this (relative standard deviation) fit no start-up time.
_SIZE_SPREAD = 0.1


def throughput_key(export_type: str, format: str) -> str:
    """What a run's throughput is measured under: its type and its format. A PDF writes far
    fewer rows a second than a CSV of the same type, so one average misleads both estimates."""
    return f"{export_type}/{format}"


def updated_throughput(
    old: Throughput | None, rows: int, seconds: float, smoothing: float, days: int | None = None
) -> Throughput:
    """Fold one finished run (``rows`` rows in ``seconds``, over ``days`` days of data when its
    filters have a date range) into the moving averages."""
    seconds = max(seconds, 0.001)
    measured = Throughput(
        rows_per_sec=rows / seconds,
        task_sec=seconds,
        rows_per_task=float(rows),
        rows_squared=float(rows) ** 2,
        rows_times_sec=rows * seconds,
        rows_per_day=rows / days if days else None,
    )
    if old is None:
        return measured

    def blend(new: float | None, previous: float | None) -> float | None:
        if new is None or previous is None:
            return new if previous is None else previous
        return smoothing * new + (1 - smoothing) * previous

    if old.rows_squared is None or old.rows_times_sec is None:
        # Statistics from before the moments were kept: start them from the means.
        old = replace(old, rows_squared=old.rows_per_task**2, rows_times_sec=old.rows_per_task * old.task_sec)
    return Throughput(
        rows_per_sec=smoothing * measured.rows_per_sec + (1 - smoothing) * old.rows_per_sec,
        task_sec=smoothing * measured.task_sec + (1 - smoothing) * old.task_sec,
        rows_per_task=smoothing * measured.rows_per_task + (1 - smoothing) * old.rows_per_task,
        rows_squared=blend(measured.rows_squared, old.rows_squared),
        rows_times_sec=blend(measured.rows_times_sec, old.rows_times_sec),
        rows_per_day=blend(measured.rows_per_day, old.rows_per_day),
    )


def date_span_days(filters: dict[str, Any]) -> int | None:
    """Days covered by the filters' date range (both ends included) when exactly two of the
    (canonical, JSON) filter values are dates; None otherwise."""
    days: list[date] = []
    for value in filters.values():
        if isinstance(value, str) and _ISO_DATE.fullmatch(value):
            try:
                days.append(date.fromisoformat(value))
            except ValueError:
                continue
    if len(days) != 2:
        return None
    return abs((days[1] - days[0]).days) + 1


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def expected_task_rows(throughput: Throughput, known_rows: int | None, span_days: int | None) -> float:
    """The rows a new task should have: what its type knows up front, else its date range's days
    at the rows per day measured, else the mean of recent runs."""
    if known_rows is not None:
        return float(known_rows)
    if span_days is not None and throughput.rows_per_day is not None:
        return span_days * throughput.rows_per_day
    return throughput.rows_per_task
