"""Retry policies."""

from __future__ import annotations

from typing import Final


class ThrottleRetry:
    """How the lifecycle workflow retries its functions when Lambda throttles them
    (``Lambda.TooManyRequestsException``): the lifecycle function in AwaitEnd and Expire, whose
    loss would cost a task its deadline and its callback, and the callback function in Deliver
    and GiveUp (apart from the callback's own retries, which a throttle must not spend). Every
    submit starts an execution whose first step invokes the lifecycle function, and the API
    admits bursts of ``Capacity.API_THROTTLE_BURST`` (100) against its few reserved executions
    (infra's ``Sizing.LIFECYCLE_RESERVED_CONCURRENCY``, 5): most of a burst is throttled at
    first. Full jitter spreads the retries so they do not come back in step; waits of 1, 2, 4
    ... s capped at MAX_DELAY_SEC give a window of about three minutes (half of it on average),
    for work of the burst that takes some 20 s at 1 s an invocation."""

    INTERVAL_SEC: Final = 1
    BACKOFF_RATE: Final = 2.0
    MAX_ATTEMPTS: Final = 10
    MAX_DELAY_SEC: Final = 30
    # The longest one lifecycle invocation is taken to last when sizing the window (a DynamoDB
    # update and a Step Functions call, cold start included).
    INVOCATION_SEC: Final = 1.0
