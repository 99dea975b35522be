"""The PDF writer, read back with pypdf, rendered with pdftoppm and checked with qpdf: the text
of sampled pages equals the rows (Chinese, Cyrillic, Greek, Latin), the header is on every page,
pages are numbered "n / total", wide tables turn landscape, memory does not grow with the rows."""

from __future__ import annotations

import io
import tracemalloc
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.pdf import PdfHeading, write_pdf_stream
from exports.running.writers.pdf.document import PAGES_PER_NODE
from exports.running.writers.pdf.font import CompositeFont
from exports.running.writers.pdf.layout import ELLIPSIS, MAX_CELL_LINES, wrap
from exports.running.writers.pdf.values import formatter
from tests.pdf_reading import page_lines, qpdf_check, reader, render

COLUMNS = [
    Column("id", "编号 ID", ColumnKind.INTEGER, 6),
    Column("name", "Имя Name"),
    Column("amount", "Ποσό Amount", ColumnKind.DECIMAL),
    Column("day", "Day", ColumnKind.DATE, 10),
    Column("ok", "OK", ColumnKind.BOOLEAN, 5),
]
NAMES = ["张伟 王芳", "Иван Петров", "Αλέξανδρος Παπαδόπουλος", "José Müller-Lüdenscheidt"]


def row(number: int) -> tuple[object, ...]:
    day = date(2026, 1, 1 + number % 28)
    return (number, f"{NAMES[number % 4]} {number}", Decimal(number) / 4, day, number % 3 == 0)


def shown(number: int) -> str:
    """The row as its line on the page: the values as XLSX shows them."""
    values = row(number)
    return f"{number} {values[1]} {Decimal(number) / 4:,.2f} {values[3]} {'TRUE' if number % 3 == 0 else 'FALSE'}"


def pdf(rows: int, columns: list[Column] = COLUMNS) -> bytes:
    out = io.BytesIO()
    heading = PdfHeading("订单 Orders", ("Filters: region = 华东", "Generated: 2026-12-02 04:00:00 UTC"))
    assert write_pdf_stream(columns, (row(n) for n in range(rows)), out, heading) == rows
    return out.getvalue()


@pytest.fixture(scope="module")
def body() -> bytes:
    return pdf(3000)


def test_qpdf_finds_no_error(body: bytes) -> None:
    check = qpdf_check(body)

    assert check.returncode == 0, check.stdout + check.stderr
    assert "No syntax or stream encoding errors" in check.stdout


