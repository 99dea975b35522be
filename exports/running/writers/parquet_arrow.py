"""Parquet from Arrow record batches (a PostgreSQL source read through ADBC,
the PostgreSQL kind's ``arrow`` module): the same file :func:`~exports.running.writers.parquet_writer.
write_parquet_stream` writes from the same rows, byte for byte, its type rules applied to whole
arrays with ``pyarrow.compute`` instead of value by value.

The batches hold what the tuple reader's rows hold, as arrays: int64, float64, bool and string
(numerics, json, arrays and the other types as PostgreSQL's text), date32 and timestamp (UTC).
The rules (docs/export-types.md, "`parquet`"): a decimal column with a precision and scale casts its
text to ``decimal128`` (a value with more digits, NaN or an infinity fails the export); a date or
a date-time outside the years 1 to 9999 (PostgreSQL's infinities, BC, year 10000 on), which no
Python value holds and so the tuple path refuses, fails it too; an instant's array is labelled
with the export's zone; json text becomes Parquet's JSON type; an array column's text is parsed
into lists by the tuple path's own rule, one value at a time (its elements are typed text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.byte_sink import ByteStream
from exports.running.writers.parquet_writer import (
    ROW_GROUP_ROWS,
    ParquetValueInvalid,
    arrow_schema,
    check_local_years,
    is_decimal_typed,
    open_writer,
    preparer,
)

if TYPE_CHECKING:
    import pyarrow as pa

# The dates and date-times a Python value holds, which the tuple path writes (days since the
# epoch, microseconds since it).
_FIRST_DAY = (date(1, 1, 1) - date(1970, 1, 1)).days
_LAST_DAY = (date(9999, 12, 31) - date(1970, 1, 1)).days
_FIRST_MICROSECOND = _FIRST_DAY * 86_400_000_000
_LAST_MICROSECOND = (_LAST_DAY + 1) * 86_400_000_000 - 1


def write_parquet_batches(columns: Sequence[Column], batches: Iterable[pa.RecordBatch], out: ByteStream) -> int:
    """Write ``batches`` (an array per column of ``columns``, in their order) as a Parquet file
    into ``out``, in row groups of :data:`ROW_GROUP_ROWS` rows; returns the number of rows."""
    import pyarrow as pa

    schema = arrow_schema(columns)
    count = 0
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    with open_writer(out, schema) as writer:
        for batch in batches:
            if batch.num_columns != len(columns):
                raise ValueError(f"batches of {batch.num_columns} columns for {len(columns)} columns")
            pending.append(batch)
            pending_rows += batch.num_rows
            while pending_rows >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(pending)
                _write_group(writer, schema, columns, table.slice(0, ROW_GROUP_ROWS))
                rest = table.slice(ROW_GROUP_ROWS)
                pending, pending_rows = rest.to_batches(), rest.num_rows
                count += ROW_GROUP_ROWS
        if pending_rows:
            _write_group(writer, schema, columns, pa.Table.from_batches(pending))
            count += pending_rows
    return count


def _write_group(writer: Any, schema: pa.Schema, columns: Sequence[Column], group: pa.Table) -> None:
    import pyarrow as pa

    arrays = []
    for column, field, values in zip(columns, schema, group.columns, strict=True):
        try:
            arrays.append(_typed(column, field.type, _one_array(values)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as error:
            raise ParquetValueInvalid(column.name, str(error)) from None
        check_local_years(field, arrays[-1])
    writer.write_batch(pa.record_batch(arrays, schema=schema))


def _one_array(values: pa.ChunkedArray) -> pa.Array:
    """A row group's column as one array: the slice of its batch's array where it lies in one
    (no copy; ``combine_chunks`` copies even a single chunk), else its pieces concatenated."""
    if values.num_chunks == 1:
        return values.chunk(0)
    return values.combine_chunks()


def _typed(column: Column, kind: pa.DataType, values: pa.Array) -> pa.Array:
    """``values`` as the column's Parquet type holds them (the rules above)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.array_of is not None:
        prepare = preparer(column)
        assert prepare is not None  # an array column always has one
        return pa.array(prepare(values.to_pylist()), type=kind)
    if column.kind is ColumnKind.DECIMAL and is_decimal_typed(column):
        return pc.cast(values, kind)
    if column.kind is ColumnKind.DATE:
        _within(values.cast(pa.int32()), _FIRST_DAY, _LAST_DAY, "a date outside years 1-9999")
        return values
    if column.kind is ColumnKind.DATETIME:
        as_integers = values.cast(pa.int64())
        _within(as_integers, _FIRST_MICROSECOND, _LAST_MICROSECOND, "a date-time outside years 1-9999")
        return values.cast(kind)
    if column.kind is ColumnKind.JSON:
        return pa.ExtensionArray.from_storage(kind, values)
    return values.cast(kind) if values.type != kind else values


def _within(values: pa.Array, first: int, last: int, what: str) -> None:
    import pyarrow.compute as pc

    bounds = pc.min_max(values)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is not None and (low < first or high > last):
        raise ValueError(f"{what} (PostgreSQL's infinity, a BC date or a year past 9999)")
