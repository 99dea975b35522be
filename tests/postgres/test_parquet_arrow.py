"""Parquet of PostgreSQL sources through Arrow (exports/sources/postgres/arrow.py and
exports/running/writers/parquet_arrow.py): every value of the type corpus makes the same file, byte for
byte, as the tuple path's rows; the values no Parquet type holds fail the same way; the session
is the tuple reader's (read-only, UTF-8, UTC, the statement timeout, the role and settings)."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from exports.core.errors import ExportFailed, LostOwnership, SourceCode
from exports.core.export_type import Column, ColumnKind, ExportType, Unbounded
from exports.running.writers import parquet_arrow, parquet_writer
from exports.sources.postgres.arrow import BATCH_BYTES, PostgresArrowReader, merged
from exports.sources.sql.ports import SqlRead, SqlSession
from tests.postgres.test_postgres_source import Control
from tests.postgres.test_type_corpus import MATRIX, corpus, export_rows  # noqa: F401  (corpus: the fixture)

# The corpus columns holding a value no Parquet column of their type holds (infinity, BC, a
# two-dimensional array): the file fails on them whichever way it is written.
REFUSED = ("c_date", "c_timestamp", MATRIX)


def tuple_file(columns: list[Column], every_column: list[Column], rows: list[Any]) -> bytes:
    names = [column.name for column in every_column]
    positions = [names.index(column.name) for column in columns]
    out = io.BytesIO()
    parquet_writer.write_parquet_stream(columns, ([row[p] for p in positions] for row in rows), out)
    return out.getvalue()


def arrow_file(export_type: ExportType, columns: list[Column]) -> bytes:
    filters = export_type.parse_filters({})
    batches = export_type.arrow_batches(filters, columns, Unbounded())
    assert batches is not None
    out = io.BytesIO()
    parquet_arrow.write_parquet_batches(columns, batches, out)
    return out.getvalue()


@pytest.mark.parametrize("zone", [None, "Asia/Kathmandu"])
def test_every_value_of_every_type_makes_the_same_parquet_file_through_arrow(
    corpus: tuple[str, ExportType],  # noqa: F811
    zone: str | None,
) -> None:
    _, export_type = corpus
    every_column, rows = export_rows(export_type)
    # In Kathmandu, the corpus's last instant (9999-12-31 23:59:59.999999 UTC) is in year 10000:
    # both paths refuse it (pyarrow could not read it back), and the rest is compared.
    past_9999 = {"c_timestamptz"} if zone else set()
    columns = [
        replace(column, timezone=zone) if column.kind is ColumnKind.DATETIME else column
        for column in every_column
        if column.name not in {*REFUSED, *past_9999}
    ]
    for refused in [replace(column, timezone=zone) for column in every_column if column.name in past_9999]:
        with pytest.raises(parquet_writer.ParquetValueInvalid, match="outside years 1 to 9999"):
            arrow_file(export_type, [refused])
        with pytest.raises(parquet_writer.ParquetValueInvalid, match="outside years 1 to 9999"):
            tuple_file([refused], every_column, rows)

    assert arrow_file(export_type, columns) == tuple_file(columns, every_column, rows)
    # Column by column too: one row group of five rows per file, each column's rules alone.
    for column in columns:
        assert arrow_file(export_type, [column]) == tuple_file([column], every_column, rows), column.name


@pytest.mark.parametrize("name", REFUSED)
def test_a_value_no_parquet_type_holds_fails_through_arrow_naming_its_column(
    corpus: tuple[str, ExportType],  # noqa: F811
    name: str,
) -> None:
    _, export_type = corpus
    every_column, rows = export_rows(export_type)
    columns = [column for column in every_column if column.name == name]

    with pytest.raises(parquet_writer.ParquetValueInvalid) as through_rows:
        tuple_file(columns, every_column, rows)
    with pytest.raises(parquet_writer.ParquetValueInvalid) as through_arrow:
        arrow_file(export_type, columns)

    assert through_arrow.value.column == through_rows.value.column == name


def test_a_decimal_no_decimal_column_holds_fails_through_arrow(corpus: tuple[str, ExportType]) -> None:  # noqa: F811
    _, export_type = corpus
    # c_numeric holds 1e400, NaN and Infinity: no numeric(38, 2) holds them.
    column = Column("c_numeric", "c_numeric", ColumnKind.DECIMAL, precision=38, scale=2)

    with pytest.raises(parquet_writer.ParquetValueInvalid) as raised:
        arrow_file(export_type, [column])

    assert raised.value.column == "c_numeric"


def test_a_resumed_read_or_a_column_typed_otherwise_is_left_to_the_tuple_path(
    corpus: tuple[str, ExportType],  # noqa: F811
) -> None:
    uri, _ = corpus
    reader = PostgresArrowReader("db", lambda: {"conninfo": uri})
    columns = [Column("id", "id", ColumnKind.INTEGER)]
    read = SqlRead("SELECT id FROM corpus", {}, ("id",))

    assert reader.record_batches(read, columns, Unbounded()) is not None
    assert reader.record_batches(replace(read, after=[1]), columns, Unbounded()) is None
    assert reader.record_batches(read, [Column("id", "id", ColumnKind.STRING)], Unbounded()) is None
    assert reader.record_batches(read, [Column("nope", "nope", ColumnKind.INTEGER)], Unbounded()) is None


def values_of(reader: PostgresArrowReader, read: SqlRead, names: list[str], control: Any = None) -> list[Any]:
    columns = [Column(name, name, ColumnKind.STRING) for name in names]
    batches = reader.record_batches(read, columns, control or Unbounded())
    assert batches is not None
    return [row for batch in batches for row in zip(*(array.to_pylist() for array in batch.columns), strict=True)]


def test_the_session_is_the_tuple_readers(scratch: str) -> None:
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("DO $$ BEGIN CREATE ROLE arrow_reader; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    # The URI asks for Latin-1: the session is in UTF-8 whatever it says.
    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch + "&options=-c%20client_encoding%3DLATIN1"})
    query = (
        "SELECT current_setting('client_encoding') AS encoding, current_setting('TimeZone') AS zone, "
        "current_setting('transaction_read_only') AS read_only, current_setting('IntervalStyle') AS intervals, "
        "current_setting('statement_timeout') AS timeout, current_setting('app.tenant') AS tenant, "
        "current_setting('app.groups') AS groups, current_user::text AS role, %(word)s::text AS word, "
        "'100%%' AS percent, 'Zoë 王'::text AS text"
    )
    session = SqlSession("arrow_reader", [("app.tenant", "it's acme"), ("app.groups", ["a", "b,c"])])
    read = SqlRead(query, {"word": "o'k \\ %(x)s"}, session=session)
    expected = {
        "encoding": "UTF8",
        "zone": "UTC",
        "read_only": "on",
        "intervals": "iso_8601",
        "timeout": "2min",
        "tenant": "it's acme",
        "groups": '{a,"b,c"}',
        "role": "arrow_reader",
        "word": "o'k \\ %(x)s",
        "percent": "100%",
        "text": "Zoë 王",
    }

    assert values_of(reader, read, list(expected), Control(seconds=120)) == [tuple(expected.values())]


def test_the_transaction_is_read_only(scratch: str) -> None:
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE arrow_seq")
    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch})

    with pytest.raises(ExportFailed) as raised:
        values_of(reader, SqlRead("SELECT nextval('arrow_seq')::text AS n", {}), ["n"])

    assert raised.value.code == SourceCode.QUERY_FAILED and "read-only" in raised.value.message
    assert scratch not in raised.value.message


def test_a_query_past_its_time_ends_with_the_statement_timeout(scratch: str) -> None:
    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch})
    read = SqlRead("SELECT pg_sleep(30)::text AS slept", {})

    started = time.monotonic()
    with pytest.raises(ExportFailed) as raised:
        values_of(reader, read, ["slept"], Control(seconds=1.5))

    assert raised.value.code == SourceCode.QUERY_TIMEOUT and time.monotonic() - started < 10


def test_a_stopped_task_cancels_its_arrow_query(scratch: str) -> None:
    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch})
    read = SqlRead("SELECT pg_sleep(30)::text AS slept", {})

    started = time.monotonic()
    with pytest.raises(LostOwnership):
        values_of(reader, read, ["slept"], Control(stop_after=1.0))

    assert time.monotonic() - started < 10


def test_values_are_merged_as_psycopg_quotes_them(scratch: str) -> None:
    params = {"text": "it's \\ 'quoted'", "none": None, "number": 12, "words": ["a", "b'c"]}
    query = "SELECT %(text)s AS t, %(none)s AS n, %(number)s AS i, %(words)s AS w, '%%' AS p"

    with psycopg.connect(scratch) as conn:
        expected = conn.execute(psycopg.ClientCursor(conn).mogrify(query, params)).fetchall()
        assert conn.execute(merged(query, params)).fetchall() == expected
    assert expected == [("it's \\ 'quoted'", None, 12, "{a,b'c}", "%")]


def test_an_arrow_read_imports_neither_adbcs_db_api_nor_polars(scratch: str) -> None:
    # ADBC's DB-API module imports pyarrow.dataset and, where installed (tests, the bench),
    # polars: half a second of CPU on a worker's first Parquet export.
    script = (
        "import sys\n"
        "from exports.sources.postgres.arrow import PostgresArrowReader\n"
        "from exports.core.export_type import Column, ColumnKind, Unbounded\n"
        "from exports.sources.sql.ports import SqlRead\n"
        f"reader = PostgresArrowReader('db', lambda: {{'conninfo': {scratch!r}}})\n"
        "read = SqlRead('SELECT 1 AS one', {})\n"
        "batches = reader.record_batches(read, [Column('one', 'one', ColumnKind.INTEGER)], Unbounded())\n"
        "assert [batch.num_rows for batch in batches] == [1]\n"
        "print(sorted({'adbc_driver_manager.dbapi', 'polars', 'pyarrow.dataset'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"


def test_the_driver_gives_batches_of_about_batch_bytes(scratch: str) -> None:
    # A batch lives until the row groups it feeds are written: smaller batches, a lower peak.
    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch})
    rows = 3 * BATCH_BYTES // 100
    read = SqlRead(f"SELECT repeat('x', 100) AS text FROM generate_series(1, {rows})", {})
    batches = reader.record_batches(read, [Column("text", "text", ColumnKind.STRING)], Unbounded())
    assert batches is not None

    sizes = [batch.num_rows for batch in batches]

    assert sum(sizes) == rows and len(sizes) >= 3


@pytest.mark.parametrize(
    ("seconds", "stop_after", "raised_type"),
    [(2.0, None, ExportFailed), (None, 1.0, LostOwnership)],
    ids=["at the run's end", "when the task is stopped"],
)
def test_a_stopped_backend_does_not_hold_an_arrow_read(
    scratch: str, seconds: float | None, stop_after: float | None, raised_type: type
) -> None:
    """Issue 49: the Arrow path's backend stopped with SIGSTOP answers neither its statement
    timeout nor a cancel (signals it cannot take while stopped). As the tuple reader's watchdog
    does (test_postgres_source.test_a_stopped_backend_does_not_hold_the_worker), the read lets
    go once the grace has passed: the connection's socket, found outside the driver, is shut
    down under it."""
    import os
    import signal
    import threading

    from exports.sources.postgres.session import CANCEL_CHECK_SEC, CONNECT_TIMEOUT_SEC, UNANSWERED_GRACE_SEC
    from tests.polling import poll_until

    reader = PostgresArrowReader("db", lambda: {"conninfo": scratch})
    control = Control(seconds=seconds, stop_after=stop_after)
    bound_sec = (seconds or stop_after or 0) + UNANSWERED_GRACE_SEC
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values_of(reader, SqlRead("SELECT pg_sleep(60)::text AS slept", {}), ["slept"], control)
        except BaseException as error:
            errors.append(error)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    with psycopg.connect(scratch, autocommit=True) as conn:
        found = poll_until(
            lambda: conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"
                " AND query LIKE '%%pg_sleep%%'",
                [f"exports:{control.task_id}"],
            ).fetchone(),
            timeout_sec=10,
            interval_sec=0.05,
            fail="no active Arrow backend",
        )
    assert found is not None  # poll_until returns only a truthy read
    pid = int(found[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        thread.join(bound_sec + CANCEL_CHECK_SEC + CONNECT_TIMEOUT_SEC + 5)
        elapsed = time.monotonic() - started
        assert not thread.is_alive(), "the Arrow read is still waiting for the stopped backend"
    finally:
        os.kill(pid, signal.SIGCONT)
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
    (error,) = errors
    assert isinstance(error, raised_type), error
    if raised_type is ExportFailed:
        assert isinstance(error, ExportFailed) and error.code == SourceCode.QUERY_TIMEOUT, error
    assert bound_sec <= elapsed <= bound_sec + CANCEL_CHECK_SEC + CONNECT_TIMEOUT_SEC + 3
