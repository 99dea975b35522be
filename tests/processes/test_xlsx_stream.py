"""The stream XLSX engine, read back by openpyxl: typed cells, header, widths, formats, sheets,
and a zip written forward only into a stream that cannot seek."""

import base64
import inspect
import io
import random
import re
import shutil
import subprocess
import zipfile
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

import pytest
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter
from openpyxl.utils.datetime import to_excel
from python_calamine import CalamineWorkbook

from examples.demo_plugins.orders import ORDER_COLUMNS
from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import MAX_COLUMN_WIDTH, CellTooLong, xml_safe
from exports.running.writers.sink import MIN_PART_BYTES, MultipartSink
from exports.running.writers.xlsx_engine import (
    MAX_DATA_ROWS_PER_SHEET,
    ArchiveTooLarge,
    XlsxStream,
    write_xlsx_stream,
    zip_stream,
)
from exports.running.writers.xlsx_engine.rows import (
    COLUMN_STYLES,
    Style,
    cell,
    column_letter,
    date_serial,
    rows_encoder,
)
from exports.running.writers.xlsx_engine.workbook import ZIP_LEVEL
from exports.running.writers.xlsx_writer import write_xlsx
from tests.unit.cell_refs import with_references
from tests.unit.fakes import FakeUpload

ALL_KINDS = [
    Column("text", "Text", width=22),
    Column("count", "Items", ColumnKind.INTEGER, width=7),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    Column("day", "Day", ColumnKind.DATE, width=12),
    Column("at", "At", ColumnKind.DATETIME, width=20),
    Column("paid", "Paid", ColumnKind.BOOLEAN, width=6),
]
ONE = [Column("n", "N", ColumnKind.INTEGER)]
TEXT = [Column("text", "Text")]
FORMATS = {"amount": "#,##0.00", "day": "yyyy-mm-dd", "at": "yyyy-mm-dd hh:mm:ss"}
_XSTRING = re.compile("_x([0-9A-Fa-f]{4})_")


def write(columns, rows, **options):
    out = io.BytesIO()
    count = write_xlsx_stream(columns, rows, out, **options)
    return count, out.getvalue()


def load(columns, rows, **options):
    return load_workbook(io.BytesIO(write(columns, rows, **options)[1]))


def values(sheet):
    return [[cell.value for cell in row] for row in sheet.iter_rows()]


def shown(value):
    """What Excel shows for text openpyxl reads: "_xHHHH_" is the character HHHH (ECMA-376
    ST_Xstring; openpyxl leaves it as it is)."""
    return _XSTRING.sub(lambda match: chr(int(match.group(1), 16)), value) if isinstance(value, str) else value


def test_every_column_kind_reads_back_with_its_value_type_and_format():
    row = ("王芳", 3, Decimal("1234.50"), date(2025, 3, 1), datetime(2025, 3, 1, 12, 30, 5), True)

    sheet = load(ALL_KINDS, [row, ("neg", -4, Decimal("-2"), date(2025, 3, 2), datetime(2025, 3, 2), False)]).active
    text, count, amount, day, at, paid = sheet[2]

    assert (text.value, text.data_type) == ("王芳", "s")
    assert (count.value, type(count.value), count.data_type) == (3, int, "n")
    assert (amount.value, amount.data_type, amount.number_format) == (1234.5, "n", "#,##0.00")
    assert (day.value, day.number_format) == (datetime(2025, 3, 1), "yyyy-mm-dd")
    assert (at.value, at.number_format) == (datetime(2025, 3, 1, 12, 30, 5), "yyyy-mm-dd hh:mm:ss")
    assert (paid.value, paid.data_type) == (True, "b")
    assert [cell.value for cell in sheet[3]] == ["neg", -4, -2, datetime(2025, 3, 2), datetime(2025, 3, 2), False]
    assert {cell.number_format for cell in (text, count, paid)} == {"General"}


def test_header_is_bold_and_frozen_and_the_columns_have_their_widths():
    book = load(list(ORDER_COLUMNS), [])
    sheet = book.active

    assert [cell.value for cell in sheet[1]] == [column.header for column in ORDER_COLUMNS]
    assert all(cell.font.b for cell in sheet[1])
    assert sheet.freeze_panes == "A2"
    for index, column in enumerate(ORDER_COLUMNS, start=1):
        assert sheet.column_dimensions[get_column_letter(index)].width == max(8, len(column.header) + 3)


