"""Parquet with pyarrow's ParquetWriter, streamed: rows gather into a row group of at most
:data:`ROW_GROUP_ROWS`, which is encoded and written through the file-like sink (the multipart
upload) before the next one starts, so memory holds one row group whatever the export's size.

Column types come from the declaration (docs/export-types.md, "JSON Lines and Parquet"): int64,
decimal128(precision, scale) when the source declares them (numeric(p, s) up to 38 digits, what
DuckDB and polars read as decimals), else the exact digits as a string; date32, timestamp in
microseconds adjusted to UTC, bool, string, JSON (Parquet's JSON logical type) for json, and a
list of its element kind's type for an array column (one dimension). A value its column's type
cannot hold (NaN in a decimal, PostgreSQL's ``infinity`` date) fails the
export with :class:`ParquetValueInvalid` rather than being changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final

from exports.domain.zones import zone
from exports.export_types.base import Column, ColumnKind, Row
from exports.writers.array_text import typed_array
from exports.writers.arrow_memory import use_system_allocator
from exports.writers.byte_sink import ByteStream
from exports.writers.cells import plain_number
from exports.writers.csv_writer import csv_text

if TYPE_CHECKING:
    import pyarrow as pa

CONTENT_TYPE = "application/vnd.apache.parquet"
# Rows per row group: about what a reader reads at once, and what the writer holds in memory.
ROW_GROUP_ROWS = 65_536
# Python rows turned into Arrow arrays at once (a row group is made of ROW_GROUP_ROWS // CHUNK_ROWS).
CHUNK_ROWS = 8_192
# The widest decimal DuckDB and polars read as a decimal (pyarrow's decimal128).
MAX_DECIMAL_PRECISION = 38
COMPRESSION = "zstd"
# A column's dictionary page grows to this at most, then its values are written plain:
# pyarrow's 1 MiB default kept a dictionary of every id of a 65,536-row group (docs/performance.md,
# "Parquet through Arrow": 17.7 MiB of demo orders become 13.3).
DICTIONARY_PAGE_BYTES = 64 * 1024


class ParquetValueInvalid(ValueError):
    """A value the column's Parquet type cannot hold; ``column`` names the column."""

    def __init__(self, column: str, reason: str) -> None:
        super().__init__(f"column {column!r} holds a value its Parquet type cannot: {reason}")
        self.column = column


def is_decimal_typed(column: Column) -> bool:
    """Whether a decimal column is written as a Parquet decimal (else as its digits' text)."""
    return (
        column.kind is ColumnKind.DECIMAL
        and column.precision is not None
        and column.scale is not None
        and 0 < column.precision <= MAX_DECIMAL_PRECISION
    )


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow (and so Parquet) type of ``column``; an array column's a list of its element
    kind's type (decimals as their digits' text)."""
    import pyarrow as pa

    if column.array_of is not None:
        return pa.list_(arrow_type(Column(column.name, column.header, column.array_of)))
    if column.kind is ColumnKind.DECIMAL:
        if is_decimal_typed(column):
            return pa.decimal128(column.precision, column.scale)
        return pa.string()
    types: dict[ColumnKind, pa.DataType] = {
        ColumnKind.STRING: pa.string(),
        ColumnKind.INTEGER: pa.int64(),
        ColumnKind.FLOAT: pa.float64(),
        ColumnKind.DATE: pa.date32(),
        # UTC instants; an export in another zone names it (metadata: the values stay instants).
        # A wall time (a timestamp without zone) has none: readers show it as it was stored.
        ColumnKind.DATETIME: pa.timestamp("us")
        if column.wall_time
        else pa.timestamp("us", tz=column.timezone or "UTC"),
        ColumnKind.BOOLEAN: pa.bool_(),
        ColumnKind.JSON: pa.json_(),
    }
    return types[column.kind]


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    """The file's schema: a nullable field per column, named as the column."""
    import pyarrow as pa

    return pa.schema([pa.field(column.name, arrow_type(column)) for column in columns])


