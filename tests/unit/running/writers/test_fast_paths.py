"""The writers' fast paths give exactly what the general rules give, and XLSX leaves nothing in /tmp."""

import csv
import io
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import openpyxl.xml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.csv_writer import CsvStream, csv_text, lines_encoder, row_encoder, rows_encoder, write_csv
from exports.running.writers.xlsx_writer import MAX_DATA_ROWS_PER_SHEET, write_xlsx

VALUES = [
    None,
    "",
    "plain",
    "王芳",
    "=1+2",
    "+49 30 1234",
    "-10%",
    "@home",
    "\tx",
    "\rx",
    0,
    -4,
    10**20,
    True,
    Decimal("1234.50"),
    Decimal("1E+3"),
    Decimal("-0.001"),
    date(2025, 3, 1),
    date(999, 1, 2),
    datetime(2025, 3, 1, 12, 30, 5),
    datetime(2025, 3, 1, 12, 30, 5, 999_999),
    datetime(2025, 3, 1, 12, 30, 5, tzinfo=UTC),
    datetime(2025, 3, 1, 12, 30, 5, tzinfo=timezone(timedelta(hours=8))),
    datetime(999, 1, 2, 3, 4, 5),
    1.5,
    # Floats: the decimal columns' fast path (no exponent, finite) and what it leaves to csv_text.
    -0.0,
    0.1,
    1 / 3,
    123456789012345.0,
    1e16,
    1e-7,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
]


@pytest.mark.parametrize("kind", list(ColumnKind))
def test_every_value_in_every_column_kind_is_written_as_csv_text_writes_it(kind):
    encode = row_encoder([Column("x", "X", kind)])
    for value in VALUES:
        written = encode((value,))[0]
        assert ("" if written is None else str(written)) == csv_text(value), value


def test_a_row_of_the_wrong_length_is_refused():
    encode = row_encoder([Column("a", "A"), Column("b", "B")])
    with pytest.raises(ValueError):
        encode(("only one",))


def test_a_csv_continued_without_header_and_bom_equals_one_written_at_once():
    columns = [Column("n", "N", ColumnKind.INTEGER), Column("name", "Name")]
    rows = [(n, f"王芳 {n}") for n in range(100)]
    whole = io.BytesIO()
    write_csv(columns, rows, whole, bom=True)

    pieces = io.BytesIO()
    first = CsvStream(columns, pieces, bom=True)
    first.write_rows(rows[:40])
    first.detach()
    second = CsvStream(columns, pieces, bom=False, header=False)
    second.write_rows(rows[40:])
    second.detach()

    assert pieces.getvalue() == whole.getvalue()


FORMATTED = [
    Column("day", "Day", ColumnKind.DATE),
    Column("at", "At", ColumnKind.DATETIME),
    Column("amount", "Amount", ColumnKind.DECIMAL),
]


def load(columns, rows):
    out = io.BytesIO()
    write_xlsx(columns, rows, out)
    return load_workbook(io.BytesIO(out.getvalue())).active


def test_lxml_writes_the_workbooks():
    assert openpyxl.xml.LXML is True


def test_reused_styled_cells_keep_each_rows_own_values():
    rows = [(date(2025, 3, n), datetime(2025, 3, n, n % 24), Decimal(n) / 4) for n in range(1, 29)]
    sheet = load(FORMATTED, rows)
    assert [tuple(row) for row in sheet.iter_rows(min_row=2, values_only=True)] == [
        (datetime(2025, 3, n), datetime(2025, 3, n, n % 24), n / 4) for n in range(1, 29)
    ]
    assert {cell.number_format for cell in sheet["A"][1:]} == {"yyyy-mm-dd"}
    assert {cell.number_format for cell in sheet["C"][1:]} == {"#,##0.00"}


