"""Parquet: the declaration's types, row groups streamed out as they fill, values that a type
cannot hold refused (docs/export-types.md)."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports.export_types.base import Column, ColumnKind
from exports.writers import parquet_writer
from exports.writers.parquet_writer import ParquetValueInvalid, arrow_schema, write_parquet_stream

COLUMNS = [
    Column("s", "S"),
    Column("i", "I", ColumnKind.INTEGER),
    Column("money", "Money", ColumnKind.DECIMAL, precision=12, scale=2),
    Column("any_number", "Any", ColumnKind.DECIMAL),
    Column("wide", "Wide", ColumnKind.DECIMAL, precision=50, scale=3),
    Column("day", "Day", ColumnKind.DATE),
    Column("at", "At", ColumnKind.DATETIME),
    Column("ok", "Ok", ColumnKind.BOOLEAN),
    Column("doc", "Doc", ColumnKind.JSON),
]


def test_each_kind_has_its_parquet_type() -> None:
    types = {field.name: field.type for field in arrow_schema(COLUMNS)}

    assert types["s"] == pa.string() and types["i"] == pa.int64()
    assert types["money"] == pa.decimal128(12, 2)
    # Undeclared or wider than DuckDB and polars read as decimals: the exact digits as text.
    assert types["any_number"] == types["wide"] == pa.string()
    assert types["day"] == pa.date32() and types["at"] == pa.timestamp("us", tz="UTC")
    assert types["ok"] == pa.bool_() and types["doc"] == pa.json_()


def test_values_read_back_as_they_were() -> None:
    rows = [
        (
            "王芳",
            2**62,
            Decimal("1234.5"),
            Decimal("NaN"),
            Decimal("1" * 47 + ".123"),
            date(1, 1, 1),
            datetime(2025, 3, 1, 8, 0, 0, 1),
            False,
            '{"a": [1]}',
        ),
        (None,) * len(COLUMNS),
        (7, -1, Decimal("-0.01"), Decimal("1E+3"), Decimal("0"), date(9999, 12, 31), datetime(1, 1, 1), True, "[]"),
    ]
    out = io.BytesIO()

    assert write_parquet_stream(COLUMNS, iter(rows), out) == 3

    read = pq.read_table(io.BytesIO(out.getvalue())).to_pylist()
    assert read[0] == {
        "s": "王芳",
        "i": 2**62,
        "money": Decimal("1234.50"),
        "any_number": "NaN",
        "wide": "1" * 47 + ".123",
        "day": date(1, 1, 1),
        "at": datetime(2025, 3, 1, 8, 0, 0, 1, tzinfo=UTC),
        "ok": False,
        "doc": '{"a": [1]}',
    }
    assert read[1] == dict.fromkeys(read[1])
    # A number in a text column is written as CSV writes it.
    assert (read[2]["s"], read[2]["any_number"], read[2]["money"]) == ("7", "1000", Decimal("-0.01"))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        (Column("money", "Money", ColumnKind.DECIMAL, precision=12, scale=2), Decimal("NaN")),
        (Column("money", "Money", ColumnKind.DECIMAL, precision=12, scale=2), Decimal("0.001")),
        (Column("day", "Day", ColumnKind.DATE), "infinity"),
        (Column("at", "At", ColumnKind.DATETIME), "0044-03-15 00:00:00 BC"),
        (Column("i", "I", ColumnKind.INTEGER), 2**63),
    ],
)
def test_a_value_its_type_cannot_hold_fails_naming_the_column(column: Column, value: object) -> None:
    with pytest.raises(ParquetValueInvalid) as raised:
        write_parquet_stream([column], iter([(value,)]), io.BytesIO())
    assert raised.value.column == column.name


def test_row_groups_are_written_out_while_the_rows_still_come(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parquet_writer, "ROW_GROUP_ROWS", 1_000)
    out = io.BytesIO()
    written_at: list[int] = []

    def rows() -> Iterator[tuple[int, str]]:
        for n in range(10_500):
            if n % 1_000 == 0:
                written_at.append(out.tell())
            yield (n, f"text {n}")

    count = write_parquet_stream([Column("n", "N", ColumnKind.INTEGER), Column("t", "T")], rows(), out)

    metadata = pq.ParquetFile(io.BytesIO(out.getvalue())).metadata
    assert count == metadata.num_rows == 10_500 and metadata.num_row_groups == 11
    # Each row group reached the stream before the next one's rows were read.
    assert all(later > earlier for earlier, later in itertools.pairwise(written_at[1:]))


def test_an_export_of_no_rows_is_a_parquet_file_with_its_schema() -> None:
    out = io.BytesIO()

    assert write_parquet_stream(COLUMNS, iter([]), out) == 0

    table = pq.read_table(io.BytesIO(out.getvalue()))
    assert table.num_rows == 0 and table.schema.names == [column.name for column in COLUMNS]


def test_a_parquet_file_takes_arrows_buffers_from_the_system_allocator() -> None:
    # pyarrow's mimalloc cost 0.4-0.7 s of system CPU (huge-page faults) in a million-row export.
    write_parquet_stream(COLUMNS, iter([]), io.BytesIO())

    assert pa.default_memory_pool().backend_name == "system"


def test_distinct_values_are_written_plain_and_date_times_delta_encoded() -> None:
    # A row group of ids (every one distinct) and a few statuses, with the instants of each row.
    columns = [Column("id", "Id"), Column("status", "Status"), Column("at", "At", ColumnKind.DATETIME)]
    base = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [(f"ORD-{n:09d}", ("new", "paid", "sent")[n % 3], base.replace(second=n % 60)) for n in range(50_000)]
    out = io.BytesIO()

    write_parquet_stream(columns, iter(rows), out)

    written = pq.ParquetFile(io.BytesIO(out.getvalue()))
    group = written.metadata.row_group(0)
    sizes = {group.column(index).path_in_schema: group.column(index).total_compressed_size for index in range(3)}
    # pyarrow's defaults: a dictionary of up to 1 MiB (every id in it), date-times in one too.
    plain = io.BytesIO()
    pq.write_table(written.read(), plain, compression=parquet_writer.COMPRESSION)
    default = pq.ParquetFile(io.BytesIO(plain.getvalue())).metadata.row_group(0)
    assert sizes["id"] < default.column(0).total_compressed_size
    assert sizes["status"] <= default.column(1).total_compressed_size
    assert "DELTA_BINARY_PACKED" in group.column(2).encodings
    assert written.read().to_pylist() == [{"id": row[0], "status": row[1], "at": row[2]} for row in rows]


def test_a_zoned_instant_whose_wall_time_leaves_years_1_to_9999_is_refused_naming_its_column() -> None:
    import pyarrow as pa

    from exports.writers.parquet_writer import ParquetValueInvalid, check_local_years

    tokyo = pa.field("at", pa.timestamp("us", tz="Asia/Tokyo"))
    late = pa.array([datetime(9999, 12, 31, 15, 0), None], type=pa.timestamp("us", tz="Asia/Tokyo"))
    fine = pa.array([datetime(9999, 12, 31, 14, 59, 59)], type=pa.timestamp("us", tz="Asia/Tokyo"))
    early = pa.array([datetime(1, 1, 1, 0, 0)], type=pa.timestamp("us", tz="America/New_York"))

    check_local_years(tokyo, fine)  # 23:59:59 in Tokyo
    check_local_years(pa.field("at", pa.timestamp("us", tz="UTC")), late)
    with pytest.raises(ParquetValueInvalid, match=r"'at'.*outside years 1 to 9999"):
        check_local_years(tokyo, late)
    with pytest.raises(ParquetValueInvalid):
        check_local_years(pa.field("at", pa.timestamp("us", tz="America/New_York")), early)


def test_a_wall_time_column_is_a_timestamp_without_zone_on_both_paths() -> None:
    """A ``timestamp`` without zone is a local date and time: typed ``timestamp(us)`` with no
    zone, read back as the same naive value, whether the rows come as Python values (the rows
    path) or as Arrow arrays (a PostgreSQL query through ADBC)."""
    from exports.writers.parquet_arrow import write_parquet_batches

    columns = [
        Column("local", "Local", ColumnKind.DATETIME, wall_time=True),
        Column("at", "At", ColumnKind.DATETIME),
    ]
    local, at = datetime(2025, 3, 1, 12, 30, 5), datetime(2025, 3, 1, 11, 30, 5)
    rows_file, arrow_file = io.BytesIO(), io.BytesIO()
    write_parquet_stream(columns, [(local, at)], rows_file)
    batch = pa.record_batch(
        [pa.array([local], pa.timestamp("us")), pa.array([at], pa.timestamp("us"))], ["local", "at"]
    )
    write_parquet_batches(columns, [batch], arrow_file)

    for written in (rows_file, arrow_file):
        table = pq.read_table(io.BytesIO(written.getvalue()))
        assert table.schema.field("local").type == pa.timestamp("us")
        assert table.schema.field("at").type == pa.timestamp("us", tz="UTC")
        assert table.to_pylist() == [{"local": local, "at": at.replace(tzinfo=UTC)}]
