"""The type corpus: every built-in PostgreSQL type (arrays, a domain, an enum and a composite too)
and the edge values that went wrong before, exported in every format and compared cell by cell
with the database read by an independent path: psycopg's text output of ``col::text`` in a
session of its own, and the files read back with python-calamine (the XLSX as Excel shows it).

The rules are docs/export-your-own-data.md's "How values are typed": a number cell only where a
double holds the value exactly, every other value as PostgreSQL's text; never a Python repr."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import unicodedata
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars
import psycopg
import pyarrow.parquet as pq
import pytest
from psycopg.types.string import TextLoader
from python_calamine import CalamineWorkbook

from exports.export_types.base import Column, ColumnKind, ExportType, Row
from exports.writers import csv_writer, jsonl_writer, parquet_writer, pdf, xlsx_engine, xlsx_writer
from exports.writers.gzip_stream import GzipStream
from exports.writers.pdf import layout
from exports.writers.pdf.layout import ELLIPSIS, MARGIN
from tests.pdf_reading import page_lines, qpdf_check, reader
from tests.postgres.conftest import declared_types, write_declaration

SCHEMA = """
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
CREATE DOMAIN label AS text;
CREATE TYPE pair AS (n integer, t text);
CREATE TABLE corpus (
    id integer PRIMARY KEY,
    c_int2 smallint, c_int4 integer, c_int8 bigint, c_numeric numeric, c_numeric_2 numeric(10, 2),
    c_real real, c_double double precision, c_money money,
    c_text text, c_varchar varchar(10), c_char char(5), c_name name, c_bytea bytea, c_bool boolean,
    c_date date, c_time time, c_timetz timetz, c_timestamp timestamp, c_timestamptz timestamptz,
    c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb,
    c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
    c_point point, c_line line, c_lseg lseg, c_box box, c_path path, c_polygon polygon, c_circle circle,
    c_bit bit(4), c_varbit varbit, c_tsvector tsvector, c_tsquery tsquery,
    c_int4range int4range, c_numrange numrange, c_tstzrange tstzrange, c_daterange daterange,
    c_multirange int4multirange, c_oid oid, c_lsn pg_lsn,
    c_int_array integer[], c_numeric_array numeric[], c_varchar_array varchar[], c_matrix text[],
    c_mood mood, c_moods mood[], c_positive positive, c_label label, c_pair pair
);
INSERT INTO corpus VALUES (
    1, -32768, 2147483647, 9007199254740992, 12.50, 1234.56, 0.1, 0.30000000000000004, 1234.56,
    'Zoë "quoted", 王芳', 'short', 'ab', 'pg_name', '\\xdeadbeef', true,
    '2025-03-01', '08:30:00', '08:30:00+02', '2025-03-01 12:30:05', '2025-03-01 12:30:05+00',
    'P1Y2M3DT4H5M6S', 'a8098c1a-f86e-11da-bd1a-00112444be1e', '{"k": [1, 2], "s": "x"}', '{"b": 1.50, "a": null}',
    '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
    '(1.5,2)', '{1,-1,0}', '[(0,0),(1,1)]', '(1,1),(0,0)', '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(1,0))', '<(0,0),1>',
    B'1010', B'101', 'a fat cat', 'fat & cat', '[1,10)', '(1.5,2.5]', '[2025-01-01 00:00+00,2025-02-01 00:00+00)',
    '[2025-01-01,2025-02-01)', '{[1,3),[5,7)}', 42, '16/B374D848',
    '{1,2,3}', '{1.5,2}', '{"a b","c,d",NULL}', '{{a,b},{c,d}}',
    'happy', '{happy,sad}', 7, 'a label', '(1,"x y")'
), (
    3, 32767, -2147483648, 9007199254740993, 1e400, -0.005, 'NaN', 1e-10, -0.01,
    E'bell\\x07 tab\\t ctrl\\x01 _x0041_ literal', '', ' ', 'n', '\\x', false,
    '0044-03-15 BC', '23:59:59.999999', '00:00:00-12', '-infinity', '9999-12-31 23:59:59.999999+00',
    '-1 day -00:00:01', '00000000-0000-0000-0000-000000000000', '"a JSON string"', 'null',
    '::1', '::/0', '00:00:00:00:00:00', '00:00:00:00:00:00:00:00',
    '(-0,1e-10)', '{0,1,0}', '[(1,2),(3,4)]', '(0,0),(0,0)', '((0,0),(1,1))', '((0,0))', '<(1,1),0.5>',
    B'0000', B'', '', 'a', 'empty', '(,)', 'empty', '(,2025-01-01)', '{}', 0, '0/0',
    '{}', '{NaN,Infinity,-Infinity}', '{}', '{}',
    'sad', '{}', 1, '=1+1', '(,)'
), (
    4, 0, 0, -9223372036854775808, 'Infinity', 99999999.99, 'Infinity', '-Infinity', 0,
    repeat('long ', 300), '王芳王芳', 'x', 'x', '\\x00ff', NULL,
    'infinity', '00:00:00', '12:00:00+14', '0005-01-01 00:00:00', '1899-12-30 00:00:00+00',
    '0', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '{"big": 3.14159265358979323846264, "huge": 12345678901234567890.1}',
    '[1, "two", {"three": 3.0}]', '255.255.255.255', '192.168.0.0/16', 'ff:ff:ff:ff:ff:ff',
    'ff:ff:ff:ff:ff:ff:ff:ff', '(1e300,-1e300)', '{1,0,-1e300}', '[(0,0),(0,0)]', '(2,2),(1,1)', '[(0,0)]',
    '((0,0),(0,1))', '<(0,0),0>', B'1111', B'1111111111', 'x:1A y:2B', '!x', '(,)', '[0,0]', '(,)',
    '[1900-02-28,1900-03-01]', '{[1,2)}', 4294967295, 'FFFFFFFF/FFFFFFFF',
    '{-2147483648,2147483647}', '{1e-20,12345678901234567890.123}', '{"王"}', '{{NULL}}',
    'happy', '{sad,happy,sad}', 2147483647, '-leading minus', '(2147483647,"")'
), (
    5, 1, 1, 1, 0.1, 0.10, -0.0, 1e300, 92233720368547758.07,
    '1900-03-01 looks like a date', 'a', 'abcde', 'zz', '\\x41', true,
    '1900-02-28', '12:00:00', '12:00:00+00', '1900-03-01 00:00:00.001', '2025-01-01 10:00:00.123456+00',
    'PT0.000001S', '12345678-1234-1234-1234-123456789abc', '1e400', '{}',
    '10.1.2.3', '10.1.0.0/16', '01:23:45:67:89:ab', '01:23:45:67:89:ab:cd:ef', '(0,0)', '{1,1,1}',
    '[(0,0),(0,1)]', '(1,1),(0,0)', '((0,0),(1,0),(1,1))', '((0,0),(1,0),(0,1))', '<(5,5),5>', B'0101', B'0',
    'z', 'z', '[5,6)', '[0,1)', '[2025-01-01 00:00:00.5+00,)', '[2025-01-01,)', '{[1,2),[3,4)}', 1, '1/1',
    '{0}', '{0.0}', '{""}', '{{"",""}}', 'sad', '{happy}', 3, '@home', '(0,"_x0041_")'
);
-- A row of NULLs in every column.
INSERT INTO corpus (id) VALUES (2);
"""
DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.corpus]
description = "every type"
source = "db"
query = "SELECT * FROM corpus"
order_key = ["id"]
# The corpus is the same for every caller.
allow = { groups = ["tests"] }
"""