def test_text_in_a_formatted_column_is_still_exact_quoted_and_cleaned():
    sheet = load(FORMATTED, [("=1+1", "@x\x0b", "-2")])
    assert [cell.value for cell in sheet[2]] == ["=1+1", "@x_x000B_", "-2"]  # Excel's escape of \x0b
    assert all(cell.data_type == "s" and cell.quotePrefix for cell in sheet[2])


def test_a_failing_source_leaves_no_temporary_sheet_files(private_tempdir):

    def rows():
        yield from ((n,) for n in range(2_500))
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        write_xlsx([Column("n", "N", ColumnKind.INTEGER)], rows(), io.BytesIO(), max_rows_per_sheet=1_000)

    assert list(private_tempdir.iterdir()) == []


def test_sheets_roll_over_at_excels_row_limit_by_default():
    # 1,048,576 rows a sheet in Excel, one of them the header. The rollover itself is tested with
    # a small limit in test_xlsx_writer.py; `make bench` writes a million rows for real.
    assert MAX_DATA_ROWS_PER_SHEET == 1_048_576 - 1
    assert write_xlsx.__defaults__ is not None
    assert write_xlsx.__defaults__[-1] == MAX_DATA_ROWS_PER_SHEET


def cells(sheet):
    return [[(c.value, c.data_type, c.number_format, c.font.b) for c in row] for row in sheet.iter_rows()]


def test_the_prepared_rows_shortcut_writes_what_openpyxls_own_path_writes(monkeypatch):
    columns = [Column("text", "Text"), Column("n", "N", ColumnKind.INTEGER), *FORMATTED]
    rows = [
        ("王芳", 1, date(2025, 3, 1), datetime(2025, 3, 1, 8, 30), Decimal("12.50")),
        (None, None, None, None, None),
        ("=cmd", -2, "not a date", datetime(2025, 3, 2), Decimal("-0.01")),
        ("tab\tand\x01", 10**12, date(1999, 12, 31), None, Decimal("1E+3")),
    ] * 3
    fast = load(columns, rows)
    monkeypatch.setattr("exports.running.writers.xlsx_writer._append_prepared_rows", lambda sheet: None)
    plain = load(columns, rows)

    assert cells(fast) == cells(plain)
    assert cells(fast)[3][0][0] == "=cmd" and cells(fast)[3][2][0] == "not a date"


def _csv_writer_lines(columns: list[Column], rows: Sequence[tuple[object, ...]], guard: bool) -> str:
    out = io.StringIO()
    csv.writer(out, dialect="excel", lineterminator="\r\n").writerows(rows_encoder(columns, guard)(rows))
    return out.getvalue()


_TEXTS = ["a,b", 'say "hi"', "line\nbreak", "cr\rhere", "nul\x00x", " lead", "trail ", "'quoted'", "=1,2", ";"]


@pytest.mark.parametrize("guard", [True, False])
@pytest.mark.parametrize("kind", list(ColumnKind))
def test_the_line_encoder_writes_what_csv_writer_writes(kind: ColumnKind, guard: bool) -> None:
    columns = [Column("x", "X", kind), Column("y", "Y", ColumnKind.STRING)]
    rows = [(value, text) for value in [*VALUES, *_TEXTS] for text in (None, "", "plain", *_TEXTS[:3])]
    assert lines_encoder(columns, guard)(rows) == _csv_writer_lines(columns, rows, guard)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.text(max_size=8)), st.integers()), max_size=20))
def test_the_line_encoder_quotes_any_text_as_csv_writer_does(rows: list[tuple[object, ...]]) -> None:
    columns = [Column("a", "A"), Column("b", "B", ColumnKind.JSON), Column("n", "N", ColumnKind.INTEGER)]
    assert lines_encoder(columns)(rows) == _csv_writer_lines(columns, rows, True)


def test_the_line_encoder_refuses_a_row_of_the_wrong_length_and_a_single_column() -> None:
    with pytest.raises(ValueError):
        lines_encoder([Column("a", "A"), Column("b", "B")])([("only one",)])
    with pytest.raises(ValueError):
        lines_encoder([Column("a", "A")])