def test_widths_fit_the_first_rows_up_to_a_cap_and_wide_characters_count_twice():
    sheet = load([*TEXT, Column("n", "N", ColumnKind.INTEGER)], [("王芳王芳王芳", 1), ("ab", 123456789012)]).active
    assert sheet.column_dimensions["A"].width == 13  # 6 wide characters, one of padding
    assert sheet.column_dimensions["B"].width == 13  # 12 digits
    capped = load(TEXT, [("x" * 500,)]).active
    assert capped.column_dimensions["A"].width == MAX_COLUMN_WIDTH


def test_every_sheet_has_an_autofilter_on_its_header_and_print_titles():
    _, body = write(ONE, [(n,) for n in range(1, 6)], max_rows_per_sheet=2)
    book = load_workbook(io.BytesIO(body))

    assert [sheet.auto_filter.ref for sheet in book.worksheets] == ["A1:A3", "A1:A3", "A1:A2"]
    assert {sheet.print_title_rows for sheet in book.worksheets} == {"$1:$1"}
    workbook_xml = zipfile.ZipFile(io.BytesIO(body)).read("xl/workbook.xml").decode()
    assert '<definedName name="_xlnm._FilterDatabase" localSheetId="2" hidden="1">\'Export (3)\'!$A$1:$A$2' in (
        workbook_xml
    )


def test_data_rows_are_not_bold():
    sheet = load(ALL_KINDS, [("x", 1, Decimal(1), date(2025, 1, 1), datetime(2025, 1, 1), True)]).active
    assert not any(cell.font.b for cell in sheet[2])


def test_none_is_no_cell_at_all_in_every_kind():
    _, body = write(ALL_KINDS, [(None,) * 6, (None, 1, None, None, None, None)])
    sheet_xml = zipfile.ZipFile(io.BytesIO(body)).read("xl/worksheets/sheet1.xml").decode()

    assert '<row r="2"></row>' in sheet_xml
    assert '<row r="3"><c r="B3"><v>1</v></c></row>' in sheet_xml
    sheet = load_workbook(io.BytesIO(body)).active
    assert values(sheet)[1:] == [[None] * 6, [None, 1, None, None, None, None]]


def test_formula_looking_text_is_stored_exactly_with_the_quote_prefix_style():
    texts = ['=HYPERLINK("http://x")', "+49 30 1234", "-10%", "@home", "\tx", "\rx", "=1+1"]

    sheet = load(TEXT, [(text,) for text in texts]).active

    read = [row[0] for row in values(sheet)[1:]]
    assert read == [xml_safe(text) for text in texts]
    assert read[0] == '=HYPERLINK("http://x")' and read[4] == "\tx" and read[5] == "\rx"
    assert all(cell.data_type == "s" for row in sheet.iter_rows() for cell in row)
    assert all(row[0].quotePrefix for row in sheet.iter_rows(min_row=2))
    assert not sheet["A1"].quotePrefix


def test_control_characters_are_kept_as_excels_escapes_and_markup_is_escaped():
    texts = ["Leave at\x0bthe door\x01", "a & b < c > d", "<b>bold</b> &amp;", "]]> end", "nul\x00 here"]

    _, body = write(TEXT, [(text,) for text in texts])
    sheet = load_workbook(io.BytesIO(body)).active

    read = [row[0] for row in values(sheet)[1:]]
    assert read[0] == "Leave at_x000B_the door_x0001_" and read[4] == "nul_x0000_ here"
    assert [shown(value) for value in read] == texts
    calamine = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
    assert [row[0] for row in calamine[1:]] == texts
    sheet_xml = zipfile.ZipFile(io.BytesIO(body)).read("xl/worksheets/sheet1.xml").decode()
    assert "a &amp; b &lt; c &gt; d" in sheet_xml and "<b>" not in sheet_xml


def test_line_breaks_tabs_and_surrounding_spaces_are_kept():
    texts = ["two\nlines", "windows\r\nline", "old mac\rline", "tab\there", "  padded  ", " lead", "trail "]
    sheet = load(TEXT, [(text,) for text in texts]).active
    assert [row[0] for row in values(sheet)[1:]] == texts


