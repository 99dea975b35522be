"""A page of CSV rows built column by column in Arrow: the bytes ``csv.writer`` writes for the
row encoder of :mod:`exports.writers.csv_writer`, without a Python call per cell on the usual
values (docs/performance.md, "Third round").

Each column of the page becomes an Arrow string array of its fields' text (C loops: ``str`` or
``repr`` mapped over the values, Arrow's casts), text columns get the formula guard and
``csv.writer``'s minimal quoting with :mod:`pyarrow.compute`, and the columns are joined into
lines whose concatenated data is the page's CSV. A column whose values are not all of its kind's
usual class (or None), or whose text this route would write differently (a float or decimal
written with an exponent), goes through the row encoder's per-value text instead; a page with one
column (``csv.writer`` quotes a lone empty field) or whose values Arrow refuses (a lone surrogate,
an integer past 64 bits) returns None, and the caller writes it with ``csv.writer``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from decimal import Decimal
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from exports.export_types.base import Column, ColumnKind, Row
from exports.writers.cells import FORMULA_TRIGGERS

_NONE = type(None)
# Fewer rows go through csv.writer: Arrow's few dozen calls a page would cost more than they save.
MIN_ROWS = 32
# csv.writer's QUOTE_MINIMAL with the excel dialect and "\r\n" lines: a field holding the
# delimiter, the quote or a line break is quoted (checked over every code point).
_NEEDS_QUOTES = '[,"\r\n]'
_TRIGGER = "^[" + "".join("\\" + char if char in "-\\^]" else char for char in FORMULA_TRIGGERS) + "]"
# An aware datetime: Arrow would write it in UTC, csv_text writes its wall time.
_TZINFO = attrgetter("tzinfo")


def _texts(values: Sequence[Any], text: Callable[[Any], str]) -> pa.StringArray:
    """``text`` of each value, None where the value is None (csv.writer writes it empty)."""
    array = pa.array(list(map(text, values)), pa.string())
    return pc.if_else(pc.equal(array, "None"), pa.scalar(None, pa.string()), array)


def _numbers(values: Sequence[Any], classes: set[type]) -> pa.StringArray | None:
    # repr of a float without an exponent, str of a Decimal without one, is csv_text's text;
    # nan, inf and exponents ("e", "E") are not.
    texts = _texts(values, repr if float in classes else str)
    pattern = "[EeNn]" if float in classes else "E"
    return None if pc.any(pc.match_substring_regex(texts, pattern)).as_py() else texts


def _column(values: Sequence[Any], kind: ColumnKind) -> pa.StringArray | None:
    """The column's fields as csv_text writes them (unquoted, unguarded), or None when the
    values are not what this route writes exactly."""
    classes = set(map(type, values)) - {_NONE}
    if kind in (ColumnKind.STRING, ColumnKind.JSON) and classes <= {str}:
        return pa.array(values, pa.string())
    if kind is ColumnKind.INTEGER and classes <= {int}:
        return pc.cast(pa.array(values, pa.int64()), pa.string())
    if kind in (ColumnKind.FLOAT, ColumnKind.DECIMAL) and (classes <= {float} or classes <= {Decimal}):
        return _numbers(values, classes)
    if kind is ColumnKind.DATE and classes <= {date}:
        return pc.cast(pa.array(values, pa.date32()), pa.string())
    if kind is ColumnKind.DATETIME and classes <= {datetime} and set(map(_TZINFO, filter(None, values))) <= {None}:
        # Naive: Arrow's text with six decimals always, str()'s without them when they are 0.
        texts = pc.cast(pa.array(values, pa.timestamp("us")), pa.string())
        return pc.replace_substring_regex(texts, r"\.000000$", "")
    if kind is ColumnKind.BOOLEAN and classes <= {bool}:
        return pc.if_else(pa.array(values, pa.bool_()), "True", "False")
    return None


def page_bytes(
    columns: Sequence[Column],
    rows: Sequence[Row],
    encode_rows: Callable[[Sequence[Row]], list[tuple[Any, ...]]],
    guard: bool,
) -> bytes | None:
    """The CSV lines of ``rows`` as UTF-8, what ``csv.writer`` writes for ``encode_rows(rows)``
    (the row encoder of the same ``guard``); None when the caller must write them that way."""
    if len(columns) < 2 or len(rows) < MIN_ROWS:
        return None
    try:
        return _page(columns, rows, encode_rows, guard)
    except (pa.ArrowException, UnicodeEncodeError, OverflowError):
        return None


def _page(
    columns: Sequence[Column],
    rows: Sequence[Row],
    encode_rows: Callable[[Sequence[Row]], list[tuple[Any, ...]]],
    guard: bool,
) -> bytes:
    by_column = list(zip(*rows, strict=True))
    if len(by_column) != len(columns):
        raise ValueError(f"a row of {len(by_column)} values for {len(columns)} columns")
    encoded: list[tuple[Any, ...]] | None = None
    fields = []
    for index, (values, column) in enumerate(zip(by_column, columns, strict=True)):
        array = _column(values, column.kind)
        text = column.kind in (ColumnKind.STRING, ColumnKind.JSON)
        if array is None:
            # The row encoder's values (guarded already), as csv.writer writes them: str().
            encoded = encoded if encoded is not None else list(zip(*encode_rows(rows), strict=True))
            array = pa.array([None if value is None else str(value) for value in encoded[index]], pa.string())
            text = True
        elif text and guard:
            array = pc.if_else(
                pc.match_substring_regex(array, _TRIGGER), pc.binary_join_element_wise("'", array, ""), array
            )
        if text:
            quoted = pc.binary_join_element_wise('"', pc.replace_substring(array, '"', '""'), '"', "")
            array = pc.if_else(pc.match_substring_regex(array, _NEEDS_QUOTES), quoted, array)
        fields.append(pc.fill_null(array, ""))
    lines = pc.binary_join_element_wise(pc.binary_join_element_wise(*fields, ","), "\r\n", "")
    # No nulls are left and the array is fresh (offset 0): its data buffer is the lines, in order.
    offsets, data = lines.buffers()[1:]
    end = int.from_bytes(offsets[4 * len(lines) : 4 * len(lines) + 4], "little")
    return data[:end].to_pybytes()
