"""Scheduled exports (docs/schedules.md)."""

from __future__ import annotations

from typing import Final


class Schedules:
    """Scheduled exports (docs/schedules.md): limits (the retries of Scheduler's target:
    :data:`exports.config.retry.SCHEDULE_TARGET_RETRY`)."""

    MAX_PER_USER_DEFAULT: Final = 20
    MIN_INTERVAL_MIN_DEFAULT: Final = 15
    # A schedule pauses itself after this many consecutive failed runs.
    MAX_CONSECUTIVE_FAILURES: Final = 5
    NEXT_RUNS_SHOWN: Final = 5
    # An ``every`` schedule's first firing is at its anchor (Scheduler's rate fires when the
    # schedule is created or retimed): next_runs shows it for this long, until the run starts.
    FIRST_FIRING_GRACE_SEC: Final = 60
    MAX_RECIPIENTS: Final = 10
    DEFAULT_TIMEZONE: Final = "Etc/UTC"
    # The schedule function's timeout.
    FUNCTION_TIMEOUT_SEC: Final = 30
    # How far ahead a firing moved out of a DST gap gets its one-time Scheduler schedule (more
    # than a year: every zone's next spring-forward).
    MOVED_FIRING_HORIZON_DAYS: Final = 400
