"""Cell-level rules shared by every writer."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from exports.export_types.base import Column, ColumnKind, Row

# A spreadsheet treats text starting with these as a formula (CSV/formula injection, OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


# XML 1.0 cannot carry these: control characters (the set openpyxl refuses), and lone
# surrogates, U+FFFE and U+FFFF (lxml refuses them: one in a value failed the export).
ILLEGAL_XML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: Any) -> Any:
    """Text without the characters a spreadsheet cannot hold; other values unchanged."""
    if isinstance(value, str):
        return ILLEGAL_XML_CHARACTERS.sub("", value)
    return value


def neutralise(value: Any) -> Any:
    """CSV's formula guard: text that a spreadsheet would run as a formula gets a leading
    apostrophe; other values pass through unchanged. (XLSX needs no such change: a text cell is
    never a formula; it gets the ``quotePrefix`` style instead, so it stays text when edited.)"""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def looks_like_formula(value: str) -> bool:
    """Whether a spreadsheet would read ``value``, typed into a cell, as a formula."""
    return value.startswith(FORMULA_TRIGGERS)


# Column widths in characters: at least the header's (plus room for the filter button), at most
# this, whatever the data; fitted to the first rows of the export.
MAX_COLUMN_WIDTH = 60
MIN_COLUMN_WIDTH = 8
FILTER_BUTTON_WIDTH = 3
# How many data rows the widths are measured on (the rows are streamed: later ones are not known
# when the widths are written, before the first row).
WIDTH_SAMPLE_ROWS = 1000
_DISPLAY_WIDTHS = {ColumnKind.DATE: 10, ColumnKind.DATETIME: 19, ColumnKind.BOOLEAN: 5}


def display_width(value: Any) -> int:
    """How many character widths ``value`` takes as the sheet shows it (wide East Asian
    characters count twice; of several lines, the longest)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 5
    if isinstance(value, datetime):
        return 19
    if isinstance(value, date):
        return 10
    if isinstance(value, Decimal):
        return len(f"{value:,.2f}") if value.is_finite() else len(str(value))
    text = value if isinstance(value, str) else str(value)
    return max(
        (sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line) for line in text.splitlines()),
        default=0,
    )


def fitted_widths(columns: Sequence[Column], rows: Iterable[Row]) -> list[int]:
    """A width per column fitted to its header and the values in ``rows``, within
    [:data:`MIN_COLUMN_WIDTH`, :data:`MAX_COLUMN_WIDTH`] (plus one character of padding)."""
    widths = [max(MIN_COLUMN_WIDTH, display_width(column.header) + FILTER_BUTTON_WIDTH) for column in columns]
    fixed: list[int | None] = [_DISPLAY_WIDTHS.get(column.kind) for column in columns]
    for row in rows:
        for index, value in enumerate(row):
            if index < len(widths) and widths[index] < MAX_COLUMN_WIDTH:
                known = fixed[index]
                width = known if known is not None and value is not None else display_width(value)
                widths[index] = max(widths[index], width + 1)
    return [min(width, MAX_COLUMN_WIDTH) for width in widths]
