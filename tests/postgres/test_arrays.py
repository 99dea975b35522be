"""Issue 36: arrays came out as PostgreSQL's text (``{vip,q3}``) in JSON Lines and Parquet. They
are lists there (JSON arrays; typed Parquet list columns), and text in CSV, XLSX and PDF as
before: in types whose columns are inferred from the result, and in declared columns that say
``array_of``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from python_calamine import CalamineWorkbook

from exports.core.export_type import ColumnKind, ExportType
from exports.export_types.loader import DeclarationError, load_declarations
from exports.running.writers import csv_writer, jsonl_writer, parquet_writer, xlsx_engine
from tests.postgres.conftest import declared_types, write_declaration

QUERY = """'''
SELECT n, tags, scores, days FROM (VALUES
    (1, ARRAY['vip', 'q3'], ARRAY[1, 9007199254740993]::bigint[], ARRAY[DATE '2025-03-01']),
    (2, ARRAY['a "quoted", b', NULL, '', 'NULL'], '{}'::bigint[], NULL),
    (3, NULL, ARRAY[NULL]::bigint[], ARRAY['infinity'::date])
) AS v(n, tags, scores, days)
'''"""
DECLARATION = f"""
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.inferred]
description = "columns from the result"
source = "db"
query = {QUERY}
order_key = ["n"]

[types.declared]
description = "declared columns"
source = "db"
query = {QUERY}
order_key = ["n"]
columns = [
    {{ name = "n", kind = "integer" }},
    {{ name = "tags", array_of = "string" }},
    {{ name = "scores", header = "Scores", array_of = "integer" }},
]
"""
TAGS = [["vip", "q3"], ['a "quoted", b', None, "", "NULL"], None]
SCORES = [[1, 9007199254740993], [], [None]]
TAGS_TEXT = ["{vip,q3}", '{"a \\"quoted\\", b",NULL,"","NULL"}', ""]


@pytest.fixture(scope="module")
def types(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ExportType[Any]]:
    folder = tmp_path_factory.mktemp("arrays")
    return declared_types(write_declaration(folder, DECLARATION), {"DB_URL": postgres.uri()})


def exported(export_type: ExportType[Any]) -> tuple[list[Any], list[Any]]:
    filters = export_type.parse_filters({})
    columns = export_type.columns(filters)
    return columns, [row for page in export_type.pages(filters) for row in page.rows]


@pytest.mark.parametrize("name", ["inferred", "declared"])
def test_arrays_are_json_arrays_in_json_lines(types: dict[str, ExportType[Any]], name: str) -> None:
    columns, rows = exported(types[name])
    out = io.BytesIO()
    jsonl_writer.write_jsonl(columns, iter(rows), out)

    records = [json.loads(line) for line in out.getvalue().decode("utf-8").splitlines()]

    assert [record["tags"] for record in records] == TAGS
    # Elements by the rules of their kind: a bigint past 2**53 is a string, as in a bigint column.
    assert [record["scores"] for record in records] == [[1, "9007199254740993"], [], [None]]
    if name == "inferred":
        assert [record["days"] for record in records] == [["2025-03-01"], None, ["infinity"]]


@pytest.mark.parametrize("name", ["inferred", "declared"])
def test_arrays_are_typed_list_columns_in_parquet(types: dict[str, ExportType[Any]], name: str) -> None:
    columns, rows = exported(types[name])
    # The inferred type's date array holds infinity, which no Parquet date holds (as in a date column).
    wanted = [position for position, column in enumerate(columns) if column.name != "days"]
    out = io.BytesIO()
    parquet_writer.write_parquet_stream(
        [columns[position] for position in wanted], ([row[position] for position in wanted] for row in rows), out
    )

    table = pq.read_table(io.BytesIO(out.getvalue()))

    assert table.schema.field("tags").type == pa.list_(pa.string())
    assert table.schema.field("scores").type == pa.list_(pa.int64())
    assert table.column("tags").to_pylist() == TAGS
    assert table.column("scores").to_pylist() == SCORES


@pytest.mark.parametrize("name", ["inferred", "declared"])
def test_arrays_stay_postgresql_text_in_csv_and_xlsx(types: dict[str, ExportType[Any]], name: str) -> None:
    columns, rows = exported(types[name])
    position = [column.name for column in columns].index("tags")
    text, sheet = io.BytesIO(), io.BytesIO()
    stream = csv_writer.CsvStream(columns, text, formula_guard=False)
    stream.write_rows(rows)
    stream.detach()
    xlsx_engine.write_xlsx_stream(columns, iter(rows), sheet)

    cells = list(csv.reader(io.StringIO(text.getvalue().decode("utf-8"), newline="")))[1:]
    workbook = CalamineWorkbook.from_filelike(io.BytesIO(sheet.getvalue())).get_sheet_by_index(0).to_python()

    assert [row[position] for row in cells] == TAGS_TEXT
    assert [row[position] for row in workbook[1:]] == TAGS_TEXT


def test_the_columns_say_which_are_arrays_and_of_what(types: dict[str, ExportType[Any]]) -> None:
    inferred, _ = exported(types["inferred"])
    declared, _ = exported(types["declared"])

    assert [(column.kind, column.array_of) for column in inferred] == [
        (ColumnKind.INTEGER, None),
        (ColumnKind.STRING, ColumnKind.STRING),
        (ColumnKind.STRING, ColumnKind.INTEGER),
        (ColumnKind.STRING, ColumnKind.DATE),
    ]
    assert [(column.kind, column.array_of) for column in declared] == [
        (ColumnKind.INTEGER, None),
        (ColumnKind.STRING, ColumnKind.STRING),
        (ColumnKind.STRING, ColumnKind.INTEGER),
    ]


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ('{ name = "a", kind = "integer", array_of = "integer" }', 'kind = "string"'),
        ('{ name = "a", array_of = "json" }', "not supported"),
        ('{ name = "a", array_of = "list" }', "array_of"),
    ],
)
def test_array_of_is_checked(tmp_path: Path, column: str, message: str) -> None:
    body = (
        '[sources.db]\nkind = "postgresql"\nurl_env = "DB_URL"\n'
        f'[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"\ncolumns = [{column}]\n'
    )

    with pytest.raises(DeclarationError, match=message):
        load_declarations(write_declaration(tmp_path, body))
