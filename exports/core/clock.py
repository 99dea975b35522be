"""The clock every service reads unless a test gives it another."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Annotations only: the lifecycle function, which has neither, does not import them.
    pass


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
