"""Retrying the AWS calls that must not be lost to a transient fault (throttling, a timeout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from exports.core.config.retry import TRANSIENT_RETRY
from exports.core.errors import RetryableError

T = TypeVar("T")


def retry_transient(action: Callable[[], T]) -> T:
    """``action()``, tried again on :class:`RetryableError` on
    :data:`exports.core.config.retry.TRANSIENT_RETRY`'s schedule (full jitter); the last error propagates."""
    retrying = Retrying(
        retry=retry_if_exception_type(RetryableError),
        stop=stop_after_attempt(TRANSIENT_RETRY.attempts),
        wait=wait_random_exponential(
            multiplier=TRANSIENT_RETRY.base_sec, max=TRANSIENT_RETRY.cap_sec, exp_base=TRANSIENT_RETRY.factor
        ),
        reraise=True,
    )
    return retrying(action)