def corpus_copy_type(uri: str, folder: Path, sources: str) -> tuple[ExportType, list[str]]:
    """A declared type over every corpus column but the ``real`` one, under ``sources`` (a
    declaration's ``[sources]`` part), and those columns' names: what the COPY and Python
    paths are compared on."""
    with psycopg.connect(uri) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'corpus'"
                " AND data_type <> 'real' ORDER BY ordinal_position"
            )
        ]
    declaration = sources + (
        f'[types.corpus]\ndescription = "every type but real"\nsource = "db"\n'
        f'query = "SELECT {", ".join(names)} FROM corpus"\norder_key = ["id"]\n'
    )
    return declared_types(write_declaration(folder, declaration), {"DB_URL": uri})["corpus"], names


@pytest.fixture(scope="module")
def corpus(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ExportType]:
    uri = postgres.uri("corpus")
    postgres.create_database("corpus")
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            "DROP TABLE IF EXISTS corpus; DROP TYPE IF EXISTS pair, mood; DROP DOMAIN IF EXISTS positive, label"
        )
        conn.execute(SCHEMA)
    folder = tmp_path_factory.mktemp("corpus")
    return uri, declared_types(write_declaration(folder, DECLARATION), {"DB_URL": uri})["corpus"]


def database_text(uri: str, names: list[str]) -> list[list[str | None]]:
    """Every cell as PostgreSQL's output function writes it (psycopg's text results, loaded as
    the text itself), in a session of its own with the settings the rules name (UTC, ISO 8601
    intervals, hex bytea); money by its numeric value, timestamptz as its UTC wall time."""
    columns = []
    for name in names:
        if name == "c_money":
            columns.append(f"{name}::numeric")
        elif name == "c_timestamptz":
            columns.append(f"{name} AT TIME ZONE 'UTC'")
        else:
            columns.append(name)
    query = f"SELECT {', '.join(columns)} FROM corpus ORDER BY id"
    with psycopg.connect(uri) as conn:
        conn.execute("SET TimeZone = 'UTC'; SET IntervalStyle = 'iso_8601'; SET bytea_output = 'hex'")
        for column in conn.execute(query + " LIMIT 0").description or []:
            conn.adapters.register_loader(column.type_code, TextLoader)
        return [list(row) for row in conn.execute(query).fetchall()]


