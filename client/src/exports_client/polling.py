"""How :meth:`ExportsClient.wait` paces its polls: exponential backoff that honours ``Retry-After``."""

from __future__ import annotations

from typing import Final

MIN_DELAY_SEC: Final = 1.0
MAX_DELAY_SEC: Final = 30.0
# 2**5 already passes the ceiling; capping the exponent keeps the float small for long waits.
_MAX_EXPONENT: Final = 5


def backoff_delay(attempt: int) -> float:
    """Seconds before poll number ``attempt + 1``: 1, 2, 4, 8, 16, then 30 from then on."""
    doubling: int = 2 ** min(attempt, _MAX_EXPONENT)  # typeshed: int ** int is Any (negative powers)
    return min(MAX_DELAY_SEC, MIN_DELAY_SEC * doubling)


def poll_delay(attempt: int, retry_after: float | None, cap: float | None = None) -> float:
    """The backoff, or longer when the service asked for it with ``Retry-After``.

    ``Retry-After`` is a floor, never shortened: the service may know it is busy (429, 503)
    or that the task is a long one. With ``cap``, neither the backoff nor the ``Retry-After``
    of a running task's answer makes a pause longer than ``cap`` seconds (someone is watching a
    progress bar); callers pass ``retry_after`` of 429 and 503 answers as :func:`busy_delay`.
    """
    delay = max(backoff_delay(attempt), retry_after or 0.0)
    return delay if cap is None else min(delay, cap)


def busy_delay(attempt: int, retry_after: float | None, cap: float | None = None) -> float:
    """The pause after a 429 or 503: the (capped) backoff, or the ``Retry-After`` the service
    sent if that is longer. An overloaded service's ``Retry-After`` is never capped."""
    return max(poll_delay(attempt, None, cap), retry_after or 0.0)


def capacity_delay(attempt: int, retry_after: float | None, jitter: float) -> float:
    """The pause before submitting again after a ``429``: the ``Retry-After`` the service sent
    (the API gateway's own throttling sends none: then the backoff), plus up to half again at
    random (``jitter`` in [0, 1)), so the clients refused in the same second do not all return in
    the same second."""
    base = retry_after if retry_after is not None else backoff_delay(attempt)
    return base * (1 + 0.5 * jitter)
