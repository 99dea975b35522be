"""Scheduled exports (docs/schedules.md)."""

from __future__ import annotations

from typing import Final


class Schedules:
    """Scheduled exports (docs/schedules.md): limits (the retries of Scheduler's target:
    :data:`exports.core.config.retry.SCHEDULE_TARGET_RETRY`)."""

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
    # Schedules do not stampede (docs/capacity.md): each firing arrives at some instant within
    # a window after its time (Scheduler's flexible time window), at most this many minutes and
    # at most this share of the shortest gap between the schedule's firings; a schedule that fires
    # more often than SPREAD_MIN_GAP_MIN fires on time (its runs are small and spread already).
    SPREAD_MAX_MIN: Final = 10
    SPREAD_SHARE_OF_GAP: Final = 0.25
    SPREAD_MIN_GAP_MIN: Final = 60
    # A firing refused for capacity is tried again (Retry-After, with jitter) until this long
    # after its time, and never past its schedule's next firing; after that the run is missed.
    DEFERRAL_WINDOW_MIN: Final = 60
    # A feed's run reserved at a firing but never given its task (the invocation died) stops
    # holding the feed back after this long (the firing claim's own lease).
    FEED_RESERVATION_LEASE_SEC: Final = 300
    # The latest file's redirect (GET /v1/schedules/{id}/latest) presigns a link this long.
    LATEST_LINK_TTL_SEC: Final = 300
    # A run's mail carries the file itself when it has at most this many bytes (the deployment's
    # context ``mail_attachment_max_bytes``; 0: never), else the link. SES takes a message of up
    # to 40 MB after MIME encoding, and base64 adds a third: 28 MiB is the most a deployment may
    # set. The default, 5 MiB, is what mailboxes of every provider accept without a second look.
    MAIL_ATTACHMENT_DEFAULT_BYTES: Final = 5 * 1024 * 1024
    MAIL_ATTACHMENT_MAX_BYTES: Final = 28 * 1024 * 1024