def test_long_and_unicode_text_reads_back_as_it_was():
    texts = ["x" * 32_767, "王芳 请周末送货", "Noah Müller", "Ava O'Brien", "emoji 😀👍🏽", "עברית", "\u00a0nbsp\u3000"]
    sheet = load(TEXT, [(text,) for text in texts]).active
    assert [row[0] for row in values(sheet)[1:]] == texts


def test_text_that_excel_would_read_as_an_escape_is_escaped():
    # Excel shows "_x0041_" as "A" (ECMA-376 ST_Xstring): a literal one needs its "_" escaped.
    texts = ["_x0041_", "a_x00e9_b_X", "_x_ and _x12_ stay"]

    sheet = load(TEXT, [(text,) for text in texts]).active

    read = [row[0] for row in values(sheet)[1:]]
    assert read[0] == "_x005F_x0041_"
    assert [shown(value) for value in read] == texts


def test_noncharacters_are_escaped_and_lone_surrogates_which_utf8_cannot_hold_removed():
    sheet = load(TEXT, [("a\ufffeb\uffffc",), ("\ud800lone surrogate",)]).active
    assert [shown(row[0]) for row in values(sheet)[1:]] == ["a\ufffeb\uffffc", "lone surrogate"]


def test_text_past_excels_limit_fails_rather_than_being_cut():
    with pytest.raises(CellTooLong, match="40,000 characters"):
        write(TEXT, [("x" * 40_000,)])
    with pytest.raises(CellTooLong):
        write(TEXT, [("😀" * 16_384,)])  # 32,768 UTF-16 code units


def test_empty_text_is_no_cell():
    columns = [Column("text", "Text"), Column("n", "N", ColumnKind.INTEGER)]
    _, body = write(columns, [("", 1), ("\ud800", 2)])
    sheet_xml = zipfile.ZipFile(io.BytesIO(body)).read("xl/worksheets/sheet1.xml").decode()
    assert '<row r="2"><c r="B2"><v>1</v></c></row><row r="3"><c r="B3"><v>2</v></c></row>' in sheet_xml


def test_values_of_another_type_than_their_column_are_written_as_openpyxl_writes_them():
    columns = [*ALL_KINDS, Column("more", "More")]
    rows = [
        ("=cmd", True, "n/a", "not a date", date(2025, 3, 1), 1, 2.5),
        (12, "7", 3, datetime(2025, 3, 1, 8, 30), 45_000, "yes", date(2024, 2, 29)),
        (Decimal("1.5"), Decimal("2"), 10**12, None, datetime(2025, 3, 1, 8, 30, 0, 250_000), None, None),
        (False, 1.25, Decimal("1E+3"), date(2000, 1, 1), Decimal("0.5"), 0, "-"),
    ]
    # One difference, not tested here: a datetime in a column that is not a date column gets
    # "yyyy-mm-dd hh:mm:ss" from us, openpyxl's default "yyyy-mm-dd h:mm:ss" from openpyxl.

    ours = load(columns, rows).active
    reference_out = io.BytesIO()
    write_xlsx(columns, rows, reference_out)
    reference = load_workbook(io.BytesIO(reference_out.getvalue())).active

    def cells(sheet):
        return [[(c.value, c.data_type, c.number_format) for c in row] for row in sheet.iter_rows()]

    assert cells(ours) == cells(reference)


def test_other_values_are_their_text_as_in_csv():
    columns = [Column("x", "X"), Column("y", "Y", ColumnKind.DECIMAL), Column("z", "Z", ColumnKind.INTEGER)]
    rows = [(time(8, 30), Decimal("NaN"), float("inf")), (timedelta(days=1), Decimal("-Infinity"), [1, 2])]

    sheet = load(columns, rows).active

    assert values(sheet)[1:] == [["08:30:00", "NaN", "Infinity"], ["1 day, 0:00:00", "-Infinity", "[1, 2]"]]
    assert all(cell.data_type == "s" for row in sheet.iter_rows(min_row=2) for cell in row)


def test_time_zones_are_dropped_keeping_the_wall_time_as_csv_does():
    at = datetime(2025, 3, 1, 12, 30, 5, tzinfo=UTC)
    local = datetime(2025, 3, 1, 20, 30, 5, tzinfo=UTC).astimezone(tz=None)
    sheet = load([Column("at", "At", ColumnKind.DATETIME)], [(at,), (local,)]).active
    assert values(sheet)[1:] == [[datetime(2025, 3, 1, 12, 30, 5)], [local.replace(tzinfo=None)]]


