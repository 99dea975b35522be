"""Retrying the AWS calls that must not be lost to a transient fault (throttling, a timeout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from exports.domain.errors import RetryableError


class Transient:
    """Retries of transient AWS faults (throttling, timeouts) on top of the SDK's own, for the
    writes that must not be lost: a task's state, and the clean-up of files and uploads."""

    ATTEMPTS: Final = 4
    # Full jitter: each wait is drawn from [0, min(MAX, BASE * 2**n)] seconds.
    BASE_DELAY_SEC: Final = 0.1
    MAX_DELAY_SEC: Final = 2.0


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
