"""A value as the PDF table shows it: as an XLSX cell of the same column displays it.

Numbers a double holds exactly are shown in the column's number format (``#,##0.00`` in a
decimal column, all digits elsewhere, Excel's General without its exponent); other numbers as
their exact text. Dates ``yyyy-mm-dd`` and date-times ``yyyy-mm-dd hh:mm:ss`` (``.000`` when
they have milliseconds; cut, never rounded), by the column's kind as in XLSX; dates before
1900-03-01, which a serial cannot hold, as their CSV text. Booleans TRUE and FALSE, as Excel
shows them. Text as it is; anything else as its ``str()``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from exports.core.export_type import ColumnKind
from exports.running.writers.cells import exact_double, plain_number, serial_text

# Kinds whose values are aligned right (numbers, and dates and times, as a spreadsheet does).
RIGHT_ALIGNED = frozenset(
    {ColumnKind.INTEGER, ColumnKind.DECIMAL, ColumnKind.FLOAT, ColumnKind.DATE, ColumnKind.DATETIME}
)


def formatter(kind: ColumnKind) -> Callable[[Any], str]:
    """The function showing a value of a column of ``kind``."""
    decimal = kind is ColumnKind.DECIMAL
    day_only = kind is ColumnKind.DATE
    time_too = kind is ColumnKind.DATETIME

    def show(value: Any) -> str:
        if value is None:
            return ""
        kind_of = value.__class__
        if kind_of is str:
            text: str = value
            return text
        if kind_of is bool:
            return "TRUE" if value else "FALSE"
        if kind_of is int or kind_of is float or kind_of is Decimal:
            if exact_double(value) is None:
                return plain_number(value)
            if kind_of is float:
                return every_digit(value)
            return f"{value:,.2f}" if decimal else plain_number(value)
        if isinstance(value, date):
            return _moment(value, day_only, time_too)
        return str(value)

    return show


def every_digit(value: float) -> str:
    """A float as XLSX shows one (``#,##0.0##...``): grouped, every decimal it has, at least one."""
    whole, _, decimals = plain_number(value).partition(".")
    return f"{int(whole):,}.{decimals or '0'}" if whole != "-0" else f"-0.{decimals or '0'}"


def _moment(value: date, day_only: bool, time_too: bool) -> str:
    text = serial_text(value)
    if text is not None:
        return text
    if isinstance(value, datetime):
        milliseconds = value.microsecond // 1000
        if milliseconds:
            return f"{value:%Y-%m-%d %H:%M:%S}.{milliseconds:03d}"
        return f"{value:%Y-%m-%d}" if day_only else f"{value:%Y-%m-%d %H:%M:%S}"
    return f"{value:%Y-%m-%d} 00:00:00" if time_too else f"{value:%Y-%m-%d}"
