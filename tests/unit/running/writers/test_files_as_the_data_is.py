"""Files read from the outside: python-calamine (another engine than the one that wrote them)
and openpyxl see exactly the data; XLSX text is never changed, CSV's formula guard is on unless
the request turns it off."""

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from openpyxl import load_workbook
from python_calamine import CalamineWorkbook

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import MAX_COLUMN_WIDTH
from exports.running.writers.csv_writer import write_csv
from exports.running.writers.xlsx_engine import write_xlsx_stream
from exports.running.writers.xlsx_writer import write_xlsx

COLUMNS = [
    Column("note", "Note"),
    Column("phone", "Phone"),
    Column("day", "Day", ColumnKind.DATE),
    Column("amount", "Amount", ColumnKind.DECIMAL),
]
TRICKY = ["-10% coupon applied", "+86 722 1590", '=HYPERLINK("http://x")', "@home", "plain text"]
ROWS = [(text, text, date(2026, 11, 1), Decimal("12.50")) for text in TRICKY]
ENGINES = {"stream": write_xlsx_stream, "openpyxl": write_xlsx}


def xlsx(engine: str, rows=ROWS, columns=COLUMNS) -> bytes:
    out = io.BytesIO()
    ENGINES[engine](columns, rows, out)
    return out.getvalue()


@pytest.mark.parametrize("engine", ENGINES)
def test_calamine_reads_every_text_cell_exactly_as_the_data(engine: str) -> None:
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(xlsx(engine))).get_sheet_by_index(0).to_python()

    assert sheet[0] == ["Note", "Phone", "Day", "Amount"]
    assert [row[0] for row in sheet[1:]] == TRICKY
    assert [row[1] for row in sheet[1:]] == TRICKY
    assert not any(str(row[0]).startswith("'") for row in sheet[1:])


@pytest.mark.parametrize("engine", ENGINES)
def test_formula_looking_text_carries_the_quote_prefix_style_and_no_formula(engine: str) -> None:
    sheet = load_workbook(io.BytesIO(xlsx(engine))).active

    for row in sheet.iter_rows(min_row=2, max_col=1):
        cell = row[0]
        assert cell.data_type == "s"
        assert bool(cell.quotePrefix) == (cell.value != "plain text"), cell.value
    assert not sheet["A1"].quotePrefix


@pytest.mark.parametrize("engine", ENGINES)
def test_header_row_has_an_autofilter_and_repeats_on_every_printed_page(engine: str) -> None:
    sheet = load_workbook(io.BytesIO(xlsx(engine))).active

    assert sheet.auto_filter.ref == f"A1:D{len(ROWS) + 1}"
    assert sheet.print_title_rows == "$1:$1"
    assert sheet.freeze_panes == "A2"


@pytest.mark.parametrize("engine", ENGINES)
def test_widths_fit_the_data_up_to_a_cap(engine: str) -> None:
    rows = [("n" * 300, "+1", date(2026, 1, 1), Decimal("1234567.5"))]
    sheet = load_workbook(io.BytesIO(xlsx(engine, rows))).active
    widths = [sheet.column_dimensions[letter].width for letter in "ABCD"]

    assert widths[0] == MAX_COLUMN_WIDTH
    assert widths[1] == len("Phone") + 3  # the header (and its filter button) is the widest
    assert widths[2] == 11  # yyyy-mm-dd and a character of padding
    assert widths[3] == len("1,234,567.50") + 1


def csv_cells(**options) -> list[list[str]]:
    out = io.BytesIO()
    write_csv(COLUMNS, ROWS, out, **options)
    return list(csv.reader(io.StringIO(out.getvalue().decode())))


def test_csv_guard_prefixes_formula_triggers_by_default() -> None:
    cells = csv_cells()
    assert [row[0] for row in cells[1:]] == [
        "'-10% coupon applied",
        "'+86 722 1590",
        '\'=HYPERLINK("http://x")',
        "'@home",
        "plain text",
    ]


def test_csv_guard_off_writes_the_text_exactly() -> None:
    cells = csv_cells(formula_guard=False)
    assert [row[0] for row in cells[1:]] == TRICKY
    assert [row[1] for row in cells[1:]] == TRICKY
    # Values of another type in a text column are written as they are too.
    out = io.BytesIO()
    write_csv([Column("n", "N", ColumnKind.INTEGER)], [("-3",), (4,)], out, formula_guard=False)
    assert out.getvalue().decode().splitlines() == ["N", "-3", "4"]