def test_serial_numbers_are_openpyxls_including_the_days_before_1900_03_01():
    days = [date(1899, 12, 30) + timedelta(days=n) for n in range(0, 100)] + [date(2025, 12, 31), date(9999, 12, 31)]
    for day in days:
        assert date_serial(day) == to_excel(day), day
        at = datetime.combine(day, time(13, 45, 30, 500_000))
        assert date_serial(at) == pytest.approx(to_excel(at), abs=1e-9), at


def test_the_row_templates_write_what_the_general_cell_function_writes():
    columns = [Column(kind.value, kind.value, kind) for kind in ColumnKind]
    encode = rows_encoder(columns)
    samples = [
        "plain",
        "王芳",
        "x & y",
        "=1",
        " space",
        # The second text template: formula triggers and surrounding spaces, alone and together.
        "trailing ",
        "-5 ",
        "@ x",
        " ",
        "+",
        "",
        0,
        -17,
        10**20,
        True,
        False,
        Decimal("1234.50"),
        Decimal("1E+3"),
        Decimal("NaN"),
        date(2025, 3, 1),
        date(1900, 2, 28),
        datetime(2025, 3, 1, 23, 59, 59),
        datetime(2025, 3, 1, 0, 0, 0),
        datetime(2025, 3, 1, 8, 0, 0, 1),
        datetime(1900, 3, 1, 0, 0, 1),
        datetime(2025, 3, 1, tzinfo=UTC),
        1.5,
        None,
    ]
    styles = [int(COLUMN_STYLES.get(column.kind, Style.NONE)) for column in columns]
    numbers = re.compile("<v>([^<]*)</v>")
    for value in samples:
        row_xml = with_references(encode([(value,) * len(columns)], 1))
        general = "".join(cell(value, f"{column_letter(index)}2", style) for index, style in enumerate(styles))
        # Whole-second datetimes take ten decimals in the template, cell() the float's repr.
        assert numbers.sub("<v/>", row_xml) == f'<row r="2">{numbers.sub("<v/>", general)}</row>', value
        assert [float(n) for n in numbers.findall(row_xml)] == pytest.approx(
            [float(n) for n in numbers.findall(general)], abs=1e-9
        )


def test_column_letters():
    assert [column_letter(index) for index in (0, 1, 25, 26, 27, 51, 52, 701, 702, 16_383)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
        "XFD",
    ]


def test_a_row_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError):
        write([Column("a", "A"), Column("b", "B")], [("only one",)])


def test_rollover_continues_on_a_new_sheet_with_the_header_repeated():
    count, body = write(ONE, [(n,) for n in range(1, 6)], max_rows_per_sheet=2)
    book = load_workbook(io.BytesIO(body))

    assert count == 5
    assert book.sheetnames == ["Export", "Export (2)", "Export (3)"]
    assert [values(sheet) for sheet in book.worksheets] == [[["N"], [1], [2]], [["N"], [3], [4]], [["N"], [5]]]
    for sheet in book.worksheets:
        assert sheet.freeze_panes == "A2"
        assert sheet["A1"].font.b
        assert sheet.column_dimensions["A"].width == 8


def test_rollover_within_one_page_and_across_pages():
    out = io.BytesIO()
    stream = XlsxStream(ONE, out, max_rows_per_sheet=3)
    stream.write_rows([(n,) for n in range(1, 8)])
    stream.write_rows([(8,)])
    stream.write_rows([(n,) for n in range(9, 11)])
    assert stream.close() == 10

    book = load_workbook(io.BytesIO(out.getvalue()))
    assert [[row[0] for row in values(sheet)[1:]] for sheet in book.worksheets] == [
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
        [10],
    ]


def test_a_full_last_sheet_does_not_open_an_empty_one():
    book = load(ONE, [(n,) for n in range(4)], max_rows_per_sheet=2)
    assert book.sheetnames == ["Export", "Export (2)"]


def test_a_sheet_also_ends_before_its_xml_outgrows_a_plain_zip_entry():
    out = io.BytesIO()
    stream = XlsxStream(TEXT, out, max_sheet_bytes=2_000)
    stream.write_rows([(f"row {n} " + "x" * 40,) for n in range(100)])
    stream.close()

    archive = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    sheets = [info for info in archive.infolist() if info.filename.startswith("xl/worksheets/")]
    assert len(sheets) > 3 and all(info.file_size <= 2_000 for info in sheets)
    book = load_workbook(io.BytesIO(out.getvalue()))
    read = [row[0] for sheet in book.worksheets for row in values(sheet)[1:]]
    assert read == [f"row {n} " + "x" * 40 for n in range(100)]
    assert all(values(sheet)[0] == ["Text"] for sheet in book.worksheets)


