"""The clock every service reads unless a test gives it another."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
