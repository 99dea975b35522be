"""CSV: RFC 4180 quoting, CRLF, optional BOM, typed values as text, formulas neutralised."""

import csv
import io
from datetime import date, datetime
from decimal import Decimal

from examples.demo_plugins.orders import ORDER_COLUMNS
from exports.core.export_type import Column, ColumnKind
from exports.running.writers.csv_writer import write_csv

BOM = b"\xef\xbb\xbf"
TEXT = [Column("name", "Name"), Column("note", "Note")]


def write(columns, rows, **options):
    out = io.BytesIO()
    count = write_csv(columns, rows, out, **options)
    return count, out.getvalue()


def parse(data, encoding="utf-8"):
    return list(csv.reader(io.StringIO(data.decode(encoding), newline="")))


def test_exact_bytes_with_rfc_4180_quoting():
    _, data = write(TEXT, [("a,b", 'say "hi"'), ("line1\nline2", None), ("plain", "")])

    assert data == b'Name,Note\r\n"a,b","say ""hi"""\r\n"line1\nline2",\r\nplain,\r\n'


def test_round_trip_through_csv_reader():
    rows = [
        ("王芳", "请周末送货"),
        ("Ava O'Brien", 'SKU-1003 27" 显示器 Monitor x1'),
        ("Smith, Liam", "网络摄像头 Webcam, 1080p"),
        ("multi", "first line\nsecond line\r\nthird line"),
        ("Noah Müller", None),
    ]

    count, data = write(TEXT, rows)

    assert count == len(rows)
    assert parse(data) == [
        ["Name", "Note"],
        ["王芳", "请周末送货"],
        ["Ava O'Brien", 'SKU-1003 27" 显示器 Monitor x1'],
        ["Smith, Liam", "网络摄像头 Webcam, 1080p"],
        ["multi", "first line\nsecond line\r\nthird line"],
        ["Noah Müller", ""],
    ]


def test_every_line_ends_with_crlf():
    _, data = write(TEXT, [("a", "b"), ("c", "d")])

    assert data.split(b"\r\n") == [b"Name,Note", b"a,b", b"c,d", b""]
    assert data.count(b"\n") == data.count(b"\r\n") == 3


def test_bom_only_when_asked():
    rows = [("王芳", "请周末送货")]
    _, plain = write(TEXT, rows)
    _, with_bom = write(TEXT, rows, bom=True)

    assert not plain.startswith(BOM)
    assert with_bom.startswith(BOM)
    assert with_bom.count(BOM) == 1
    assert with_bom == BOM + plain
    assert parse(with_bom, "utf-8-sig") == parse(plain)


def test_typed_values_are_written_as_plain_text():
    columns = [
        Column("d", "Day", ColumnKind.DATE),
        Column("t", "At", ColumnKind.DATETIME),
        Column("a", "Amount", ColumnKind.DECIMAL),
        Column("b", "Big", ColumnKind.DECIMAL),
        Column("r", "Refund", ColumnKind.DECIMAL),
        Column("n", "Items", ColumnKind.INTEGER),
        Column("m", "Delta", ColumnKind.INTEGER),
        Column("x", "Empty"),
    ]
    row = (
        date(2025, 3, 1),
        datetime(2025, 3, 1, 12, 30, 5, 123_456),
        Decimal("1234.50"),
        Decimal("1E+3"),
        Decimal("-2.50"),
        7,
        -4,
        None,
    )

    _, data = write(columns, [row])

    assert parse(data)[1] == ["2025-03-01", "2025-03-01 12:30:05.123456", "1234.50", "1000", "-2.50", "7", "-4", ""]


def test_formula_text_is_neutralised():
    _, data = write(TEXT, [("=1+2", '=HYPERLINK("http://x")'), ("@home", "-10% coupon applied"), ("\t=1", "\rx")])

    assert parse(data)[1:] == [
        ["'=1+2", '\'=HYPERLINK("http://x")'],
        ["'@home", "'-10% coupon applied"],
        ["'\t=1", "'\rx"],
    ]


def test_header_is_the_column_headers():
    _, data = write(list(ORDER_COLUMNS), [])
    assert parse(data) == [[column.header for column in ORDER_COLUMNS]]


def test_counts_rows_and_reports_each_one():
    seen: list[int] = []
    count, _ = write(TEXT, [("a", "1"), ("b", "2"), ("c", "3")], on_row=seen.append)

    assert count == 3
    assert seen == [1, 2, 3]


def test_no_rows_gives_the_header_only():
    count, data = write(TEXT, [])
    assert count == 0
    assert data == b"Name,Note\r\n"


def test_leaves_the_output_open():
    out = io.BytesIO()
    write_csv(TEXT, [("a", "b")], out)

    assert not out.closed
    out.write(b"more")
    assert out.getvalue().endswith(b"a,b\r\nmore")