# The types of the values a column's Arrow type takes as they are (None's among them): a column
# of only these is handed over whole, its types looked at in C (``set(map(type, values))``), not
# value by value in Python.
_NONE = type(None)
_TEXTS = frozenset({str, _NONE})
_FLOATS = frozenset({float, _NONE})
_DECIMALS = frozenset({Decimal, _NONE})


def _as_text(values: Sequence[Any]) -> Sequence[Any]:
    # Text as it is; another value (a number in a text column) as CSV writes it, unguarded.
    if set(map(type, values)) <= _TEXTS:
        return values
    return [value if value is None or value.__class__ is str else csv_text(value, guard=False) for value in values]


def _as_digits(values: Sequence[Any]) -> Sequence[Any]:
    types = set(map(type, values))
    if types <= _DECIMALS:
        # plain_number of a Decimal: its every digit, no exponent.
        digits = map(format, values, repeat("f")) if _NONE not in types else (_digits(value) for value in values)
        return list(digits)
    return [
        plain_number(value)
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool)
        else _as_text((value,))[0]
        for value in values
    ]


def _digits(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _as_floats(values: Sequence[Any]) -> Sequence[Any]:
    # A float column from a source that gives its numbers as decimals or integers: their doubles.
    if set(map(type, values)) <= _FLOATS:
        return values
    return [value if value is None or value.__class__ is float else float(value) for value in values]


def _as_lists(kind: ColumnKind) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """An array column's values (PostgreSQL's array text) as lists of values of ``kind``, which
    its list type takes. A list column holds one dimension: a nested array raises ValueError."""
    element = preparer(Column("", "", kind))

    def prepare(values: Sequence[Any]) -> list[Any]:
        lists: list[Any] = []
        for value in values:
            if value is None or value.__class__ is not str:
                lists.append(value)
                continue
            items = typed_array(value, kind)
            if any(isinstance(item, list) for item in items):
                raise ValueError(f"{value[:40]!r} has more than one dimension; a Parquet list column holds one")
            lists.append(list(element(items)) if element else items)
        return lists

    return prepare


def preparer(column: Column) -> Callable[[Sequence[Any]], Sequence[Any]] | None:
    """What turns a column's values into what its Arrow type takes (None: they are already)."""
    if column.array_of is not None:
        return _as_lists(column.array_of)
    if column.kind in (ColumnKind.STRING, ColumnKind.JSON):
        return _as_text
    if column.kind is ColumnKind.DECIMAL and not is_decimal_typed(column):
        return _as_digits
    if column.kind is ColumnKind.FLOAT:
        return _as_floats
    return None


def open_writer(out: ByteStream, schema: pa.Schema) -> Any:
    """The file's writer on ``out`` (what every Parquet file of ours is written with): zstd,
    dictionaries of at most :data:`DICTIONARY_PAGE_BYTES` (a column of mostly distinct values,
    an id, falls back to plain values early instead of indexing a dictionary as large as
    itself), and date-times delta-encoded (instants of consecutive rows are close together);
    the values read back the same whatever the encoding. Arrow's buffers come from the C
    library's allocator from now on (:func:`use_system_allocator`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    use_system_allocator()

    deltas = [field.name for field in schema if pa.types.is_timestamp(field.type)]
    return pq.ParquetWriter(
        out,
        schema,
        compression=COMPRESSION,
        use_dictionary=[field.name for field in schema if field.name not in deltas],
        column_encoding=dict.fromkeys(deltas, "DELTA_BINARY_PACKED"),
        dictionary_pagesize_limit=DICTIONARY_PAGE_BYTES,
    )


def write_parquet_stream(columns: Sequence[Column], rows: Iterable[Row], out: ByteStream) -> int:
    """Stream ``rows`` as a Parquet file into ``out`` (it is only written, in order); returns the number of rows.

    A row group's rows become Arrow arrays :data:`CHUNK_ROWS` at a time: the Python rows of a
    whole group held at once (some 40 MB of objects for 65,536 rows of a dozen columns) made the
    heap grow for the first groups of a long export, peak RSS 1.27x at a million rows against
    100,000 (docs/performance.md, "Memory")."""
    schema = arrow_schema(columns)
    prepare = [preparer(column) for column in columns]
    count = in_group = 0
    chunk: list[Row] = []
    group: list[list[pa.Array]] = []
    with open_writer(out, schema) as writer:
        for row in rows:
            chunk.append(row)
            if len(chunk) == min(CHUNK_ROWS, ROW_GROUP_ROWS - in_group):
                group.append(_arrays(schema, columns, prepare, chunk))
                in_group += len(chunk)
                chunk = []
                if in_group == ROW_GROUP_ROWS:
                    count += _write_group(writer, schema, group)
                    group, in_group = [], 0
        if chunk:
            group.append(_arrays(schema, columns, prepare, chunk))
        if group:
            count += _write_group(writer, schema, group)
    return count


def _arrays(
    schema: pa.Schema,
    columns: Sequence[Column],
    prepare: Sequence[Callable[[Sequence[Any]], Sequence[Any]] | None],
    rows: list[Row],
) -> list[pa.Array]:
    """The arrays of ``rows``, a column each, as the column's Parquet type holds them."""
    import pyarrow as pa

    values: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    if len(values) != len(columns):
        raise ValueError(f"rows of {len(values)} values for {len(columns)} columns")
    arrays = []
    for column, field, change, column_values in zip(columns, schema, prepare, values, strict=True):
        try:
            arrays.append(pa.array(change(column_values) if change else column_values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as error:
            raise ParquetValueInvalid(column.name, str(error)) from None
    return arrays


def check_local_years(field: pa.Field, array: pa.Array) -> None:
    """Refuse an instant whose wall time in the column's zone leaves years 1 to 9999: the file
    would hold it, but pyarrow, pandas and Python cannot read it back (a ``datetime`` ends at
    9999). UTC columns never do (their instants came from such datetimes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    zone_name = getattr(field.type, "tz", None)
    if zone_name in (None, "UTC") or array.null_count == len(array):
        return
    where = zone(zone_name)
    extremes = pc.min_max(array.cast(pa.int64())).as_py()
    last = (_MAX_MICROS - _micros(where.utcoffset(datetime(9999, 12, 31)))) // _UNIT[field.type.unit]
    first = (_MIN_MICROS - _micros(where.utcoffset(datetime(1, 1, 2)))) // _UNIT[field.type.unit]
    if extremes["max"] > last or extremes["min"] < first:
        raise ParquetValueInvalid(
            field.name,
            f"an instant whose wall time in {zone_name} is outside years 1 to 9999, which pyarrow, pandas and "
            "Python cannot read back; export it in Etc/UTC, or as CSV or JSON Lines",
        )


# Microseconds since 1970 of the first and last microsecond a datetime holds, and per unit of a
# timestamp type the microseconds of one.
_MAX_MICROS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999999) - datetime(1970, 1, 1)) // timedelta(microseconds=1)
_MIN_MICROS: Final = (datetime(1, 1, 1) - datetime(1970, 1, 1)) // timedelta(microseconds=1)
_UNIT: Final = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}


def _micros(offset: timedelta | None) -> int:
    return (offset or timedelta(0)) // timedelta(microseconds=1)


def _write_group(writer: Any, schema: pa.Schema, chunks: list[list[pa.Array]]) -> int:
    """Write one row group of ``chunks`` (each an array a column), each column one array as
    the Arrow path gives it (the same file); returns its rows."""
    import pyarrow as pa

    arrays = [parts[0] if len(parts) == 1 else pa.concat_arrays(parts) for parts in zip(*chunks, strict=True)]
    for field, array in zip(schema, arrays, strict=True):
        check_local_years(field, array)
    batch = pa.record_batch(arrays, schema=schema)
    writer.write_batch(batch)
    rows: int = batch.num_rows
    return rows
