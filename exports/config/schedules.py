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
    MAX_RECIPIENTS: Final = 10
    DEFAULT_TIMEZONE: Final = "Etc/UTC"
    # The schedule function's timeout.
    FUNCTION_TIMEOUT_SEC: Final = 30
    # How far ahead a firing moved out of a DST gap gets its one-time Scheduler schedule (more
    # than a year: every zone's next spring-forward).
    MOVED_FIRING_HORIZON_DAYS: Final = 400
    # A feed's run reserved at a firing but never given its task (the invocation died) stops
    # holding the feed back after this long (the firing claim's own lease).
    FEED_RESERVATION_LEASE_SEC: Final = 300
    # The latest file's redirect (GET /v1/schedules/{id}/latest) presigns a link this long.
    LATEST_LINK_TTL_SEC: Final = 300