# Array columns and their elements' kind: JSON Lines and Parquet hold their values as lists, each
# element by the rules of a scalar of that kind (docs/formats.md, "Arrays"); the other formats
# hold PostgreSQL's text, as for any other type.
ARRAY_ELEMENTS = {
    "c_int_array": ColumnKind.INTEGER,
    "c_numeric_array": ColumnKind.DECIMAL,
    "c_varchar_array": ColumnKind.STRING,
    "c_matrix": ColumnKind.STRING,
    "c_moods": ColumnKind.STRING,
}
# The one array column of more than one dimension ({{a,b},{c,d}}): no Parquet list column holds it.
MATRIX = "c_matrix"


def database_arrays(uri: str) -> dict[str, list[Any]]:
    """Each array column's values (in id order) as psycopg's own array parser reads them: nested
    lists of the elements' text (each cast to text, as PostgreSQL writes it), None for NULL."""
    names = list(ARRAY_ELEMENTS)
    query = f"SELECT {', '.join(f'{name}::text[]' for name in names)} FROM corpus ORDER BY id"
    with psycopg.connect(uri) as conn:
        rows = conn.execute(query).fetchall()
    return {name: [row[position] for row in rows] for position, name in enumerate(names)}


def _each_element(value: Any, expected: Callable[[str | None], Any]) -> Any:
    if value is None:
        return None
    return [_each_element(item, expected) if isinstance(item, list) else expected(item) for item in value]


def export_rows(export_type: ExportType) -> tuple[list[Any], list[Row]]:
    filters = export_type.parse_filters({})
    pages = list(export_type.pages(filters))
    return export_type.columns(filters), [row for page in pages for row in page.rows]


def write(fmt: str, columns: list[Any], rows: list[Row]) -> bytes:
    out = io.BytesIO()
    if fmt == "xlsx":
        xlsx_engine.write_xlsx_stream(columns, iter(rows), out)
    elif fmt == "xlsx-openpyxl":
        xlsx_writer.write_xlsx(columns, iter(rows), out)
    elif fmt == "csv.gz":
        gzipped = GzipStream(out)
        stream = csv_writer.CsvStream(columns, gzipped, formula_guard=False)
        stream.write_rows(rows)
        stream.detach()
        gzipped.finish()
    else:
        stream = csv_writer.CsvStream(columns, out, formula_guard=False)
        stream.write_rows(rows)
        stream.detach()
    return out.getvalue()


def read_back(fmt: str, body: bytes) -> list[list[Any]]:
    if fmt.startswith("xlsx"):
        sheet = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
        width = len(sheet[0])
        return [list(row) + [""] * (width - len(row)) for row in sheet[1:]]
    text = gzip.decompress(body) if fmt == "csv.gz" else body
    return list(csv.reader(io.StringIO(text.decode("utf-8"), newline="")))[1:]


