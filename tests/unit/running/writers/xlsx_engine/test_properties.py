"""Property tests: arbitrary rows of every column kind round-trip through the stream engine and
back through openpyxl, and the engine writes the same cells as the openpyxl engine."""

import io
import math
import re
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import FIRST_SERIAL_DAY, FLOAT_NUMBER_FORMAT, looks_like_formula
from exports.running.writers.xlsx_engine import XlsxStream, write_xlsx_stream
from exports.running.writers.xlsx_writer import write_xlsx

EXAMPLES = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
_XSTRING = re.compile("_x([0-9A-Fa-f]{4})_")
_LONE_SURROGATES = re.compile("[\ud800-\udfff]")
MS = timedelta(milliseconds=1)

# Dates before 1900-03-01 have no exact serial: they are text (ISO 8601), as in CSV.
DATES = st.dates()
NAIVE = st.datetimes(max_value=datetime(9999, 12, 31, 23, 59, 59, 999_999))
WHOLE_SECONDS = NAIVE.map(lambda value: value.replace(microsecond=0))
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30))])
SPECIAL_TEXT = st.sampled_from(["=1+1", "@x", "-5", "+1", "a & <b>", "_x0041_", " pad ", "a\r\nb", "\x0b"])
VALUES = {
    ColumnKind.STRING: st.text(max_size=40) | SPECIAL_TEXT,
    # Excel's numbers are doubles: beyond 2**53 openpyxl writes the nearest one, we all digits.
    ColumnKind.INTEGER: st.integers(min_value=-(2**53), max_value=2**53),
    ColumnKind.DECIMAL: st.decimals(
        min_value=-(10**12), max_value=10**12, places=2, allow_nan=False, allow_infinity=False
    ),
    ColumnKind.FLOAT: st.floats(allow_nan=False, allow_infinity=False),
    ColumnKind.DATE: DATES,
    ColumnKind.DATETIME: NAIVE | WHOLE_SECONDS | st.datetimes(min_value=datetime(1900, 3, 2), timezones=ZONES),
    ColumnKind.BOOLEAN: st.booleans(),
    # JSON is text in a workbook.
    ColumnKind.JSON: st.text(max_size=40) | SPECIAL_TEXT,
}


@st.composite
def tables(draw, max_rows=15):
    """Columns of random kinds and rows of values of their kinds (or None)."""
    kinds = draw(st.lists(st.sampled_from(list(ColumnKind)), min_size=1, max_size=8))
    columns = [Column(f"c{index}", f"{kind.value} {index}", kind) for index, kind in enumerate(kinds)]
    row = st.tuples(*(st.none() | VALUES[kind] for kind in kinds))
    return columns, draw(st.lists(row, max_size=max_rows))


def read_back(body, columns, rows):
    sheet = load_workbook(io.BytesIO(body)).active
    return sheet, list(sheet.iter_rows(min_row=2, max_row=len(rows) + 1, max_col=len(columns)))


def shown(text):
    """Text as Excel shows it: "_xHHHH_" is the character HHHH (openpyxl leaves it as it is)."""
    return _XSTRING.sub(lambda match: chr(int(match.group(1), 16)), text)


