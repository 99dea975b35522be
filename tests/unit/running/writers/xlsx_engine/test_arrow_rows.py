"""Sheet rows from Arrow batches (exports/running/writers/xlsx_engine/arrow_rows.py) are byte for byte
what the row encoder (rows.py) writes for the same Python values: on the values at every edge of
its templates, on generated ones, and across sheets; a whole workbook too."""

from __future__ import annotations

import io
import math
import struct
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import CellTooLong
from exports.running.writers.xlsx_engine import XlsxStream, workbook, write_xlsx_batches
from exports.running.writers.xlsx_engine.arrow_rows import ArrowRows, plain_text_pattern
from exports.running.writers.xlsx_engine.rows import rows_encoder

K = ColumnKind
COLUMNS = [
    Column("text", "Text", K.STRING),
    Column("count", "Count", K.INTEGER),
    Column("amount", "Amount", K.DECIMAL),
    Column("ratio", "Ratio", K.FLOAT),
    Column("day", "Day", K.DATE),
    Column("at", "At", K.DATETIME),
    Column("flag", "Flag", K.BOOLEAN),
    Column("doc", "Doc", K.JSON),
    Column("note", "Note", K.STRING),
]
_TYPES = {
    K.STRING: pa.string(),
    K.JSON: pa.string(),
    K.INTEGER: pa.int64(),
    K.DECIMAL: pa.string(),
    K.FLOAT: pa.float64(),
    K.DATE: pa.date32(),
    K.DATETIME: pa.timestamp("us"),
    K.BOOLEAN: pa.bool_(),
}
TEXTS = [
    None,
    "",
    "plain",
    "Chloé Martin",
    "王芳",
    "Иван",
    "=1+2",
    "+49 30",
    "-5 ",
    "@home",
    " lead",
    "trail ",
    " ",
    "a&b",
    "<b>",
    "x>y",
    "_x0041_",
    "a_xb",
    "__x",
    "_",
    "x_",
    "a_b_",
    "_X41",
    "tab\there",
    "line\nbreak",
    "cr\rhere",
    "\x00nul",
    "nb\u00a0sp",
    "soft\u00adhyphen",
    "zero\u200bwidth",
    "emoji 😀",
    "\ufffe",
    "quote \" and '",
    "back\\slash",
    "x" * 16_383,
    "y" * 16_384,
    "🙂" * 9000,
    "\t=tab first",
]
INTEGERS = [None, 0, 1, -1, 2**53, -(2**53), 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63)]
DECIMALS = [
    None,
    "0",
    "0.00",
    "12.30",
    "-7.5",
    "123456789012345",
    "1234567890123456",
    "12345678901234567",
    "0.000001",
    "0.0000001",
    "0.00000012",
    "0.0000000",
    "0.000000",
    "NaN",
    "Infinity",
    "-Infinity",
    "1000",
    "-0.5",
]
FLOATS = [
    None,
    0.0,
    -0.0,
    1.0,
    -2.5,
    0.1,
    1e-4,
    9.99e-5,
    1e-5,
    1e15,
    1e16 - 2,
    1e16,
    1e21,
    123456789.125,
    5e-324,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
    22026479527.0,
    22026479526.501476,
]
DAYS = [
    None,
    date(1900, 3, 1),
    date(1900, 2, 28),
    date(1899, 12, 30),
    date(1, 1, 1),
    date(9999, 12, 31),
    date(2026, 1, 31),
    date(1970, 1, 1),
    date(1969, 12, 31),
]
MOMENTS = [
    None,
    datetime(2026, 1, 31, 8, 0, 0),
    datetime(2026, 1, 31, 23, 59, 59),
    datetime(1900, 3, 1),
    datetime(1900, 2, 28, 23, 59, 59),
    datetime(1969, 12, 31, 23, 59, 59),
    datetime(2026, 1, 31, 8, 0, 0, 500),
    datetime(2026, 1, 31, 8, 0, 0, 123000),
    datetime(1, 1, 1),
    datetime(9999, 12, 31, 23, 59, 59),
    datetime(9999, 12, 31, 23, 59, 59, 999999),
    datetime(1970, 1, 1),
]
BOOLEANS = [None, True, False]
# Values only the tuple reader holds as text (PostgreSQL's infinities, BC, years past 9999).
DATE_TEXTS = ["infinity", "-infinity", "0044-03-15 BC", "10000-01-01"]
MOMENT_TEXTS = ["infinity", "-infinity", "0044-03-15 10:00:00 BC", "10000-01-01 00:00:00"]


def _python_value(column: Column, value: Any) -> Any:
    if column.kind is K.DECIMAL and value is not None:
        return Decimal(value)
    return value


