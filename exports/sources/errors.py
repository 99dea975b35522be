"""Errors any source kind raises: a source that cannot be reached for now (the export is tried again)."""

from __future__ import annotations

from exports.core.errors import (
    RetryableError,
)


class SourceUnavailable(RetryableError):
    """The database cannot be reached or refuses connections for now: the task is retried."""

    code = "SOURCE_UNAVAILABLE"
