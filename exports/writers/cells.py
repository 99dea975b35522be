"""Cell-level rules shared by every writer."""

from __future__ import annotations

from typing import Any

# A spreadsheet treats text starting with these as a formula (CSV/formula injection, OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula gets a leading apostrophe; other values
    pass through unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value
