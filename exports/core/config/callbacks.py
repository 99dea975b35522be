"""Callback delivery."""

from __future__ import annotations

from typing import Final


class Callback:
    """Callback delivery (its retries: :data:`exports.core.config.retry.CALLBACK_RETRY`)."""

    REQUEST_TIMEOUT_SEC: Final = 5
    # Errors the workflow retries on CALLBACK_RETRY's schedule (the callback function raises them).
    RETRYABLE_ERROR: Final = "CallbackRetryable"