def _integer(text: str, spreadsheet: bool) -> Any:
    number = int(text)
    return float(number) if spreadsheet and abs(number) <= 2**53 else text


def _decimal(text: str, spreadsheet: bool) -> Any:
    value = Decimal(text)
    if not value.is_finite():
        return str(value)  # NaN, Infinity, -Infinity: PostgreSQL's spelling
    double = float(value)
    if spreadsheet and double not in (float("inf"), float("-inf")) and Decimal(repr(double)) == value:
        return double
    return format(value, "f")


def _float_digits(text: str) -> str:
    # A float's shortest digits (Python's repr, PostgreSQL's too) without exponent: an integral
    # float's repr ends in ".0" where PostgreSQL writes none, "3.0" for "3".
    return format(Decimal(repr(float(text))), "f")


def _float(text: str, spreadsheet: bool) -> Any:
    if not Decimal(text).is_finite():
        return text  # NaN, Infinity, -Infinity: PostgreSQL's spelling
    return float(text) if spreadsheet else _float_digits(text)


def _boolean(text: str, spreadsheet: bool) -> Any:
    return (text == "t") if spreadsheet else str(text == "t")


def _date(text: str, spreadsheet: bool) -> Any:
    serial = spreadsheet and not text.endswith("BC") and "infinity" not in text and text >= "1900-03-01"
    return date.fromisoformat(text) if serial else text


def _datetime(text: str, spreadsheet: bool) -> Any:
    if "infinity" in text or text.endswith("BC"):
        return text
    moment = datetime.fromisoformat(text)
    if spreadsheet and moment.date() >= date(1900, 3, 1):
        return moment.replace(microsecond=moment.microsecond // 1000 * 1000)  # cut to the millisecond
    return moment.isoformat(" ")


EXPECTED = {
    ColumnKind.INTEGER: _integer,
    ColumnKind.DECIMAL: _decimal,
    ColumnKind.FLOAT: _float,
    ColumnKind.BOOLEAN: _boolean,
    ColumnKind.DATE: _date,
    ColumnKind.DATETIME: _datetime,
}


def expected_cell(kind: ColumnKind, text: str | None, fmt: str) -> Any:
    """What the file holds for the database's text of a value, by the documented rules: text is
    PostgreSQL's own, exactly."""
    if text is None:
        return ""
    rule = EXPECTED.get(kind)
    return rule(text, fmt.startswith("xlsx")) if rule else text


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "xlsx", "xlsx-openpyxl"])
def test_every_cell_of_every_type_is_the_databases_value(corpus: tuple[str, ExportType], fmt: str) -> None:
    uri, export_type = corpus
    columns, rows = export_rows(export_type)
    names = [column.name for column in columns]
    database = database_text(uri, names)

    cells = read_back(fmt, write(fmt, columns, rows))

    assert len(cells) == len(database) == 5
    mismatches = [
        (names[position], texts[0], cell, expected_cell(columns[position].kind, text, fmt))
        for texts, read in zip(database, cells, strict=True)
        for position, (cell, text) in enumerate(zip(read, texts, strict=True))
        if cell != expected_cell(columns[position].kind, text, fmt)
    ]
    assert mismatches == [], "\n".join(map(repr, mismatches))


def _pdf_decimal(text: str) -> str:
    value = Decimal(text)
    if not value.is_finite():
        return str(value)
    double = float(value)
    if double not in (float("inf"), float("-inf")) and Decimal(repr(double)) == value:
        return f"{value:,.2f}"
    return format(value, "f")


def _pdf_datetime(text: str) -> str:
    if "infinity" in text or text.endswith("BC"):
        return text
    moment = datetime.fromisoformat(text)
    if moment.date() < date(1900, 3, 1):
        return moment.isoformat(" ")
    milliseconds = moment.microsecond // 1000
    return f"{moment:%Y-%m-%d %H:%M:%S}" + (f".{milliseconds:03d}" if milliseconds else "")


