"""Sheet rows as SpreadsheetML text, from per-column cell templates.

For the export's columns, one function is generated (like the CSV row encoder): it unpacks each
row into one local per column and builds the row from each column's template with an inline test
for the usual value (a ``str`` that needs no escaping, an ``int``, a finite ``Decimal``, a
``date``, a naive ``datetime``, a ``bool``). Anything else (None aside: no cell) goes through
:func:`cell`, which handles every value of every type and is what the templates must equal.
Per-cell calls and per-cell type dispatch are what a general writer spends its time on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from enum import IntEnum
from typing import Any

from exports.core.csv_dialect import FORMULA_TRIGGERS
from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.cells import (
    MAX_CELL_TEXT,
    MAX_EXACT_INTEGER,
    CellTooLong,
    exact_double,
    looks_like_formula,
    plain_number,
    serial_text,
    xml_safe,
    xstring,
)


class Style(IntEnum):
    """Cell formats: their index in ``cellXfs`` of ``xl/styles.xml`` (see ``parts.py``)."""

    NONE = 0
    HEADER = 1
    DATE = 2
    DATETIME = 3
    DECIMAL = 4
    # Text that looks like a formula: stored as it is, with the quotePrefix style (so it stays
    # text when a user edits the cell) instead of CSV's leading apostrophe.
    QUOTED = 5
    # A date and time with sub-seconds: shown to the millisecond, Excel's precision.
    DATETIME_MS = 6
    # A float (in a float column, or in a decimal one): shown with every decimal it has (up to
    # 15), not two.
    FLOAT = 7


COLUMN_STYLES = {
    ColumnKind.DATE: Style.DATE,
    ColumnKind.DATETIME: Style.DATETIME,
    ColumnKind.DECIMAL: Style.DECIMAL,
    ColumnKind.FLOAT: Style.FLOAT,
}
_DATE_STYLES = (Style.DATE, Style.DATETIME, Style.DATETIME_MS)

# Serial numbers of the 1900 date system: days since 1899-12-30. Excel counts 1900-02-29,
# which did not exist, so days before 1900-03-01 are one less (as openpyxl writes them).
_EPOCH = datetime(1899, 12, 30)
_EPOCH_ORDINAL = _EPOCH.toordinal()
_FIRST_EXACT_SERIAL = 61  # 1900-03-01
_DAY = timedelta(days=1)
_XML_SPACE = (" ", "\t", "\n", "\r")


def column_letter(index: int) -> str:
    """A, B, ..., Z, AA, ... for the 0-based column ``index``."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def column_index(letters: str) -> int:
    """The 0-based index of the column ``letters`` (the inverse of :func:`column_letter`)."""
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - 64
    return index - 1


def date_serial(value: date) -> int | float:
    """The serial number of a date or datetime (a time zone is dropped: the wall time counts,
    as in CSV)."""
    if isinstance(value, datetime):
        days = (value.replace(tzinfo=None) - _EPOCH) / _DAY
        return days - 1 if 1 <= days < _FIRST_EXACT_SERIAL else days
    days = value.toordinal() - _EPOCH_ORDINAL
    return days - 1 if 0 < days < _FIRST_EXACT_SERIAL else days


def _escaped(stored: str) -> str:
    """Stored text as the content of ``<t>``: escaped for XML, with carriage returns kept (an XML
    reader turns a raw one into a line feed)."""
    return stored.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def text_cell(value: str, ref: str) -> str:
    """An inline string cell, styled ``quotePrefix`` when the text looks like a formula (an
    inline string is never one: the style only keeps it text if the cell is edited); empty text
    gives no cell."""
    return _inline(value, ref, f' s="{int(Style.QUOTED)}"' if looks_like_formula(value) else "")


def _inline(text: str, ref: str, styled: str) -> str:
    """The inline string cell of ``text`` as the cell stores it (:func:`xstring`); no cell when
    nothing is left."""
    try:
        stored = xstring(text)
    except CellTooLong as error:
        letters = ref.rstrip("0123456789")
        raise CellTooLong(error.length, column_index(letters), int(ref[len(letters) :])) from None
    if not stored:
        return ""
    space = ' xml:space="preserve"' if stored.startswith(_XML_SPACE) or stored.endswith(_XML_SPACE) else ""
    return f'<c r="{ref}"{styled} t="inlineStr"><is><t{space}>{_escaped(stored)}</t></is></c>'


