"""Retry and polling policies: pure functions of the task and the time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Final

from exports.core.config.retry import MESSAGE_RETRY, TASK_RETRY
from exports.core.task import Task


class Polling:
    """Advice to clients while a task runs (Retry-After) and caching once it is terminal."""

    MIN_DELAY_SEC: Final = 1
    MAX_DELAY_SEC: Final = 30
    TERMINAL_MAX_AGE_SEC: Final = 5


def has_retries_left(task: Task) -> bool:
    """Whether a transient failure may send the task back to the queue."""
    return task.retry_count < task.max_retries


def is_last_receipt(receive_count: int) -> bool:
    """Whether SQS moves a message to its DLQ if this receipt of it fails too."""
    return receive_count >= MESSAGE_RETRY.attempts


def retry_delay_sec(retry_count: int, random: Callable[[], float]) -> int:
    """Seconds before retry number ``retry_count + 1``, on :data:`exports.core.config.retry.TASK_RETRY`'s
    schedule (equal jitter), whole seconds as SQS delays are. The fixed half is what spreads the
    retries over minutes whatever the draws; the random half keeps the workers of one outage
    from retrying in step.

    ``random`` returns a float in [0, 1); injecting it keeps the policy deterministic in tests.
    """
    return max(1, round(TASK_RETRY.wait_sec(retry_count, random())))


def poll_after_sec(created_at: datetime, now: datetime) -> int:
    """How long a client should wait before polling a task created at ``created_at`` again.

    Mirrors the advised client backoff (1 s doubling to 30 s): short tasks are polled often,
    long ones gently.
    """
    elapsed = max(0.0, (now - created_at).total_seconds())
    delay = Polling.MIN_DELAY_SEC
    while delay * 2 <= elapsed and delay < Polling.MAX_DELAY_SEC:
        delay *= 2
    return min(delay, Polling.MAX_DELAY_SEC)


def callback_delivered(status: int | None) -> bool:
    """A 2xx answer means the receiver has the callback."""
    return status is not None and 200 <= status < 300


def callback_retryable(status: int | None) -> bool:
    """Worth another attempt: network errors and timeouts (no status), 408, 429 and 5xx.
    Other answers, redirects included (they are never followed), are final."""
    return status is None or status in (408, 429) or status >= 500
