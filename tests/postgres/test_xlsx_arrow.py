"""XLSX of PostgreSQL sources through Arrow (exports/sources/postgres/arrow.py with its date
texts, exports/running/writers/xlsx_engine/arrow_rows.py): every value of the type corpus makes the same
workbook, byte for byte, as the tuple path's rows; the columns the tuple path holds otherwise
than as text (uuid, arrays) leave the file to it; the demo orders go through it."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from exports.core.export_type import Column, ColumnKind, ExportType, Unbounded
from exports.running.writers import xlsx_engine
from exports.running.writers.xlsx_engine import MAX_DATA_ROWS_PER_SHEET, write_xlsx_batches
from exports.sources.postgres.arrow import PostgresArrowReader
from exports.sources.sql.ports import SqlRead
from tests.postgres.test_type_corpus import corpus, export_rows  # noqa: F401  (corpus: the fixture)

# Held by the tuple path as objects whose text the workbook writes (uuid.UUID), or arrays: the
# Arrow read declines them.
NOT_THROUGH_ARROW = ("c_uuid",)


def tuple_file(columns: list[Column], every_column: list[Column], rows: list[Any]) -> bytes:
    names = [column.name for column in every_column]
    positions = [names.index(column.name) for column in columns]
    out = io.BytesIO()
    xlsx_engine.write_xlsx_stream(columns, ([row[p] for p in positions] for row in rows), out)
    return out.getvalue()


def arrow_file(export_type: ExportType, columns: list[Column], max_rows_per_sheet: int | None = None) -> bytes:
    filters = export_type.parse_filters({})
    batches = export_type.arrow_batches(filters, columns, Unbounded(), date_texts=True)
    assert batches is not None
    out = io.BytesIO()
    write_xlsx_batches(columns, batches, out, max_rows_per_sheet=max_rows_per_sheet or MAX_DATA_ROWS_PER_SHEET)
    return out.getvalue()


def test_every_value_of_every_type_makes_the_same_workbook_through_arrow(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    _, export_type = corpus
    every_column, rows = export_rows(export_type)
    columns = [column for column in every_column if column.name not in NOT_THROUGH_ARROW and column.array_of is None]

    assert arrow_file(export_type, columns) == tuple_file(columns, every_column, rows)
    # Column by column too: each column's cells after a first column with no cell in one row.
    for column in columns:
        assert arrow_file(export_type, [column]) == tuple_file([column], every_column, rows), column.name


def test_the_columns_the_tuple_path_holds_otherwise_leave_the_file_to_it(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    uri, export_type = corpus
    every_column, _ = export_rows(export_type)
    reader = PostgresArrowReader("db", lambda: {"conninfo": uri})
    read = SqlRead("SELECT * FROM corpus", {}, ("id",))
    by_name = {column.name: column for column in every_column}
    arrays = [column for column in every_column if column.array_of is not None]
    assert arrays

    assert reader.record_batches(read, [by_name["c_int4"]], Unbounded(), date_texts=True) is not None
    assert reader.record_batches(read, [by_name["c_uuid"]], Unbounded(), date_texts=True) is None
    assert reader.record_batches(read, [by_name["c_uuid"]], Unbounded()) is not None  # Parquet's read
    assert reader.record_batches(read, arrays[:1], Unbounded(), date_texts=True) is None


def test_dates_no_python_value_holds_come_with_postgresqls_text(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    uri, _ = corpus
    reader = PostgresArrowReader("db", lambda: {"conninfo": uri})
    columns = [
        Column(name, name, ColumnKind.DATETIME if "stamp" in name else ColumnKind.DATE)
        for name in ("c_date", "c_timestamp", "c_timestamptz")
    ]
    read = SqlRead("SELECT id, c_date, c_timestamp, c_timestamptz FROM corpus", {}, ("id",))
    batches = reader.record_batches(read, columns, Unbounded(), date_texts=True)
    assert batches is not None
    table = pa.Table.from_batches(list(batches))
    by_column = [table.column(3 + place).to_pylist() for place in range(3)]
    assert by_column == [
        [None, None, "0044-03-15 BC", "infinity", None],
        [None, None, "-infinity", None, None],
        [None, None, None, None, None],
    ]


def test_sheets_cut_inside_batches_still_make_the_same_workbook(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    _, export_type = corpus
    every_column, rows = export_rows(export_type)
    columns = [column for column in every_column if column.name in ("id", "c_text", "c_date", "c_bool")]
    positions = [[column.name for column in every_column].index(column.name) for column in columns]
    out = io.BytesIO()
    xlsx_engine.write_xlsx_stream(columns, ([row[p] for p in positions] for row in rows), out, max_rows_per_sheet=2)

    assert arrow_file(export_type, columns, max_rows_per_sheet=2) == out.getvalue()


def test_a_column_declared_with_another_kind_is_left_to_the_tuple_path(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    _, export_type = corpus
    every_column, _ = export_rows(export_type)
    column = next(column for column in every_column if column.name == "c_int4")
    filters = export_type.parse_filters({})

    assert export_type.arrow_batches(filters, [replace(column, kind=ColumnKind.STRING)], Unbounded(), True) is None


@pytest.mark.parametrize("name", ["c_text", "c_numeric", "c_double", "c_timestamptz"])
def test_each_edge_column_alone_is_byte_equal(corpus: tuple[str, ExportType], name: str) -> None:  # noqa: F811
    _, export_type = corpus
    every_column, rows = export_rows(export_type)
    columns = [column for column in every_column if column.name in ("id", name)]

    assert arrow_file(export_type, columns) == tuple_file(columns, every_column, rows)
