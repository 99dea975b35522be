"""Floats in a decimal column (the float fast path of the XLSX row encoder): every float a
double is reads back as exactly that float, through openpyxl and python-calamine, shown with
every decimal it has; NaN and the infinities are their text, as in CSV."""

import io
import math
import random
import struct
from decimal import Decimal

import pytest
from openpyxl import load_workbook
from python_calamine import CalamineWorkbook

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.cells import FLOAT_NUMBER_FORMAT
from exports.running.writers.csv_writer import csv_text
from exports.running.writers.xlsx_engine import write_xlsx_stream
from exports.running.writers.xlsx_engine.rows import Style, cell, rows_encoder
from exports.running.writers.xlsx_writer import write_xlsx
from tests.unit.cell_refs import with_references

COLUMNS = [Column("ratio", "Ratio", ColumnKind.DECIMAL), Column("amount", "Amount", ColumnKind.DECIMAL)]
EDGES = [0.0, -0.0, 0.1, 1 / 3, -2.5, 1e-300, 5e-324, 1.7976931348623157e308, 1e22, 2.0**53, 2.0**53 + 2, 123456.789]


def random_floats(count):
    rng = random.Random(25)
    # Any bit pattern that is a finite double, and everyday magnitudes.
    doubles = (struct.unpack("<d", rng.randbytes(8))[0] for _ in range(count * 2))
    finite = [value for value in doubles if math.isfinite(value)][:count]
    return finite + [rng.uniform(-1e6, 1e6) for _ in range(count)]


ENGINES = {"stream": write_xlsx_stream, "openpyxl": write_xlsx}


def written(rows, engine="stream"):
    out = io.BytesIO()
    ENGINES[engine](COLUMNS, rows, out)
    return out.getvalue()


@pytest.mark.parametrize("engine", ENGINES)
def test_every_float_reads_back_exactly_in_openpyxl_and_calamine(engine):
    floats = EDGES + random_floats(500)
    rows = [(value, Decimal("12.30")) for value in floats]
    body = written(rows, engine)

    sheet = load_workbook(io.BytesIO(body)).active
    read = [(row[0].value, row[0].number_format, row[1].number_format) for row in sheet.iter_rows(min_row=2)]
    assert [value for value, _, _ in read] == floats
    assert [math.copysign(1, value) for value, _, _ in read] == [math.copysign(1, value) for value in floats]
    assert {(shown, amount) for _, shown, amount in read} == {(FLOAT_NUMBER_FORMAT, "#,##0.00")}

    calamine = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
    assert [row[0] for row in calamine[1:]] == floats


@pytest.mark.parametrize("engine", ENGINES)
def test_nan_and_infinities_are_their_csv_text(engine):
    values = [math.nan, math.inf, -math.inf]
    sheet = load_workbook(io.BytesIO(written([(value, None) for value in values], engine))).active

    assert [row[0].value for row in sheet.iter_rows(min_row=2)] == [csv_text(value) for value in values]
    assert [csv_text(value) for value in values] == ["NaN", "Infinity", "-Infinity"]


@pytest.mark.parametrize("value", [*EDGES, math.nan, math.inf, -math.inf])
def test_the_float_template_writes_what_the_general_cell_function_writes(value):
    row_xml = rows_encoder(COLUMNS[:1])([(value,)], 1)

    assert with_references(row_xml) == f'<row r="2">{cell(value, "A2", Style.DECIMAL)}</row>'


def test_a_float_outside_a_decimal_column_keeps_that_columns_format():
    assert cell(1.5, "A2", Style.NONE) == '<c r="A2"><v>1.5</v></c>'
    assert cell(1.5, "A2", Style.DECIMAL) == f'<c r="A2" s="{int(Style.FLOAT)}"><v>1.5</v></c>'


def test_cells_leave_out_their_reference_only_right_after_a_cell_of_their_row():
    columns = [Column("a", "A"), Column("b", "B", ColumnKind.INTEGER), Column("c", "C", ColumnKind.DECIMAL)]
    rows = [("x", 1, 1.5), (None, 2, 2.5), ("", 3, None), ("=1", 4, math.nan), ("\ud800", 5, 0.25), ("y", None, 0.5)]

    xml = rows_encoder(columns)(rows, 1)
    assert xml.startswith('<row r="2"><c t="inlineStr"><is><t>x</t></is></c><c><v>1</v></c><c s="7"><v>1.5</v></c>')
    # After None, empty text and text left empty (general path): a reference. Formula-looking
    # text has a template of its own (quotePrefix), so the next cell follows it without one.
    assert '<row r="3"><c r="B3"><v>2</v></c><c s="7">' in xml
    assert '<row r="4"><c r="B4"><v>3</v></c></row>' in xml
    assert '<row r="5"><c s="5" t="inlineStr"><is><t>=1</t></is></c><c><v>4</v></c>' in xml
    assert '<c r="B6"><v>5</v></c>' in xml
    assert '<c r="C7" s="7"><v>0.5</v></c>' in xml

    for engine_rows in (rows, rows * 3):
        body = written_columns(columns, engine_rows)
        sheet = load_workbook(io.BytesIO(body)).active
        calamine = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
        expected = [["x", 1, 1.5], [None, 2, 2.5], [None, 3, None], ["=1", 4, "NaN"], [None, 5, 0.25], ["y", None, 0.5]]
        assert [[cell.value for cell in row] for row in sheet.iter_rows(min_row=2)] == expected * (
            len(engine_rows) // 6
        )
        assert [[None if v == "" else v for v in row] for row in calamine[1:]] == expected * (len(engine_rows) // 6)


def written_columns(columns, rows):
    out = io.BytesIO()
    write_xlsx_stream(columns, rows, out)
    return out.getvalue()