def batch_of(columns: list[Column], rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """The Arrow batch the reader would give for ``rows`` (decimals as text; a str in a date or
    date-time column is a text no Python value holds: the value is garbage, the text beside it)."""
    arrays, texts = [], []
    for index, column in enumerate(columns):
        values = [row[index] for row in rows]
        if column.kind in (K.DATE, K.DATETIME):
            texts.append(pa.array([value if isinstance(value, str) else None for value in values], pa.string()))
            garbage: Any = date(9999, 1, 1) if column.kind is K.DATE else datetime(1, 1, 1, 0, 0, 0, 1)
            values = [garbage if isinstance(value, str) else value for value in values]
        arrays.append(pa.array(values, _TYPES[column.kind]))
    names = [column.name for column in columns] + [f"text{index}" for index in range(len(texts))]
    return pa.record_batch(arrays + texts, names=names)


def python_rows(columns: list[Column], rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple(_python_value(column, value) for column, value in zip(columns, row, strict=True)) for row in rows]


def assert_same_rows(columns: list[Column], rows: list[tuple[Any, ...]], last: int = 1) -> None:
    batch = batch_of(columns, rows)
    arrow_rows = ArrowRows(columns)
    # repr: Decimal('NaN') and float NaN are not equal to themselves
    assert repr(arrow_rows.python_rows(batch)) == repr(python_rows(columns, rows))
    expected = rows_encoder(columns)(python_rows(columns, rows), last).encode()
    assert arrow_rows.encode(batch, last).between(0, len(rows)) == expected


def edge_rows() -> list[tuple[Any, ...]]:
    """Every edge value of every column, each in a row of ordinary values (and a row of NULLs)."""
    ordinary: tuple[Any, ...] = (
        "a",
        1,
        "1.50",
        2.5,
        date(2026, 1, 2),
        datetime(2026, 1, 2, 3, 4, 5),
        True,
        '{"a": 1}',
        "n",
    )
    pools: list[list[Any]] = [
        TEXTS,
        INTEGERS,
        DECIMALS,
        FLOATS,
        DAYS + DATE_TEXTS,
        MOMENTS + MOMENT_TEXTS,
        BOOLEANS,
        TEXTS,
        TEXTS,
    ]
    rows = [ordinary, (None,) * len(ordinary)]
    for index, pool in enumerate(pools):
        for value in pool:
            rows.append((*ordinary[:index], value, *ordinary[index + 1 :]))
            # and after a column with no cell: the edge value's cell takes its reference
            if index:
                rows.append((*ordinary[: index - 1], None, value, *ordinary[index + 1 :]))
    return rows


def test_every_edge_value_gives_the_row_encoders_xml() -> None:
    rows = [row for row in edge_rows() if not any(isinstance(v, str) and len(v) > 16_383 for v in row)]
    assert_same_rows(COLUMNS, rows)


def test_rows_are_numbered_from_the_first_given() -> None:
    assert_same_rows(COLUMNS, edge_rows()[:50], last=1_048_500)


def test_a_text_no_cell_holds_raises_as_the_row_encoder_does() -> None:
    columns = [Column("text", "Text", K.STRING)]
    batch = batch_of(columns, [("ok",), ("🙂" * 20_000,)])
    with pytest.raises(CellTooLong) as raised:
        ArrowRows(columns).encode(batch, 1).between(0, 2)
    assert (raised.value.column, raised.value.row) == (0, 3)


def test_every_character_of_the_plain_text_pattern_is_printable() -> None:
    """The pattern is built from str.isprintable itself; it leaves out what needs escaping."""
    pattern = plain_text_pattern()
    assert "&" not in pattern and "<" not in pattern and ">" not in pattern
    assert chr(0xA0).isprintable() is False and "\\x{a0}" not in pattern


_text = st.one_of(st.sampled_from(TEXTS[:-3]), st.text(max_size=12))
_float = st.one_of(
    st.sampled_from(FLOATS),
    st.floats(),
    st.builds(lambda b: struct.unpack("<d", b)[0], st.binary(min_size=8, max_size=8)),
)
_decimal = st.one_of(
    st.sampled_from(DECIMALS),
    st.integers(0, 9)
    .flatmap(lambda places: st.decimals(allow_nan=False, allow_infinity=False, places=places))
    .map(str),
)
_moment = st.datetimes(min_value=datetime(1899, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda moment: moment.replace(fold=0) if moment.microsecond % 3 else moment.replace(microsecond=0, fold=0)
)
_row = st.tuples(
    _text,
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    st.one_of(st.none(), _decimal),
    st.one_of(st.none(), _float),
    st.one_of(
        st.none(), st.dates(min_value=date(1899, 1, 1), max_value=date(9999, 12, 31)), st.sampled_from(DATE_TEXTS)
    ),
    st.one_of(st.none(), _moment, st.sampled_from(MOMENT_TEXTS)),
    st.one_of(st.none(), st.booleans()),
    _text,
    _text,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_row, min_size=1, max_size=30))
def test_generated_rows_give_the_row_encoders_xml(rows: list[tuple[Any, ...]]) -> None:
    assert_same_rows(COLUMNS, rows)


def test_a_workbook_from_batches_equals_the_one_from_rows_across_sheets() -> None:
    """Widths from the first rows, a sheet break inside a batch, rows of every kind: the same
    file, byte for byte."""
    base = edge_rows()
    rows = [row for row in base if not any(isinstance(v, str) and len(v) > 16_383 for v in row)]
    rows = [tuple(v for v in row) for row in rows] * 12
    columns = COLUMNS
    from_rows = io.BytesIO()
    stream = XlsxStream(columns, from_rows, max_rows_per_sheet=700)
    py_rows = python_rows(columns, rows)
    for start in range(0, len(py_rows), 1000):
        stream.write_rows(py_rows[start : start + 1000])
    stream.close()
    from_batches = io.BytesIO()
    batches = [batch_of(columns, rows[start : start + 333]) for start in range(0, len(rows), 333)]
    assert write_xlsx_batches(columns, batches, from_batches, max_rows_per_sheet=700) == len(rows)
    assert from_batches.getvalue() == from_rows.getvalue()


def test_an_empty_export_gives_the_empty_workbook() -> None:
    expected, got = io.BytesIO(), io.BytesIO()
    XlsxStream(COLUMNS, expected).close()
    assert write_xlsx_batches(COLUMNS, [], got) == 0
    assert got.getvalue() == expected.getvalue()


def test_a_sheet_past_its_byte_limit_breaks_where_the_rows_path_breaks() -> None:
    columns = [Column("text", "Text", K.STRING), Column("count", "Count", K.INTEGER)]
    rows = [(f"row {n} " + "x" * (n % 50), n) for n in range(3_000)]

    def written(through_batches: bool) -> bytes:
        out = io.BytesIO()
        if through_batches:
            write_xlsx_batches(columns, [batch_of(columns, rows)], out, max_sheet_bytes=60_000)
            return out.getvalue()
        stream = XlsxStream(columns, out, max_sheet_bytes=60_000)
        for start in range(0, len(rows), 1000):
            stream.write_rows(rows[start : start + 1000])
        stream.close()
        return out.getvalue()

    assert written(True) == written(False)


def test_a_day_before_the_serials_and_a_moment_with_milliseconds_take_the_row_encoder() -> None:
    columns = [Column("day", "Day", K.DATE), Column("at", "At", K.DATETIME)]
    rows = [
        (date(1900, 1, 1), datetime(2026, 1, 1, 0, 0, 0, 1000)),
        (date(2026, 1, 1), datetime(2026, 1, 1) + timedelta(seconds=1)),
    ]
    assert_same_rows(columns, rows)


def _stream_bytes(columns: list[Column], pages: list[list[tuple[Any, ...]]], **options: Any) -> bytes:
    out = io.BytesIO()
    stream = XlsxStream(columns, out, **options)
    for page in pages:
        stream.write_rows(page)
    assert stream.close() == sum(len(page) for page in pages)
    return out.getvalue()


@pytest.mark.parametrize("page_rows", [1000, 777, 20_000])
def test_rows_gathered_through_arrow_make_the_row_encoders_workbook(
    page_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python rows in groups through Arrow (every kind's edge values, other types in a column
    sending its group to the row encoder, sheet breaks): the file the row encoder alone makes."""
    base = [
        row
        for row in edge_rows()
        if not any(isinstance(v, str) and len(v) > 16_383 for v in row)
        and not isinstance(row[4], str)
        and not isinstance(row[5], str)
    ]
    rows = python_rows(COLUMNS, base) * 160
    rows[20_500] = ("text", "not an integer", *rows[20_500][2:])  # a group the row encoder writes
    pages = [rows[start : start + page_rows] for start in range(0, len(rows), page_rows)]
    encoded: list[int] = []
    encode = ArrowRows.encode

    def counted(self: ArrowRows, batch: pa.RecordBatch, *arguments: Any) -> Any:
        encoded.append(batch.num_rows)
        return encode(self, batch, *arguments)

    monkeypatch.setattr(ArrowRows, "encode", counted)
    through_arrow = _stream_bytes(COLUMNS, pages, max_rows_per_sheet=30_000)
    assert sum(encoded) >= 13_000  # the groups without the odd value went through Arrow
    monkeypatch.setattr(workbook, "ARROW_MIN_ROWS", 10**9)
    assert through_arrow == _stream_bytes(COLUMNS, pages, max_rows_per_sheet=30_000)


def test_values_of_another_type_leave_a_group_to_the_row_encoder() -> None:
    arrow_rows = ArrowRows(COLUMNS, date_texts=False)
    ordinary = python_rows(COLUMNS, edge_rows()[:1])[0]
    assert arrow_rows.batch_of([ordinary] * 3) is not None
    for index, other in [(1, True), (1, 2**63), (0, 5), (2, 1.5), (4, datetime(2026, 1, 1)), (5, datetime.now(UTC))]:
        row = (*ordinary[:index], other, *ordinary[index + 1 :])
        assert arrow_rows.batch_of([ordinary, row]) is None, (index, other)