def test_sampled_pages_hold_the_header_and_the_rows_in_every_script(body: bytes) -> None:
    document = reader(body)
    pages = len(document.pages)
    seen: list[str] = []
    for number in sorted({0, 1, pages // 2, pages - 1}):
        lines = [line.text for line in page_lines(document.pages[number])]
        header = lines.index("编号 ID Имя Name Ποσό Amount Day OK")
        assert lines[-2:] == [f"{number + 1:,} /", f"{pages:,}"]  # the total is the form drawn last
        if number == 0:
            assert lines[:3] == ["订单 Orders", "Filters: region = 华东", "Generated: 2026-12-02 04:00:00 UTC"]
        seen.extend(lines[header + 1 : -2])
    first = int(seen[0].split()[0])
    assert first == 0
    by_id = {int(text.split()[0]): text for text in seen}
    assert all(by_id[number] == shown(number) for number in by_id)
    assert len(by_id) > 100 and max(by_id) == 2999


def test_every_row_is_on_a_page_once(body: bytes) -> None:
    document = reader(body)
    ids = [
        int(line.text.split()[0])
        for page in document.pages
        for line in page_lines(page)
        if line.text.split()[0].isdigit() and "/" not in line.text and line.text[0].isdigit() and len(line.text) > 4
    ]
    assert ids == list(range(3000))
    assert document.metadata is not None and document.metadata.title == "订单 Orders"


def test_a_rendered_page_is_not_blank_and_shows_the_grey_header_band(body: bytes) -> None:
    first, later = render(body, 1), render(body, 2)

    assert first.dark_share(0.0, 1.0) > 0.01  # text was drawn
    # The header band is near the top of every page: light grey fill with dark text on it.
    assert later.grey_share(0.02, 0.08) > 0.05
    assert later.dark_share(0.02, 0.08) > 0.003
    # Data rows are not filled (their grey is the rules' and the text's anti-aliasing).
    assert later.grey_share(0.02, 0.08) > 3 * later.grey_share(0.5, 0.9)


def test_a_table_narrow_enough_stays_portrait_and_a_wide_one_turns_landscape() -> None:
    narrow = reader(pdf(5)).pages[0].mediabox
    wide_columns = [*COLUMNS, *(Column(f"c{n}", f"Column {n}", width=20) for n in range(6))]
    wide_rows = io.BytesIO()
    write_pdf_stream(wide_columns, [(*row(1), *("x" * 20 for _ in range(6)))], wide_rows)
    wide = reader(wide_rows.getvalue()).pages[0].mediabox

    assert narrow.height > narrow.width
    assert wide.width > wide.height


def test_numbers_are_right_aligned_and_text_left_aligned(body: bytes) -> None:
    positions: dict[str, set[float]] = {"one digit": set(), "four digits": set()}
    document = reader(body)
    for line in page_lines(document.pages[0]):
        number = line.text.split()[0]
        if number.isdigit() and len(line.text) > 4:
            positions["one digit" if len(number) == 1 else "four digits"].add(line.x)
    # Right aligned: a one-digit id starts further right than a two-digit one.
    (one,) = positions["one digit"]
    assert one > 28.0 + 2.5


def test_an_export_without_rows_is_one_page_with_the_header() -> None:
    document = reader(pdf(0))

    assert len(document.pages) == 1
    assert "编号 ID Имя Name Ποσό Amount Day OK" in [line.text for line in page_lines(document.pages[0])]


def test_thousands_of_pages_go_under_a_balanced_page_tree() -> None:
    body = pdf(PAGES_PER_NODE * 60)  # at least 256 pages: more than one node
    document = reader(body)
    trailer: Any = document.trailer
    root = trailer["/Root"]["/Pages"]

    assert len(document.pages) > PAGES_PER_NODE
    assert len(root["/Kids"]) == -(-len(document.pages) // PAGES_PER_NODE)
    assert qpdf_check(body).returncode == 0


def test_memory_does_not_grow_with_the_rows() -> None:
    def peak(rows: int) -> int:
        tracemalloc.start()
        try:
            write_pdf_stream(COLUMNS, (row(n) for n in range(rows)), _Discard())
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(1_500), peak(9_000)  # past the layout caches' size in both
    assert large < small * 1.3, (small, large)


class _Discard(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        return len(data)  # type: ignore[arg-type]


def test_values_are_shown_as_xlsx_shows_them() -> None:
    decimal, integer, day, moment = (
        formatter(ColumnKind.DECIMAL),
        formatter(ColumnKind.INTEGER),
        formatter(ColumnKind.DATE),
        formatter(ColumnKind.DATETIME),
    )
    assert decimal(Decimal("1234.5")) == "1,234.50" and decimal(7) == "7.00"
    # A float shows every decimal of its shortest form, as XLSX's float format does.
    assert decimal(0.1) == "0.1" and formatter(ColumnKind.FLOAT)(1234.5) == "1,234.5"
    # Numbers no double holds exactly: every digit, as the XLSX text cell.
    assert decimal(Decimal("0.30000000000000000001")) == "0.30000000000000000001"
    assert integer(2**53 + 1) == "9007199254740993" and integer(12345) == "12345"
    assert decimal(float("nan")) == "NaN" and decimal(Decimal("-Infinity")) == "-Infinity"
    assert day(date(2026, 3, 1)) == "2026-03-01" and moment(date(2026, 3, 1)) == "2026-03-01 00:00:00"
    assert moment(datetime(2026, 3, 1, 8, 30, 5, 123999)) == "2026-03-01 08:30:05.123"
    assert day(datetime(2026, 3, 1, 8, 30)) == "2026-03-01"
    assert moment(datetime(1899, 12, 30, 1, 2, 3)) == "1899-12-30 01:02:03"  # before serials: CSV's text
    assert formatter(ColumnKind.BOOLEAN)(True) == "TRUE" and formatter(ColumnKind.STRING)(None) == ""


def test_long_text_wraps_at_spaces_and_ends_with_an_ellipsis_past_the_last_line() -> None:
    font = CompositeFont()
    text = "word " * 200
    font.register(text + ELLIPSIS + "x")
    limit = font.width("word word word")

    lines = wrap(text, font.advances, limit)
    assert len(lines) == MAX_CELL_LINES and lines[0] == "word word word" and lines[-1].endswith(ELLIPSIS)
    assert wrap("word\nword", font.advances, limit) == ["word", "word"]
    assert wrap("x" * 40, font.advances, font.width("x" * 10)) == ["x" * 10] * 4
