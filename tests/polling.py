"""One way for tests to wait for something that happens in another thread or process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def poll_until(
    read: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout_sec: float,
    interval_sec: float = 0.1,
    fail: str | None = None,
) -> T:
    """Call ``read`` every ``interval_sec`` until ``until`` holds for its value (by default: the
    value is truthy) and return that value. At the deadline: ``pytest.fail(fail)`` when ``fail``
    is given, otherwise the last value read, for callers that assert on it themselves."""
    deadline = time.monotonic() + timeout_sec
    while True:
        value = read()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            if fail is not None:
                pytest.fail(fail)
            return value
        time.sleep(interval_sec)
