"""Admission and fairness rules: deduplication keys, token buckets and run-time estimates.

Every function here is pure. Its result depends only on its arguments, with no clock and no I/O.
"""

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
    """The run-time estimates used before any throughput was measured, and how measurements are
    averaged."""

    DEFAULT_ROWS_PER_SEC: Final = 5000.0
    DEFAULT_TASK_SEC: Final = 5.0
    # The weight of the newest measurement in the moving average.
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
    """The deduplication key of an export request.

    The same export asked twice by the same user gets the same key, so the second request can be
    merged into the first one's task. The values bound from the caller's token count too: a
    tenant claim that changed makes another export.

    ``filters`` must already be canonical: validated and dumped by the export type's model, so
    that equivalent inputs such as "2025-01-01" and a date object compare equal. The order of its
    keys does not matter.

    Everything that changes the file is in the key. So is ``timeout_sec``: a task's deadline is
    fixed when its lifecycle starts, so requests that ask for different deadlines are not merged.
    Each gets the deadline it asked for. The priority and the callback are not in the key. A
    merged request raises the task's priority and adds its callback (see
    exports/accepting/submission.py).

    ``locale`` is given only when it is not the type's default. A scheduled run's key holds its
    firing (``run_of``: the schedule and the time). So each firing is a run of its own, even
    while the previous one is still active (docs/schedules.md).
    """
    identity: dict[str, Any] = {"user": user_id, "type": export_type, "format": format, "filters": filters}
    identity["bom"] = csv_bom
    if caller:
        identity["caller"] = caller
    if timeout_sec is not None:
        identity["timeout_sec"] = timeout_sec
    if not csv_formula_guard:
        identity["formula_guard"] = False
    # The file's date-times differ by zone. The default zone adds nothing, so its keys stay as
    # they were before zones existed.
    if timezone is not None and not is_utc(timezone):
        identity["timezone"] = timezone
    if run_of is not None:
        identity["run_of"] = run_of
    # Only a dialect or a locale that changes the file is added, so older keys stay as they were.
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
    """A token bucket's state: the tokens left as of ``updated_at``.

    A token bucket lets work through at a steady rate, with short bursts. Each piece of work
    takes a token, and the tokens refill at a fixed rate up to the size of the burst.
    """

    tokens: float
    updated_at: datetime


def take_token(bucket: Bucket | None, now: datetime, rate_per_sec: float, burst: int) -> tuple[bool, Bucket, float]:
    """Tries to take one token from ``bucket``; None stands for a full bucket of ``burst`` tokens.

    Returns whether the token was taken, the bucket afterwards, and the seconds until a token is
    free.
    """
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
    """What recent runs of an export type achieved, as exponentially weighted means.

    The means are of each run's rows per second, seconds, rows, rows squared, rows times seconds,
    and rows per day of its date range. The last three are None in statistics recorded before
    they existed.
    """

    rows_per_sec: float
    task_sec: float
    rows_per_task: float
    rows_squared: float | None = None
    rows_times_sec: float | None = None
    rows_per_day: float | None = None

    def run_sec(self, rows: float) -> float:
        """The seconds a run of ``rows`` rows should take.

        When the recorded runs differ enough in size, the estimate is a fixed start-up time plus
        a time per row, fitted to those runs by least squares.

        When runs of different sizes took no longer for their rows, the estimate is the mean
        run. These are small exports, whose time is their start-up. Scaled by rows, a streak of
        empty ones would make the next one of a hundred rows look a hundred times longer.

        With runs of one size only, the estimate is in proportion to the mean run, unless those
        runs had no rows: they measured no row's cost.
        """
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


# Runs whose sizes spread less than this (as a relative standard deviation) get no fitted
# start-up time.
_SIZE_SPREAD = 0.1


def throughput_key(export_type: str, format: str) -> str:
    """The key a run's throughput is measured under: its type and its format. A PDF writes far
    fewer rows a second than a CSV of the same type, so one average would mislead both
    estimates."""
    return f"{export_type}/{format}"


def updated_throughput(
    old: Throughput | None, rows: int, seconds: float, smoothing: float, days: int | None = None
) -> Throughput:
    """Folds one finished run into the moving averages. The run wrote ``rows`` rows in
    ``seconds``, over ``days`` days of data when its filters have a date range."""
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
        # Statistics recorded before rows squared and rows times seconds were kept: start those
        # from the means.
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
    """The days the filters' date range covers, both ends included.

    The range is known only when exactly two of the filter values (canonical, as JSON) are dates.
    Otherwise the result is None.
    """
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
    """The rows a new task should have.

    The type's own count comes first, when it knows one up front. Next comes the days of the
    task's date range times the rows per day measured. Last comes the mean of recent runs.
    """
    if known_rows is not None:
        return float(known_rows)
    if span_days is not None and throughput.rows_per_day is not None:
        return span_days * throughput.rows_per_day
    return throughput.rows_per_task
