"""Request, admission and capacity limits."""

from __future__ import annotations

from datetime import date
from typing import Final


class Limits:
    """Request and task limits."""

    MAX_BODY_BYTES: Final = 64 * 1024
    # A callback URL's length as sent (the common limit of browsers and CDNs on a URL).
    CALLBACK_URL_MAX_LENGTH: Final = 2048
    PRIORITY_HIGHEST: Final = 1
    PRIORITY_LOWEST: Final = 10
    PRIORITY_DEFAULT: Final = 5
    TIMEOUT_SEC_DEFAULT: Final = 300
    TIMEOUT_SEC_MIN: Final = 10
    TIMEOUT_SEC_MAX: Final = 3600
    # Filter dates outside these are refused: a range reaching 9999-12-31 cannot even be read
    # day by day (the day after it does not exist).
    EARLIEST_DATE: Final = date(1900, 1, 1)
    LATEST_DATE: Final = date(2999, 12, 31)
    # Filter integers are PostgreSQL bigints: beyond them a bound parameter (or an array of
    # them) fails in the worker, so submit refuses them.
    INTEGER_MIN: Final = -(2**63)
    INTEGER_MAX: Final = 2**63 - 1
    # Filter decimals: at most this many digits before and after the point. PostgreSQL's numeric
    # takes 131,072 and 16,383; a bound this far inside them keeps `1e999999` (and its exact
    # comparisons with a declared min or max) from ever reaching the worker.
    DECIMAL_MAX_INTEGER_DIGITS: Final = 1000
    DECIMAL_MAX_FRACTION_DIGITS: Final = 1000
    LIST_PAGE_DEFAULT: Final = 20
    LIST_PAGE_MAX: Final = 100


class Admission:
    """Limits applied at submit: per-user quota, backlog, idempotency keys."""

    MAX_ACTIVE_TASKS_PER_USER: Final = 10
    # Approximate visible messages over all lanes beyond which submit answers 429.
    MAX_BACKLOG: Final = 2000
    BACKLOG_CACHE_SEC: Final = 5
    RETRY_AFTER_QUOTA_SEC: Final = 30
    RETRY_AFTER_BACKLOG_SEC: Final = 60
    # Admission by deadline (docs/capacity.md): a task is accepted when its wait in the queue
    # plus its own run should end within this share of its timeout_sec; the rest is the margin
    # for what estimates miss (a run slower than its type's average, workers slowed by others:
    # a sudden slowdown of 1.5x mid-burst still starts every accepted task in time, which 0.7
    # does not: tests/unit/core/test_capacity_rules.py).
    DEADLINE_SHARE: Final = 0.6
    # Weight of the newest start in a capacity pool's measured drain.
    DRAIN_SMOOTHING: Final = 0.1
    # How old a pool's measured drain an API or worker instance may use (its cached reading).
    DRAIN_CACHE_SEC: Final = 2
    # The longest Retry-After a capacity refusal gives (a client may always try sooner).
    RETRY_AFTER_CAPACITY_MAX_SEC: Final = 900
    IDEMPOTENCY_KEY_MAX_LENGTH: Final = 255
    IDEMPOTENCY_TTL_SEC: Final = 24 * 3600


class HotKey:
    """Token bucket per hot key (export type + date range), enforced by the worker."""

    RATE_PER_MINUTE: Final = 20
    BURST: Final = 5


class Capacity:
    """Ceilings the CDK app sets on AWS: they protect the data source and the API from bursts."""

    # At most this many worker instances read the queue at once (SQS event source maximum
    # concurrency, 2..1000): the global limit on parallel queries against the data source.
    WORKER_MAX_CONCURRENCY: Final = 6
    # Default route throttling of the HTTP API stage (steady requests per second, and burst).
    API_THROTTLE_RATE_PER_SEC: Final = 50
    API_THROTTLE_BURST: Final = 100
