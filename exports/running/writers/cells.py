"""Cell-level rules shared by every writer."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from exports.core.csv_dialect import FORMULA_TRIGGERS
from exports.core.export_type import Column, ColumnKind, Row

# XML 1.0 cannot carry these: control characters (the set openpyxl refuses), and lone
# surrogates, U+FFFE and U+FFFF (lxml refuses them: one in a value failed the export).
ILLEGAL_XML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

# Of those, what a spreadsheet cell still holds, written as Excel's "_xHHHH_" (ECMA-376
# ST_Xstring); lone surrogates cannot be UTF-8 at all (no database source produces them).
_ESCAPED_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

_LONE_SURROGATES = re.compile("[\ud800-\udfff]")

# A literal "_xHHHH_" in the text: its "_" is escaped, or a reader would decode it.
_XSTRING_LITERAL = re.compile("_(?=x[0-9A-Fa-f]{4}_)")

# Excel's limit of a cell's text, in UTF-16 code units.
MAX_CELL_TEXT = 32_767

# How a float in a decimal column is shown: every decimal it has (up to the 15 digits Excel
# keeps), not a decimal's two; the cell holds the exact double either way.
FLOAT_NUMBER_FORMAT = "#,##0.0##############"

# Excel holds numbers as IEEE doubles: integers past this are not all exact.
MAX_EXACT_INTEGER = 2**53

# The 1900 date system numbers days from 1900-03-01 on correctly (it counts a 1900-02-29 that
# never was; earlier dates have no serial): earlier dates are written as text.
FIRST_SERIAL_DAY = date(1900, 3, 1)


class CellTooLong(ValueError):
    """Text longer than a spreadsheet cell holds: the export fails rather than cut it. ``column``
    (0-based) and ``row`` (1-based, the header is row 1) say where, when the writer knows."""

    def __init__(self, length: int, column: int | None = None, row: int | None = None) -> None:
        super().__init__(f"a text of {length:,} characters; an XLSX cell holds at most {MAX_CELL_TEXT:,}")
        self.length = length
        self.column = column
        self.row = row


def xml_safe(value: Any) -> Any:
    """Text without the characters a spreadsheet cannot hold; other values unchanged."""
    if isinstance(value, str):
        return ILLEGAL_XML_CHARACTERS.sub("", value)
    return value


def xstring(text: str) -> str:
    """``text`` as a cell stores it (ECMA-376 ST_Xstring): control characters as ``_xHHHH_``, a
    literal ``_xHHHH_`` with its ``_`` escaped, so readers (Excel, LibreOffice, calamine) give
    back exactly ``text``. :class:`CellTooLong` past Excel's limit."""
    if len(text) > MAX_CELL_TEXT // 2 and len(text.encode("utf-16-le", "surrogatepass")) // 2 > MAX_CELL_TEXT:
        raise CellTooLong(len(text))
    if "_x" in text:
        text = _XSTRING_LITERAL.sub("_x005F_", text)
    if not text.isprintable():
        text = _LONE_SURROGATES.sub("", text)
        text = _ESCAPED_CHARACTERS.sub(lambda match: f"_x{ord(match.group()):04X}_", text)
    return text


def plain_number(value: int | float | Decimal) -> str:
    """A number as CSV writes it, and as a spreadsheet stores one it cannot hold exactly: every
    digit, no exponent; NaN and infinities as PostgreSQL spells them."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        value = Decimal(repr(value))
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def exact_double(value: int | float | Decimal) -> str | None:
    """The text of a number cell that holds ``value`` exactly (an IEEE double reads back as the
    same number), or None when no double does: the cell then holds :func:`plain_number`."""
    if isinstance(value, int):
        return str(value) if -MAX_EXACT_INTEGER <= value <= MAX_EXACT_INTEGER else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if not value.is_finite():
        return None
    as_double = float(value)
    if not math.isfinite(as_double) or Decimal(repr(as_double)) != value:
        return None
    return repr(as_double)


def serial_text(value: date) -> str | None:
    """A date or datetime a serial cannot hold, as CSV writes it (ISO 8601); None when it can."""
    day = value.date() if isinstance(value, datetime) else value
    if day >= FIRST_SERIAL_DAY:
        return None
    return value.replace(tzinfo=None).isoformat(" ") if isinstance(value, datetime) else value.isoformat()


def spreadsheet_value(value: Any) -> Any:
    """What a spreadsheet cell holds for ``value`` (the rules the stream engine's cells follow,
    for a library that writes cells itself): numbers a double holds exactly, dates from
    1900-03-01 (times to the millisecond, cut) and booleans as they are; other numbers and
    dates as their CSV text; text as :func:`xstring` stores it."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return xstring(value)
    if isinstance(value, int | float | Decimal):
        return value if exact_double(value) is not None else plain_number(value)
    if isinstance(value, date):
        text = serial_text(value)
        if text is not None:
            return text
        if isinstance(value, datetime) and value.microsecond % 1000:
            return value.replace(microsecond=value.microsecond // 1000 * 1000)
        return value
    return xstring(str(value))


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
