"""A float column (``ColumnKind.FLOAT``: PostgreSQL ``real`` and ``double precision``, or a
declared ``kind = "float"``) in every format: the exact double where the format holds one
(XLSX, Parquet, JSON Lines), every digit of it as text (CSV, PDF), shown with every decimal."""

import io
import json
import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openpyxl import load_workbook
from python_calamine import CalamineWorkbook

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import FLOAT_NUMBER_FORMAT
from exports.running.writers.csv_writer import write_csv
from exports.running.writers.jsonl_writer import write_jsonl
from exports.running.writers.parquet_writer import write_parquet_stream
from exports.running.writers.pdf.values import RIGHT_ALIGNED, formatter
from exports.running.writers.xlsx_engine import write_xlsx_stream
from exports.running.writers.xlsx_writer import write_xlsx

COLUMNS = [Column("ratio", "Ratio", ColumnKind.FLOAT)]
FLOATS = [0.1, 1 / 3, -2.5, 3.0, 1e-10, 1e22, 1234567.125, 5e-324, -0.0]


def test_csv_writes_every_digit_without_exponent_and_spells_what_is_no_number():
    out = io.BytesIO()
    write_csv(COLUMNS, [(value,) for value in [*FLOATS, math.nan, -math.inf, None]], out)

    lines = out.getvalue().decode().split("\r\n")
    assert lines[1:-1] == [
        "0.1",
        "0.3333333333333333",
        "-2.5",
        "3.0",
        "0.0000000001",
        "10000000000000000000000",
        "1234567.125",
        format(Decimal(repr(5e-324)), "f"),
        "-0.0",
        "NaN",
        "-Infinity",
        '""',  # a row of one empty field is quoted, or it would read as no row
    ]


@pytest.mark.parametrize("engine", [write_xlsx_stream, write_xlsx])
def test_xlsx_cells_hold_the_exact_double_shown_with_every_decimal(engine):
    out = io.BytesIO()
    engine(COLUMNS, [(value,) for value in FLOATS], out)

    sheet = load_workbook(io.BytesIO(out.getvalue())).active
    cells = [row[0] for row in sheet.iter_rows(min_row=2)]
    assert [cell.value for cell in cells] == FLOATS
    assert {cell.number_format for cell in cells} == {FLOAT_NUMBER_FORMAT}
    calamine = CalamineWorkbook.from_filelike(io.BytesIO(out.getvalue())).get_sheet_by_index(0).to_python()
    assert [row[0] for row in calamine[1:]] == FLOATS


def test_json_lines_gives_numbers_that_read_back_as_the_same_double():
    out = io.BytesIO()
    write_jsonl(COLUMNS, iter([(value,) for value in FLOATS] + [(math.inf,)]), out)

    records = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    assert [record["ratio"] for record in records] == [*FLOATS, "Infinity"]


def test_parquet_types_the_column_as_a_double_and_takes_decimals_too():
    out = io.BytesIO()
    rows = [(value,) for value in FLOATS] + [(Decimal("2.25"),), (7,), (None,), (math.nan,)]
    write_parquet_stream(COLUMNS, iter(rows), out)

    table = pq.read_table(io.BytesIO(out.getvalue()))
    assert table.schema.field("ratio").type == pa.float64()
    values = table.column("ratio").to_pylist()
    assert values[:-1] == [*FLOATS, 2.25, 7.0, None] and math.isnan(values[-1])


def test_pdf_shows_a_float_as_xlsx_does_grouped_with_every_decimal_aligned_right():
    show = formatter(ColumnKind.FLOAT)

    assert [show(value) for value in [0.1, 3.0, -1234.5, 1234567.125, 1e-7, -0.0, None]] == [
        "0.1",
        "3.0",
        "-1,234.5",
        "1,234,567.125",
        "0.0000001",
        "-0.0",
        "",
    ]
    assert show(math.nan) == "NaN"
    assert formatter(ColumnKind.DECIMAL)(0.5) == "0.5"  # a float in a decimal column too
    assert formatter(ColumnKind.DECIMAL)(Decimal("0.5")) == "0.50"
    assert ColumnKind.FLOAT in RIGHT_ALIGNED