def _pdf_float(text: str) -> str:
    # As XLSX's #,##0.0### shows a float: grouped, every decimal, at least one.
    if not Decimal(text).is_finite():
        return text
    whole, _, decimals = _float_digits(text).partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{abs(int(whole)):,}.{decimals or '0'}"


PDF_SHOWN = {
    ColumnKind.DECIMAL: _pdf_decimal,
    ColumnKind.FLOAT: _pdf_float,
    ColumnKind.BOOLEAN: lambda text: "TRUE" if text == "t" else "FALSE",
    ColumnKind.DATETIME: _pdf_datetime,
}


def pdf_shown(kind: ColumnKind, text: str | None) -> str:
    """What a PDF cell shows for the database's text of a value (docs/formats.md, PDF): what an
    XLSX cell of the column displays; text as the database writes it, less control characters
    (category Cc: a zero-width joiner, which holds an emoji family together, is drawn)."""
    if text is None:
        return ""
    rule = PDF_SHOWN.get(kind)
    return (
        rule(text) if rule else "".join(char for char in text if unicodedata.category(char) != "Cc" or char in "\t\n")
    )


def pdf_cells(columns: list[Column], rows: list[Row], position: int) -> list[str]:
    """The id column and column ``position`` of ``rows`` as a PDF, read back with pypdf: each
    row's text of the column, its wrapped lines joined."""
    out = io.BytesIO()
    pair, values = [columns[0], columns[position]], [(row[0], row[position]) for row in rows]
    pdf.write_pdf_stream(pair, values, out)
    body = out.getvalue()
    assert qpdf_check(body).returncode == 0
    # Where the value column starts: the id column is as wide as its header and ids need.
    id_width = layout.character_widths(pair[:1], [[str(row[0])] for row in rows])[0]
    value_left = MARGIN + id_width * layout.CHARACTER + 2 * layout.PAD_X
    ids = [str(row[0]) for row in rows]
    cells: list[str] = []
    for page in reader(body).pages:
        lines = page_lines(page)[:-2]  # above the page number
        header = next(number for number, line in enumerate(lines) if line.text.startswith(f"{columns[0].name} "))
        for line in lines[header + 1 :]:
            first, _, rest = line.text.partition(" ")
            # A row starts in the id column with the next row's id.
            if line.x < value_left and len(cells) < len(ids) and first == ids[len(cells)]:
                cells.append(rest)
            else:
                cells[-1] += line.text
    return cells


def test_every_value_of_every_type_shows_in_the_pdf_as_the_rules_say(corpus: tuple[str, ExportType]) -> None:
    uri, export_type = corpus
    columns, rows = export_rows(export_type)
    names = [column.name for column in columns]
    database = database_text(uri, names)
    mismatches = []
    for position in range(1, len(columns)):
        read = pdf_cells(columns, rows, position)
        assert len(read) == len(database) == 5
        for texts, cell in zip(database, read, strict=True):
            # Lines wrap at spaces: compared without white space; a cut cell ends with an ellipsis.
            expected = "".join(pdf_shown(columns[position].kind, texts[position]).split())
            got = "".join(cell.split())
            if got != expected and not (got.endswith(ELLIPSIS) and expected.startswith(got[:-1])):
                mismatches.append((names[position], texts[0], got, expected))
    assert mismatches == [], "\n".join(map(repr, mismatches))


def test_the_inferred_kinds_follow_the_rules(corpus: tuple[str, ExportType]) -> None:
    _, export_type = corpus
    columns, _ = export_rows(export_type)
    kinds = {column.name: column.kind for column in columns}
    assert {name for name, kind in kinds.items() if kind is ColumnKind.DECIMAL} == {
        "c_numeric",
        "c_numeric_2",
        "c_money",
    }
    assert {name for name, kind in kinds.items() if kind is ColumnKind.FLOAT} == {"c_real", "c_double"}
    assert {name for name, kind in kinds.items() if kind is ColumnKind.INTEGER} == {
        "id",
        "c_int2",
        "c_int4",
        "c_int8",
        "c_oid",
        "c_positive",
    }
    assert kinds["c_positive"] is ColumnKind.INTEGER  # a domain reads as its base type
    assert kinds["c_mood"] is kinds["c_interval"] is ColumnKind.STRING
    assert kinds["c_json"] is kinds["c_jsonb"] is ColumnKind.JSON
    # Arrays are text (CSV, XLSX, PDF) whose elements JSON Lines and Parquet type.
    assert {column.name: column.array_of for column in columns if column.array_of} == ARRAY_ELEMENTS
    assert all(kinds[name] is ColumnKind.STRING for name in ARRAY_ELEMENTS)
    shapes = {column.name: (column.precision, column.scale) for column in columns}
    assert shapes["c_numeric_2"] == (10, 2)
    assert shapes["c_numeric"] == shapes["c_double"] == (None, None)