def cell(value: Any, ref: str, style: int) -> str:
    """The cell ``ref`` for any value in a column of cell format ``style``: None and empty text
    give no cell; numbers a double holds exactly, dates from 1900-03-01 and booleans are typed;
    other numbers and dates are their CSV text (every digit; ISO 8601), as text; text is stored
    exactly (:func:`xstring`); any other value is its ``str()`` as text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return text_cell(value, ref)
    if isinstance(value, bool):
        return f'<c r="{ref}" t="b"><v>{int(value)}</v></c>'
    if isinstance(value, date):
        text = serial_text(value)
        if text is not None:
            return text_cell(text, ref)
        if isinstance(value, datetime):
            return _datetime(value, ref, style)
        return _number(date_serial(value), ref, style if style in _DATE_STYLES else Style.DATE)
    if isinstance(value, int | float | Decimal):
        return _numeric(value, ref, style)
    return text_cell(str(value), ref)


def _numeric(value: float | Decimal, ref: str, style: int) -> str:
    """A number cell when a double holds ``value`` exactly (a float in a decimal column shows
    every decimal it has), else its CSV text."""
    number = exact_double(value)
    if number is None:
        return text_cell(plain_number(value), ref)
    return _number(number, ref, Style.FLOAT if isinstance(value, float) and style == Style.DECIMAL else style)


def _datetime(value: datetime, ref: str, style: int) -> str:
    """A date and time from 1900-03-01: to the millisecond (Excel's precision; cut, never
    rounded up into the next second), shown with its milliseconds when it has any."""
    milliseconds = value.microsecond // 1000
    moment = value.replace(microsecond=milliseconds * 1000)
    if milliseconds:
        return _number(date_serial(moment), ref, Style.DATETIME_MS)
    return _number(date_serial(moment), ref, style if style in _DATE_STYLES else Style.DATETIME)


def _number(value: Any, ref: str, style: int) -> str:
    styled = f' s="{style}"' if style else ""
    return f'<c r="{ref}"{styled}><v>{value}</v></c>'


def header_row(columns: Sequence[Column]) -> str:
    """Row 1: the headers in bold (as given: headers are the export type's own text)."""
    bold = f' s="{int(Style.HEADER)}"'
    cells = (_inline(xml_safe(column.header), f"{column_letter(index)}1", bold) for index, column in enumerate(columns))
    return f'<row r="1">{"".join(cells)}</row>'


# Per column kind: the test for the usual value and the f-string of the cell it gives. ``$v`` is
# the value's local, ``$L`` the column's letter, ``$s`` its cell format (filled in once, when the
# encoder is made); ``{n}`` is the row number. A value that fails the test goes to cell(); None
# gives no cell. Text takes a template when it needs nothing escaped: printable (no control
# characters, tabs or line breaks), no markup character, no "_x", not empty; the first template
# when it has no leading formula trigger and no leading or trailing space, the second (which tests
# again) otherwise, with the quotePrefix style and xml:space as :func:`_inline` gives them.
_FAST_CELLS: dict[ColumnKind, tuple[tuple[str, str], ...]] = {
    ColumnKind.STRING: (
        (
            "$v.__class__ is str and $v[:1] not in _LEAD and $v[-1:] != ' ' and $v.isprintable()"
            " and '&' not in $v and '<' not in $v and '>' not in $v and '_x' not in $v and len($v) <= _SHORT",
            '<c r="$L{n}" t="inlineStr"><is><t>{$v}</t></is></c>',
        ),
        (
            "$v.__class__ is str and $v and $v.isprintable()"
            " and '&' not in $v and '<' not in $v and '>' not in $v and '_x' not in $v and len($v) <= _SHORT",
            '<c r="$L{n}"{_QUOTED if $v[:1] in _TRIGGERS else _NO} t="inlineStr">'
            "<is><t{_PRESERVE if $v[:1] == _SPACE or $v[-1:] == _SPACE else _NO}>{$v}</t></is></c>",
        ),
    ),
    ColumnKind.INTEGER: (("$v.__class__ is int and -_EXACT <= $v <= _EXACT", '<c r="$L{n}"><v>{$v}</v></c>'),),
    ColumnKind.DECIMAL: (
        # At most 15 significant digits and no exponent: a double holds it. 16 characters hold 16
        # digits when there is neither sign nor point (9007199254740993, no double's value).
        (
            "$v.__class__ is _Decimal and (len(_t := str($v)) <= 15 or (len(_t) == 16 and not _t.isdigit()))"
            " and 'E' not in _t and $v.is_finite()",
            '<c r="$L{n}" s="$s"><v>{_t}</v></c>',
        ),
        # A finite float (x - x is NaN for NaN and the infinities): its repr reads back as it is.
        ("$v.__class__ is float and $v - $v == 0.0", '<c r="$L{n}" s="$f"><v>{$v!r}</v></c>'),
    ),
    ColumnKind.DATE: (
        (
            "$v.__class__ is _date and (_o := $v.toordinal() - _EPOCH_ORDINAL) >= _FIRST_EXACT_SERIAL",
            '<c r="$L{n}" s="$s"><v>{_o}</v></c>',
        ),
    ),
    # Whole seconds: the day, then the time of day in ten decimals (Excel keeps 15 digits), both
    # from one subtraction (a naive datetime's; an aware one would raise, so tzinfo comes first).
    ColumnKind.DATETIME: (
        (
            "$v.__class__ is _datetime and $v.tzinfo is None and not (_d := $v - _EPOCH).microseconds"
            " and (_o := _d.days) >= _FIRST_EXACT_SERIAL",
            '<c r="$L{n}" s="$s"><v>{_o}.{(_d.seconds * 10_000_000_000 + 43_200) // 86_400:010d}</v></c>',
        ),
    ),
    ColumnKind.BOOLEAN: (
        ("$v is True", '<c r="$L{n}" t="b"><v>1</v></c>'),
        ("$v is False", '<c r="$L{n}" t="b"><v>0</v></c>'),
    ),
}
# JSON is text in a workbook; a float column's cells are numbers as a decimal column's are (its
# style shows every digit).
_FAST_CELLS[ColumnKind.JSON] = _FAST_CELLS[ColumnKind.STRING]
_FAST_CELLS[ColumnKind.FLOAT] = _FAST_CELLS[ColumnKind.DECIMAL][::-1]
# The text templates' constants are names: a template is written into the encoder as a literal,
# where an f-string's expressions (3.11) can hold no quote of its own kind and no backslash.
_PRINTABLE_TRIGGERS = "".join(trigger for trigger in FORMULA_TRIGGERS if trigger.isprintable())
_NAMESPACE: dict[str, Any] = {
    "_LEAD": _PRINTABLE_TRIGGERS + " ",
    "_TRIGGERS": _PRINTABLE_TRIGGERS,
    "_SPACE": " ",
    "_NO": "",
    "_QUOTED": f' s="{int(Style.QUOTED)}"',
    "_PRESERVE": ' xml:space="preserve"',
    "_Decimal": Decimal,
    "_date": date,
    "_datetime": datetime,
    "_EPOCH": _EPOCH,
    "_EPOCH_ORDINAL": _EPOCH_ORDINAL,
    "_FIRST_EXACT_SERIAL": _FIRST_EXACT_SERIAL,
    "_EXACT": MAX_EXACT_INTEGER,
    # Text this short is within Excel's limit whatever its characters (UTF-16 code units).
    "_SHORT": MAX_CELL_TEXT // 2,
    "_cell": cell,
}

RowsEncoder = Callable[[Sequence[Row], int], str]


def rows_encoder(columns: Sequence[Column]) -> RowsEncoder:
    """``encode(rows, last)``: the XML of ``rows`` numbered from ``last + 1``. A row of the
    wrong length raises ``ValueError``."""
    if not columns:
        return lambda rows, last: "".join(f'<row r="{last + number}"/>' for number in range(1, len(rows) + 1))
    names = [f"c{index}" for index in range(len(columns))]
    cells = ", ".join(_cell_expression(names[index], index, column) for index, column in enumerate(columns))
    source = (
        "def encode(rows, r):\n"
        "    parts = []\n"
        "    add = parts.extend\n"
        f"    for ({', '.join(names)},) in rows:\n"
        "        r += 1\n"
        "        n = str(r)\n"
        f"        add((f'<row r=\"{{n}}\">', {cells}, '</row>'))\n"
        "    return ''.join(parts)\n"
    )
    namespace = dict(_NAMESPACE)
    exec(compile(source, "<xlsx row encoder>", "exec"), namespace)  # fixed templates, no input in the code
    encode: RowsEncoder = namespace["encode"]
    return encode


def _cell_expression(name: str, index: int, column: Column) -> str:
    """The expression giving the cell of the local ``name`` (column ``index``) in row ``n``.

    A cell's reference (``r``) is optional in SpreadsheetML: without one a cell is the one after
    the previous cell of its row (ECMA-376 Part 1, 18.3.1.4). A fast-path cell leaves it out when
    it surely follows its neighbour: in the first column, or when the previous column's value
    took its fast path too (flag ``_k<index>``, which always gives a cell). After None, empty
    text or any value of the general path, it keeps its reference. A fifth of the sheet's XML
    and a third of its deflated bytes on the bench's rows (docs/performance.md)."""
    letter, style = column_letter(index), int(COLUMN_STYLES.get(column.kind, Style.NONE))
    fields = (("$v", name), ("$L", letter), ("$s", str(style)), ("$f", str(int(Style.FLOAT))))
    flag = f"_k{index}"
    fast = ""
    for fast_test, fast_template in _FAST_CELLS[column.kind]:
        test, template = fast_test, fast_template
        for field, value in fields:
            test, template = test.replace(field, value), template.replace(field, value)
        implied = template.replace(f' r="{letter}{{n}}"', "", 1)
        placed = f"f{implied!r}" if index == 0 else f"(f{implied!r} if _k{index - 1} else f{template!r})"
        fast += f"(({flag} := 1) and {placed}) if {test} else "
    return (
        f"((({flag} := 0) or '') if {name} is None else {fast}"
        f"(({flag} := 0) or _cell({name}, {letter!r} + n, {style})))"
    )