def test_sheet_title_is_used_for_every_sheet_and_escaped():
    book = load(ONE, [(1,), (2,)], sheet_title="R&D <Q1>", max_rows_per_sheet=1)
    assert book.sheetnames == ["R&D <Q1>", "R&D <Q1> (2)"]


def test_sheets_roll_over_at_excels_row_limit_by_default():
    assert MAX_DATA_ROWS_PER_SHEET == 1_048_576 - 1
    assert inspect.signature(write_xlsx_stream).parameters["max_rows_per_sheet"].default == MAX_DATA_ROWS_PER_SHEET


def test_no_rows_gives_one_sheet_with_the_header():
    count, body = write(ONE, [])
    book = load_workbook(io.BytesIO(body))
    assert count == 0
    assert book.sheetnames == ["Export"]
    assert values(book.active) == [["N"]]


def test_no_columns_gives_rows_without_cells():
    count, body = write([], [(), ()])
    assert count == 2
    assert load_workbook(io.BytesIO(body)).sheetnames == ["Export"]
    sheet_xml = zipfile.ZipFile(io.BytesIO(body)).read("xl/worksheets/sheet1.xml").decode()
    assert '<sheetData><row r="1"></row><row r="2"/><row r="3"/></sheetData>' in sheet_xml


def test_counts_rows_and_reports_each_one():
    seen: list[int] = []
    count, _ = write(ONE, [(n,) for n in range(2_500)], on_row=seen.append)
    assert count == 2_500
    assert seen == list(range(1, 2_501))


def test_the_package_is_a_forward_only_zip_without_zip64_entries():
    _, body = write(ALL_KINDS, [("x", 1, Decimal(1), date(2025, 1, 1), datetime(2025, 1, 1), True)])
    archive = zipfile.ZipFile(io.BytesIO(body))

    assert archive.testzip() is None
    assert [info.filename for info in archive.infolist()] == [
        "_rels/.rels",
        "xl/styles.xml",
        "xl/worksheets/sheet1.xml",
        "xl/workbook.xml",
        "xl/_rels/workbook.xml.rels",
        "[Content_Types].xml",
    ]
    for info in archive.infolist():
        assert info.flag_bits & 0x08, "sizes and CRC follow the data (data descriptor)"
        assert info.compress_type == zipfile.ZIP_DEFLATED
        assert info.extract_version < 45, "no ZIP64 extensions"
    content_types = archive.read("[Content_Types].xml").decode()
    assert 'PartName="/xl/worksheets/sheet1.xml"' in content_types


def test_the_same_rows_give_the_same_bytes():
    rows = [("王芳", 1, Decimal("2.50"), date(2025, 1, 1), datetime(2025, 1, 1, 8), True)] * 50
    assert write(ALL_KINDS, rows)[1] == write(ALL_KINDS, rows)[1]


@pytest.mark.skipif(shutil.which("unzip") is None, reason="Info-ZIP unzip is not installed")
def test_info_zip_finds_the_archive_sound(tmp_path):
    path = tmp_path / "export.xlsx"
    path.write_bytes(write(list(ORDER_COLUMNS), [(f"ORD-{n}", *[None] * 12) for n in range(3_000)])[1])
    tested = subprocess.run(["unzip", "-t", str(path)], capture_output=True, text=True, check=False)
    assert tested.returncode == 0, tested.stdout
    assert "No errors detected" in tested.stdout


def test_a_file_past_two_gib_is_refused_not_written_with_zip64_records(monkeypatch):
    # LibreOffice opens no package over 2 GiB; Excel reads no ZIP64 central directory.
    monkeypatch.setattr(zip_stream, "MAX_ARCHIVE_BYTES", 50_000)
    out = io.BytesIO()
    stream = XlsxStream(TEXT, out)
    with pytest.raises(ArchiveTooLarge):
        for n in range(1_000):
            # Random text, so the deflated file grows whatever the level and the deflate.
            stream.write_rows([(base64.b64encode(random.Random(n).randbytes(120)).decode(),)] * 10)
        stream.close()  # rows are gathered (GROUP_ROWS): the last ones are written here
    assert len(out.getvalue()) <= 50_000


