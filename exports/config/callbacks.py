"""Callback delivery."""

from __future__ import annotations

from typing import Final


class Callback:
    """Callback delivery: the first attempt, then retries 1 s, 4 s and 16 s later."""

    RETRY_INTERVAL_SEC: Final = 1
    RETRY_BACKOFF_RATE: Final = 4
    MAX_RETRIES: Final = 3
    REQUEST_TIMEOUT_SEC: Final = 5
    # Errors the workflow retries with the schedule above (the callback function raises them).
    RETRYABLE_ERROR: Final = "CallbackRetryable"