def assert_read_back_equal(kind, value, cell):
    if value is None:
        assert cell.value is None
    elif kind in (ColumnKind.STRING, ColumnKind.JSON):
        # Exactly the text (control characters as Excel's escapes), less lone surrogates.
        stored = _LONE_SURROGATES.sub("", value)
        assert (shown(cell.value), cell.data_type) == (stored, "s") if stored else cell.value is None
        assert (bool(stored) and looks_like_formula(stored) == bool(cell.quotePrefix)) or not stored
    elif (
        kind in (ColumnKind.DATE, ColumnKind.DATETIME)
        and (value.date() if isinstance(value, datetime) else value) < FIRST_SERIAL_DAY
    ):
        text = value.isoformat(" ") if isinstance(value, datetime) else value.isoformat()
        assert (cell.value, cell.data_type) == (text, "s")
    elif kind is ColumnKind.INTEGER:
        assert (cell.value, type(cell.value), cell.data_type) == (value, int, "n")
    elif kind is ColumnKind.DECIMAL:
        assert (cell.value, cell.data_type, cell.number_format) == (float(value), "n", "#,##0.00")
    elif kind is ColumnKind.FLOAT:
        # The exact double (-0.0 too), every decimal shown.
        assert (cell.value, cell.data_type, cell.number_format) == (value, "n", FLOAT_NUMBER_FORMAT)
        assert math.copysign(1, cell.value) == math.copysign(1, value)
    elif kind is ColumnKind.DATE:
        assert (cell.value, cell.number_format) == (datetime.combine(value, datetime.min.time()), "yyyy-mm-dd")
    elif kind is ColumnKind.DATETIME:
        # Cut to the millisecond (openpyxl reads to the millisecond); a time zone is dropped.
        assert abs(cell.value - value.replace(tzinfo=None)) <= MS
        shown_ms = value.microsecond >= 1000
        assert cell.number_format == ("yyyy-mm-dd hh:mm:ss.000" if shown_ms else "yyyy-mm-dd hh:mm:ss")
    else:
        assert (cell.value, cell.data_type) == (value, "b")


@EXAMPLES
@given(tables())
def test_every_value_reads_back_with_its_type(table):
    columns, rows = table
    out = io.BytesIO()

    assert write_xlsx_stream(columns, rows, out) == len(rows)

    sheet, cells = read_back(out.getvalue(), columns, rows)
    assert [cell.value for cell in sheet[1]] == [column.header for column in columns]
    for row, read in zip(rows, cells, strict=True):
        for column, value, cell in zip(columns, row, read, strict=True):
            assert_read_back_equal(column.kind, value, cell)


def comparable(table):
    """Rows both engines write the same way: openpyxl refuses time zones and writes an empty text
    cell for empty text."""
    _, rows = table
    return all(
        not (isinstance(value, datetime) and value.tzinfo)
        and not (isinstance(value, str) and _LONE_SURROGATES.sub("", value) == "")
        for row in rows
        for value in row
    )


@EXAMPLES
@given(tables().filter(comparable))
def test_the_cells_are_the_openpyxl_engines(table):
    columns, rows = table
    ours, reference = io.BytesIO(), io.BytesIO()
    write_xlsx_stream(columns, rows, ours)
    write_xlsx(columns, rows, reference)

    def cells(body):
        _, read = read_back(body, columns, rows)
        return [[(cell.value, cell.data_type, cell.number_format) for cell in row] for row in read]

    ours_cells, reference_cells = cells(ours.getvalue()), cells(reference.getvalue())
    for our_row, reference_row in zip(ours_cells, reference_cells, strict=True):
        for (value, *typed), (expected, *expected_typed) in zip(our_row, reference_row, strict=True):
            assert typed == expected_typed
            if isinstance(value, datetime):
                assert abs(value - expected) <= MS
            else:
                assert value == expected


@settings(max_examples=25, deadline=None, database=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 10**6), st.text(max_size=8)), max_size=60),
    per_sheet=st.integers(1, 7),
    pages=st.lists(st.integers(1, 9), min_size=1, max_size=10),
)
def test_rows_in_any_pages_fill_sheets_in_order(rows, per_sheet, pages):
    columns = [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text")]
    out = io.BytesIO()
    stream = XlsxStream(columns, out, max_rows_per_sheet=per_sheet)
    start = 0
    while start < len(rows):
        size = pages[start % len(pages)]
        stream.write_rows(rows[start : start + size])
        start += size
    assert stream.close() == len(rows)

    book = load_workbook(io.BytesIO(out.getvalue()))
    sheets = [list(sheet.iter_rows(values_only=True)) for sheet in book.worksheets]
    assert len(sheets) == max(1, -(-len(rows) // per_sheet))
    assert all(sheet[0] == ("N", "Text") and len(sheet) - 1 <= per_sheet for sheet in sheets)
    read = [row for sheet in sheets for row in sheet[1:]]
    assert [row[0] for row in read] == [n for n, _ in rows]
