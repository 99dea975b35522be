"""An export written in partitions, assembled in memory: the same file as the single worker's
(CSV byte for byte, csv.gz once inflated, XLSX entry for entry and cell for cell), whatever the
partitions and wherever the sheet boundaries fall."""

import gzip
import io
import subprocess
import zipfile
from datetime import date, datetime
from decimal import Decimal

import pytest
from openpyxl import load_workbook
from python_calamine import CalamineWorkbook

from bench.compat import partitioned_workbook
from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS, fitted_widths
from exports.running.writers.csv_writer import write_csv
from exports.running.writers.partitioned import SheetPiece
from exports.running.writers.partitioned_csv import write_csv_partition
from exports.running.writers.partitioned_xlsx import XlsxLayout, plan_sheets, write_xlsx_partition
from exports.running.writers.xlsx_engine import ArchiveTooLarge, write_xlsx_stream, zip_stream
from exports.running.writers.xlsx_engine.workbook import ZIP_LEVEL

COLUMNS = [
    Column("id", "Id", ColumnKind.INTEGER),
    Column("name", "Name"),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    Column("day", "Day", ColumnKind.DATE),
    Column("at", "At", ColumnKind.DATETIME),
    Column("paid", "Paid", ColumnKind.BOOLEAN),
    Column("note", "Note"),
]
NOTES = (None, "=SUM(A1)", "-10%", "请周末送货", "a & b <c>", "  padded ", "line\nbreak")


def make_rows(count):
    return [
        (
            n,
            f"Customer {n} Müller",
            Decimal(n * 37 % 5000) / 100,
            date(2025, 1, 1 + n % 28),
            datetime(2025, 1, 1, n % 24, n % 60, 7),
            n % 3 == 0,
            NOTES[n % len(NOTES)],
        )
        for n in range(count)
    ]


def split(rows, sizes):
    """``rows`` cut into partitions of ``sizes``, each as pages of up to 7 rows."""
    partitions, start = [], 0
    for size in sizes:
        part = rows[start : start + size]
        partitions.append([part[i : i + 7] for i in range(0, len(part), 7)])
        start += size
    assert start == len(rows)
    return partitions


