"""XLSX: bold frozen header, widths, typed cells with number formats, sheet rollover."""

import io
from datetime import date, datetime
from decimal import Decimal

from openpyxl import load_workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.utils import get_column_letter

from examples.demo_plugins.orders import ORDER_COLUMNS
from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import MAX_COLUMN_WIDTH, fitted_widths
from exports.running.writers.sink import MIN_PART_BYTES, MultipartSink
from exports.running.writers.xlsx_writer import write_xlsx
from tests.unit.fakes import FakeUpload

TYPED = [
    Column("text", "Text", width=22),
    Column("day", "Day", ColumnKind.DATE, width=12),
    Column("at", "At", ColumnKind.DATETIME, width=20),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    Column("count", "Items", ColumnKind.INTEGER, width=7),
]
ONE = [Column("n", "N", ColumnKind.INTEGER)]


def write_and_load(columns, rows, **options):
    out = io.BytesIO()
    count = write_xlsx(columns, rows, out, **options)
    return count, load_workbook(io.BytesIO(out.getvalue()))


def values(sheet):
    return [[cell.value for cell in row] for row in sheet.iter_rows()]


def test_header_is_bold_and_frozen():
    _, book = write_and_load(TYPED, [("x", None, None, None, None)])
    sheet = book.active

    assert [cell.value for cell in sheet[1]] == ["Text", "Day", "At", "Amount", "Items"]
    assert all(cell.font.b for cell in sheet[1])
    assert not any(cell.font.b for cell in sheet[2])
    assert sheet.freeze_panes == "A2"


def test_column_widths_fit_the_header_and_the_data_up_to_a_cap():
    rows = [("short", None, None, None, None), ("x" * 200, None, None, None, None)]
    _, book = write_and_load(TYPED, rows)
    sheet = book.active

    assert sheet.column_dimensions["A"].width == MAX_COLUMN_WIDTH
    assert sheet.column_dimensions["E"].width == fitted_widths(TYPED, rows)[4] == len("Items") + 3
    _, empty = write_and_load(list(ORDER_COLUMNS), [])
    for index, column in enumerate(ORDER_COLUMNS, start=1):
        assert empty.active.column_dimensions[get_column_letter(index)].width == max(8, len(column.header) + 3)


def test_the_header_has_an_autofilter_and_repeats_on_printed_pages():
    _, book = write_and_load(TYPED, [("a", None, None, None, 1)] * 3)
    sheet = book.active

    assert sheet.auto_filter.ref == "A1:E4"
    assert sheet.print_title_rows == "$1:$1"


def test_typed_values_keep_their_type_and_number_format():
    row = ("王芳", date(2025, 3, 1), datetime(2025, 3, 1, 12, 30, 5), Decimal("1234.50"), 3)

    _, book = write_and_load(TYPED, [row, ("neg", date(2025, 3, 2), datetime(2025, 3, 2), Decimal("-2"), -4)])
    text, day, at, amount, count = book.active[2]

    assert text.value == "王芳"
    assert day.value == datetime(2025, 3, 1)
    assert day.number_format == "yyyy-mm-dd"
    assert at.value == datetime(2025, 3, 1, 12, 30, 5)
    assert at.number_format == "yyyy-mm-dd hh:mm:ss"
    assert amount.data_type == "n"
    assert amount.value == 1234.5
    assert amount.number_format == "#,##0.00"
    assert count.value == 3
    assert type(count.value) is int
    assert [cell.value for cell in book.active[3]][3:] == [-2, -4]


def test_none_is_an_empty_cell_in_every_kind():
    _, book = write_and_load(TYPED, [(None, None, None, None, None)])
    assert [cell.value for cell in book.active[2]] == [None] * 5


def test_formula_looking_text_is_stored_exactly_as_text_with_the_quote_prefix_style():
    rows = [('=HYPERLINK("http://x")', None, None, None, None), ("@home", None, None, None, None), ("-1", *[None] * 4)]

    _, book = write_and_load(TYPED, rows)
    sheet = book.active

    assert [sheet.cell(row, 1).value for row in (2, 3, 4)] == ['=HYPERLINK("http://x")', "@home", "-1"]
    assert all(sheet.cell(row, 1).data_type == "s" for row in (2, 3, 4))
    assert all(sheet.cell(row, 1).quotePrefix for row in (2, 3, 4))
    assert not any(cell.data_type == "f" for row in sheet.iter_rows() for cell in row)


def test_rollover_continues_on_a_new_sheet_with_the_header_repeated():
    count, book = write_and_load(ONE, [(n,) for n in range(1, 6)], max_rows_per_sheet=2)

    assert count == 5
    assert book.sheetnames == ["Export", "Export (2)", "Export (3)"]
    assert [values(sheet) for sheet in book.worksheets] == [
        [["N"], [1], [2]],
        [["N"], [3], [4]],
        [["N"], [5]],
    ]
    for sheet in book.worksheets:
        assert sheet.freeze_panes == "A2"
        assert sheet["A1"].font.b


def test_a_full_last_sheet_does_not_open_an_empty_one():
    _, book = write_and_load(ONE, [(n,) for n in range(4)], max_rows_per_sheet=2)
    assert book.sheetnames == ["Export", "Export (2)"]


def test_sheet_title_is_used_for_every_sheet():
    _, book = write_and_load(ONE, [(1,), (2,)], sheet_title="Orders", max_rows_per_sheet=1)
    assert book.sheetnames == ["Orders", "Orders (2)"]


def test_no_rows_gives_one_sheet_with_the_header():
    count, book = write_and_load(ONE, [])
    assert count == 0
    assert book.sheetnames == ["Export"]
    assert values(book.active) == [["N"]]


def test_counts_rows_and_reports_each_one():
    seen: list[int] = []
    count, _ = write_and_load(ONE, [(1,), (2,), (3,)], on_row=seen.append)
    assert count == 3
    assert seen == [1, 2, 3]


def test_writes_into_the_non_seekable_multipart_sink():
    upload = FakeUpload()
    sink = MultipartSink(upload, MIN_PART_BYTES)

    write_xlsx(TYPED, [("a", date(2025, 3, 1), datetime(2025, 3, 1, 8), Decimal("1.00"), 1)], sink)
    sink.finish()

    book = load_workbook(io.BytesIO(upload.content))
    assert values(book.active)[1][0] == "a"


def test_text_with_control_characters_does_not_abort_the_export():
    # BUG: openpyxl refuses control characters (e.g. a vertical tab pasted into a note) with
    # IllegalCharacterError, so one such order fails every XLSX export that includes it.
    count, book = write_and_load(TYPED[:1], [("Leave at\x0bthe door\x01",)])

    assert count == 1
    written = book.active["A2"].value
    assert ILLEGAL_CHARACTERS_RE.search(written) is None
    assert "Leave at" in written
    assert "the door" in written
