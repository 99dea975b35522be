"""What admission reads and writes besides the task records: hot-key buckets and measured throughput."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from exports.accepting.admission_rules import Throughput


class HotKeyLimiter(Protocol):
    """Rate limits per hot key, shared by all workers."""

    def acquire(self, hot_key: str, now: datetime) -> float:
        """0 if the task may run now, else seconds until it may."""


class ThroughputStats(Protocol):
    """Measured speed per export type and format (``key``: domain.admission.throughput_key), for
    estimates."""

    def get(self, key: str) -> Throughput | None:
        """The moving averages, or None before the first run."""

    def record(self, key: str, rows: int, seconds: float, days: int | None = None) -> None:
        """Fold in one finished run (``days``: the days its date range covers, if it has one)."""