# JSON Lines and Parquet --------------------------------------------------------------------------
# The rules of docs/export-types.md, "JSON Lines and Parquet". The file is read with json, its
# numbers kept as the text they were written as (("number", text)), so a rounded digit shows.


def _number_text(text: str) -> tuple[str, str]:
    return ("number", text)


def _jsonl_number(kind: ColumnKind, text: str) -> Any:
    if kind is ColumnKind.INTEGER:
        return ("number", text) if abs(int(text)) <= 2**53 else text
    value = Decimal(text)
    if not value.is_finite():
        return str(value)
    if kind is ColumnKind.FLOAT:
        # From 1e16 up with an exponent, so a reader takes it for a float, not an integer.
        large = abs(float(text)) >= 1e16
        return ("number", repr(float(text)) if large else _float_digits(text))
    exact = float(value) not in (float("inf"), float("-inf")) and Decimal(repr(float(value))) == value
    return ("number", format(value, "f")) if exact else format(value, "f")


def jsonl_cell(kind: ColumnKind, text: str | None) -> Any:
    """What a JSON Lines value holds for the database's text of a value."""
    if text is None:
        return None
    if kind in (ColumnKind.INTEGER, ColumnKind.DECIMAL, ColumnKind.FLOAT):
        return _jsonl_number(kind, text)
    if kind is ColumnKind.BOOLEAN:
        return text == "t"
    if kind is ColumnKind.DATETIME and "infinity" not in text and not text.endswith("BC"):
        return datetime.fromisoformat(text).isoformat() + "Z"
    if kind is ColumnKind.JSON:
        return json.loads(text, parse_float=_number_text, parse_int=_number_text)
    return text


def test_every_value_of_every_type_reads_back_from_json_lines(corpus: tuple[str, ExportType]) -> None:
    uri, export_type = corpus
    columns, rows = export_rows(export_type)
    names = [column.name for column in columns]
    database = database_text(uri, names)
    out = io.BytesIO()
    gzipped = GzipStream(out)
    jsonl_writer.write_jsonl(columns, iter(rows), gzipped)
    gzipped.finish()

    lines = gzip.decompress(out.getvalue()).decode("utf-8").split("\n")
    objects = [json.loads(line, parse_float=_number_text, parse_int=_number_text) for line in lines[:-1]]

    assert lines[-1] == "" and len(objects) == len(database) == 5
    assert all(list(record) == names for record in objects)
    arrays = database_arrays(uri)

    def expected(position: int, column: Any, text: str | None) -> Any:
        if column.name in ARRAY_ELEMENTS:
            element = ARRAY_ELEMENTS[column.name]
            return _each_element(arrays[column.name][position], lambda item: jsonl_cell(element, item))
        return jsonl_cell(column.kind, text)

    mismatches = [
        (name, texts[0], record[name], expected(position, column, text))
        for position, (texts, record) in enumerate(zip(database, objects, strict=True))
        for name, column, text in zip(names, columns, texts, strict=True)
        if record[name] != expected(position, column, text)
    ]
    assert mismatches == [], "\n".join(map(repr, mismatches))


PARQUET_VALUES: dict[ColumnKind, Callable[[str], Any]] = {
    ColumnKind.INTEGER: int,
    ColumnKind.FLOAT: lambda text: _same_nan(float(text)),
    ColumnKind.BOOLEAN: lambda text: text == "t",
    ColumnKind.DATE: date.fromisoformat,
    ColumnKind.DATETIME: lambda text: datetime.fromisoformat(text).replace(tzinfo=UTC),
}


