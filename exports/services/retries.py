"""Retrying the AWS calls that must not be lost to a transient fault (throttling, a timeout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from exports.config import Transient
from exports.domain.errors import RetryableError

T = TypeVar("T")


def retry_transient(action: Callable[[], T]) -> T:
    """``action()``, tried again on :class:`RetryableError` with jittered exponential backoff,
    :attr:`Transient.ATTEMPTS` times in all; the last error propagates."""
    retrying = Retrying(
        retry=retry_if_exception_type(RetryableError),
        stop=stop_after_attempt(Transient.ATTEMPTS),
        wait=wait_random_exponential(multiplier=Transient.BASE_DELAY_SEC, max=Transient.MAX_DELAY_SEC),
        reraise=True,
    )
    return retrying(action)