def even(total, count):
    return [total // count + (index < total % count) for index in range(count)]


# plan ----------------------------------------------------------------------------------------


def test_sheets_are_cut_across_partitions_wherever_they_fall():
    pieces = plan_sheets([7, 0, 5, 3], max_rows_per_sheet=4)

    assert pieces == [
        SheetPiece(partition=0, sheet=1, first_row=0, rows=4, sheet_rows=4),
        SheetPiece(partition=0, sheet=2, first_row=0, rows=3, sheet_rows=4),
        SheetPiece(partition=2, sheet=2, first_row=3, rows=1, sheet_rows=4),
        SheetPiece(partition=2, sheet=3, first_row=0, rows=4, sheet_rows=4),
        SheetPiece(partition=3, sheet=4, first_row=0, rows=3, sheet_rows=3),
    ]
    assert [(piece.opens, piece.closes) for piece in pieces] == [
        (True, True),
        (True, False),
        (False, True),
        (True, True),
        (True, True),
    ]


def test_an_empty_export_is_one_empty_sheet_in_partition_zero():
    assert plan_sheets([0, 0]) == [SheetPiece(partition=0, sheet=1, first_row=0, rows=0, sheet_rows=0)]


@pytest.mark.parametrize("sizes", [[], [-1, 3]])
def test_a_plan_needs_partitions_of_at_least_zero_rows(sizes):
    with pytest.raises(ValueError):
        plan_sheets(sizes)


# CSV and csv.gz ----------------------------------------------------------------------------------


def single_csv(rows, **options):
    out = io.BytesIO()
    write_csv(COLUMNS, rows, out, **options)
    return out.getvalue()


def partitioned_csv(rows, sizes, **options):
    segments = []
    for index, pages in enumerate(split(rows, sizes)):
        out = io.BytesIO()
        assert write_csv_partition(COLUMNS, pages, out, index, **options) == sizes[index]
        segments.append(out.getvalue())
    return b"".join(segments)


@pytest.mark.parametrize("sizes", [[300], [150, 150], [1, 120, 0, 179], [0, 100, 100, 100]])
@pytest.mark.parametrize("options", [{}, {"bom": True}, {"formula_guard": False}])
def test_csv_partitions_concatenate_into_the_single_workers_file(sizes, options):
    rows = make_rows(300)

    assert partitioned_csv(rows, sizes, **options) == single_csv(rows, **options)


@pytest.mark.parametrize("sizes", [[300], [150, 150], [75, 0, 150, 75]])
def test_csv_gz_partitions_are_gzip_members_of_the_single_workers_csv(sizes):
    rows = make_rows(300)
    body = partitioned_csv(rows, sizes, gzip=True, bom=True)

    assert gzip.decompress(body) == single_csv(rows, bom=True)
    assert body.count(b"\x1f\x8b\x08") >= len(sizes)
    checked = subprocess.run(["gzip", "-t"], input=body, capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr


# XLSX ----------------------------------------------------------------------------------------


def single_xlsx(rows, max_rows):
    out = io.BytesIO()
    write_xlsx_stream(COLUMNS, rows, out, max_rows_per_sheet=max_rows)
    return out.getvalue()


def layout_for(rows, sizes, max_rows):
    widths = fitted_widths(COLUMNS, rows[:WIDTH_SAMPLE_ROWS])
    return XlsxLayout(COLUMNS, widths, plan_sheets(sizes, max_rows))


def partitioned_xlsx(rows, sizes, max_rows, order=None):
    """The workbook written partition by partition (in ``order``, any), assembled (the same
    assembly ``make compat`` has LibreOffice read)."""
    return partitioned_workbook(COLUMNS, split(rows, sizes), max_rows, list(order) if order is not None else None)


def entries(body):
    archive = zipfile.ZipFile(io.BytesIO(body))
    assert archive.testzip() is None
    return {name: archive.read(name) for name in archive.namelist()}


def openpyxl_cells(body):
    workbook = load_workbook(io.BytesIO(body))
    return {sheet.title: [[cell.value for cell in row] for row in sheet.iter_rows()] for sheet in workbook}


def calamine_cells(body):
    workbook = CalamineWorkbook.from_filelike(io.BytesIO(body))
    return {name: workbook.get_sheet_by_name(name).to_python() for name in workbook.sheet_names}


@pytest.mark.parametrize(
    ("sizes", "max_rows"),
    [
        ([230], 1_048_575),
        ([115, 115], 1_048_575),
        ([50, 60, 70, 50], 1_048_575),
        ([230], 40),
        ([115, 115], 40),  # a sheet boundary inside each partition
        ([40, 40, 0, 150], 40),  # boundaries on partition boundaries, an empty partition
        ([3, 7, 200, 20], 40),  # a partition of several sheets
        ([1, 1, 1, 227], 1),
    ],
)
def test_xlsx_partitions_assemble_into_the_single_workers_workbook(sizes, max_rows):
    rows = make_rows(230)
    single = single_xlsx(rows, max_rows)
    body = partitioned_xlsx(rows, sizes, max_rows, order=reversed(range(len(sizes))))

    assert list(entries(body)) == list(entries(single))
    assert entries(body) == entries(single)  # every part's XML, byte for byte
    assert openpyxl_cells(body) == openpyxl_cells(single)
    assert calamine_cells(body) == calamine_cells(single)


def test_an_empty_xlsx_export_assembles():
    single = single_xlsx([], 10)

    assert entries(partitioned_xlsx([], [0, 0], 10)) == entries(single)


def test_a_partition_with_other_rows_than_planned_raises():
    rows = make_rows(20)
    layout = layout_for(rows, [10, 10], 40)
    with pytest.raises(ValueError, match="more rows"):
        write_xlsx_partition(layout, 0, [rows[:11]], [io.BytesIO()])
    with pytest.raises(ValueError, match="fewer rows"):
        write_xlsx_partition(layout, 1, [rows[:9]], [io.BytesIO()])
    with pytest.raises(ValueError, match="more rows"):
        write_xlsx_partition(XlsxLayout(COLUMNS, [], plan_sheets([0, 20])), 0, [rows[:1]], [])


def test_a_workbook_past_the_archive_limit_is_refused_by_the_assembler(monkeypatch):
    monkeypatch.setattr(zip_stream, "MAX_ARCHIVE_BYTES", 5_000)
    with pytest.raises(ArchiveTooLarge):
        partitioned_xlsx(make_rows(2_000), [1_000, 1_000], 1_048_575)


def test_a_zip_entry_is_deflated_either_here_or_elsewhere():
    archive = zip_stream.ZipStream(io.BytesIO(), ZIP_LEVEL)
    archive.start("a.xml")
    archive.write(b"<a/>")
    with pytest.raises(ValueError, match="deflated here"):
        archive.add_deflated(0, 1, 1)
    archive.end()
    archive.start("b.xml")
    archive.add_deflated(0, 1, 1)
    with pytest.raises(ValueError, match="deflated elsewhere"):
        archive.write(b"<b/>")


def test_a_sheet_past_four_gib_is_refused_by_the_assembler(monkeypatch):
    monkeypatch.setattr(zip_stream, "MAX_ENTRY_BYTES", 20_000)
    with pytest.raises(ArchiveTooLarge, match="would pass 4 GiB"):
        partitioned_xlsx(make_rows(300), [150, 150], 1_048_575)