def test_an_entry_past_four_gib_is_refused(monkeypatch):
    monkeypatch.setattr(zip_stream, "MAX_ENTRY_BYTES", 1_000)
    archive = zip_stream.ZipStream(io.BytesIO(), ZIP_LEVEL)
    archive.start("big.xml")
    archive.write(b"x" * 1_000)
    with pytest.raises(ArchiveTooLarge):
        archive.write(b"x")


def test_a_discarded_archive_writes_nothing_more():
    out = io.BytesIO()
    archive = zip_stream.ZipStream(out, ZIP_LEVEL)
    archive.start("a.xml")
    archive.write(b"<a/>" * 1_000)
    written = len(out.getvalue())
    archive.discard()
    archive.end()
    archive.close()
    assert len(out.getvalue()) == written


def test_the_zip_stream_round_trips_through_zipfile():
    out = io.BytesIO()
    archive = zip_stream.ZipStream(out, ZIP_LEVEL)
    archive.add("empty.xml", b"")
    archive.start("parts.xml")
    for n in range(100):
        archive.write(f"<n>{n}</n>".encode())
    archive.end()
    archive.close()

    read = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    assert read.testzip() is None
    assert read.read("empty.xml") == b""
    assert read.read("parts.xml") == "".join(f"<n>{n}</n>" for n in range(100)).encode()


def test_writes_into_the_non_seekable_multipart_sink():
    upload = FakeUpload()
    sink = MultipartSink(upload, MIN_PART_BYTES)
    assert not sink.seekable()

    write_xlsx_stream(ALL_KINDS, [("a", 1, Decimal("1.00"), date(2025, 3, 1), datetime(2025, 3, 1, 8), True)], sink)
    sink.finish()

    book = load_workbook(io.BytesIO(upload.content))
    assert values(book.active)[1] == ["a", 1, 1, datetime(2025, 3, 1), datetime(2025, 3, 1, 8), True]


class RecordingSink(MultipartSink):
    """A sink that remembers the largest single write it took."""

    largest = 0

    def write(self, data):
        self.largest = max(self.largest, len(data))
        return super().write(data)


def test_parts_go_out_while_rows_are_still_coming_in_small_writes():
    # Constant memory: the file is never held whole; each write is about one compressed batch.
    upload = FakeUpload()
    sink = RecordingSink(upload, MIN_PART_BYTES)
    parts_before_the_last_row = []
    total = 70_000
    rng = random.Random(9)

    def rows():
        for n in range(total):
            if n == total - 1:
                parts_before_the_last_row.append(len(upload.bodies))
            yield (n, base64.b64encode(rng.randbytes(192)).decode())  # text deflate cannot shrink much

    write_xlsx_stream([Column("n", "N", ColumnKind.INTEGER), Column("text", "Text")], rows(), sink)
    sink.finish()

    assert parts_before_the_last_row[0] >= 2
    assert sink.largest < 1024 * 1024
    assert len(upload.bodies) > parts_before_the_last_row[0]
    sheet_xml = zipfile.ZipFile(io.BytesIO(upload.content)).read("xl/worksheets/sheet1.xml")
    assert sheet_xml.count(b"</row>") == total + 1


def test_a_failing_source_writes_nothing_more_and_leaves_no_file_behind(private_tempdir):
    sink = MultipartSink(FakeUpload(), MIN_PART_BYTES)
    written_when_it_failed = []

    def rows():
        yield from ((n,) for n in range(2_500))
        written_when_it_failed.append(sink.bytes_written)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        write_xlsx_stream(ONE, rows(), sink, max_rows_per_sheet=1_000)

    assert sink.bytes_written == written_when_it_failed[0]
    assert list(private_tempdir.iterdir()) == []


def test_the_openpyxl_writer_writes_booleans_typed_too():
    out = io.BytesIO()
    write_xlsx([Column("paid", "Paid", ColumnKind.BOOLEAN)], [(True,), (False,), (None,)], out)
    sheet = load_workbook(io.BytesIO(out.getvalue())).active
    assert [(cell.value, cell.data_type) for cell in sheet["A"][1:]] == [(True, "b"), (False, "b")]