def parquet_cell(column: Any, text: str | None) -> Any:
    """What a Parquet value holds for the database's text of a value (as pyarrow gives it)."""
    if text is None:
        return None
    rule = PARQUET_VALUES.get(column.kind)
    if rule is not None:
        return rule(text)
    if column.kind is ColumnKind.DECIMAL:
        value = Decimal(text)
        if parquet_writer.is_decimal_typed(column):
            return value.quantize(Decimal(1).scaleb(-column.scale))
        return str(value) if not value.is_finite() else format(value, "f")
    return text


def _fits_parquet(columns: list[Any], row: Row) -> bool:
    # A date or time PostgreSQL writes as text (infinity, BC): no date32 or timestamp holds it.
    return not any(
        column.kind in (ColumnKind.DATE, ColumnKind.DATETIME) and isinstance(value, str)
        for column, value in zip(columns, row, strict=True)
    )


def test_a_date_no_parquet_date_holds_fails_naming_its_column(corpus: tuple[str, ExportType]) -> None:
    _, export_type = corpus
    columns, rows = export_rows(export_type)

    with pytest.raises(parquet_writer.ParquetValueInvalid) as raised:
        parquet_writer.write_parquet_stream(columns, iter(rows), io.BytesIO())

    assert raised.value.column == "c_date"


def test_an_array_of_two_dimensions_fails_the_parquet_export_naming_its_column(
    corpus: tuple[str, ExportType],
) -> None:
    _, export_type = corpus
    columns, rows = export_rows(export_type)
    position = next(index for index, column in enumerate(columns) if column.name == MATRIX)

    with pytest.raises(parquet_writer.ParquetValueInvalid) as raised:
        parquet_writer.write_parquet_stream([columns[position]], ((row[position],) for row in rows), io.BytesIO())

    assert raised.value.column == MATRIX and "more than one dimension" in str(raised.value)


def test_every_value_of_every_type_reads_back_from_parquet_in_three_engines(
    corpus: tuple[str, ExportType], tmp_path: Any
) -> None:
    uri, export_type = corpus
    every_column, every_row = export_rows(export_type)
    # Without the two-dimensional array (the test above): a Parquet list column has one.
    wanted = [position for position, column in enumerate(every_column) if column.name != MATRIX]
    columns = [every_column[position] for position in wanted]
    rows = [[row[position] for position in wanted] for row in every_row]
    names = [column.name for column in columns]
    kept = [position for position, row in enumerate(rows) if _fits_parquet(columns, row)]
    database = [texts for position, texts in enumerate(database_text(uri, names)) if position in kept]
    arrays = {name: [values[position] for position in kept] for name, values in database_arrays(uri).items()}
    path = tmp_path / "corpus.parquet"
    with path.open("wb") as out:
        written = parquet_writer.write_parquet_stream(columns, (rows[position] for position in kept), out)

    def expected_value(row: int, column: Any, text: str | None) -> Any:
        if column.name in ARRAY_ELEMENTS:
            element = Column(column.name, column.name, ARRAY_ELEMENTS[column.name])
            return _each_element(arrays[column.name][row], lambda item: parquet_cell(element, item))
        return parquet_cell(column, text)

    expected = [
        [expected_value(row, column, text) for column, text in zip(columns, texts, strict=True)]
        for row, texts in enumerate(database)
    ]
    read = [[_same_nan(value) for value in record.values()] for record in pq.read_table(path).to_pylist()]
    # DuckDB's and polars' own Python values, through Arrow (DuckDB gives time zones as its own).
    duck = [
        [_same_nan(value) for value in record.values()]
        for record in duckdb.sql(f"SELECT * FROM '{path}'").to_arrow_table().to_pylist()
    ]
    frame = [[_same_nan(value) for value in record.values()] for record in polars.read_parquet(path).to_dicts()]

    assert written == len(kept) >= 3
    assert pq.read_schema(path).names == names
    assert read == expected
    assert [[_utc(value) for value in row] for row in duck] == expected
    assert [[_utc(value) for value in row] for row in frame] == expected


_NAN = float("nan")


def _same_nan(value: Any) -> Any:
    # One NaN object for every NaN: list equality holds for the same object, never for two NaNs.
    return _NAN if isinstance(value, float) and math.isnan(value) else value


def _utc(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else value
