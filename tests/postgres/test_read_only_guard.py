"""The read-only guard has no way around it: whatever a declared query says, every statement the
reader sends is one statement (the extended protocol), in a read-only transaction, as a role
that can read and nothing else (local mode's). The breakout corpus is sent straight to the
reader, past the declaration loader's own checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exports.core.errors import ExportFailed
from exports.core.export_type import Unbounded
from exports.sources.postgres.connections import connection_settings
from exports.sources.postgres.model import PostgresSource
from exports.sources.postgres.reader import PostgresReader
from exports.sources.sql.ports import SqlRead
from local_stack.embedded_postgres import EmbeddedPostgres

READER = "guard_reader"
PWNED = Path("/tmp/exports-read-only-guard-pwned")
WRITES = [
    # Close the wrapping subquery, commit, write, reopen: several statements in one string.
    "SELECT 1 AS x) AS exported; COMMIT; INSERT INTO victims VALUES (1); SELECT * FROM (SELECT 1 AS x",
    f"SELECT 1 AS x) AS exported; COPY (SELECT 1) TO PROGRAM 'touch {PWNED}'; SELECT * FROM (SELECT 1 AS x",
    "SELECT 1 AS x) AS exported; SET transaction_read_only = off; INSERT INTO victims VALUES (2); "
    "SELECT * FROM (SELECT 1 AS x",
    # One statement that writes: refused by the read-only transaction.
    "WITH w AS (INSERT INTO victims VALUES (3) RETURNING 1) SELECT 1 AS x FROM w",
    "SELECT nextval('victim_ids') AS x",
    "SELECT set_config('transaction_read_only', 'off', false) AS x",
]
# What only a superuser (or a role granted it) may do.
PRIVILEGED = ["SELECT pg_read_file('/etc/passwd') AS x", "SELECT lo_import('/etc/passwd') AS x"]


@pytest.fixture(params=[READER, "postgres"])
def guarded(
    postgres: EmbeddedPostgres, scratch: str, request: pytest.FixtureRequest
) -> Iterator[tuple[str, PostgresReader]]:
    """A reader connecting as local mode's read-only role, or as a superuser (a deployment's
    own choice): neither writes through a declared query."""
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE TABLE victims (id integer); CREATE SEQUENCE victim_ids")
    postgres.create_reader(READER)
    yield scratch, reader_as(postgres, scratch, request.param)
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {READER}; DROP ROLE {READER}")


def reader_as(postgres: EmbeddedPostgres, scratch: str, user: str) -> PostgresReader:
    """A reader of the scratch database connecting as ``user``."""
    database = scratch.split("@/", 1)[1].split("?", maxsplit=1)[0]
    source = PostgresSource(kind="postgresql", url_env="DB_URL")
    environ = {"DB_URL": postgres.uri(database, user=user)}
    return PostgresReader("db", connection_settings("db", source, environ, _none, _none, Path(".")))


def _none(_: Any) -> Any:
    raise AssertionError("not used")


def _attempts(reader: PostgresReader, query: str) -> list[Any]:
    """Every statement the reader sends for a read: the export's rows last."""
    read = SqlRead(query, {}, ("x",))
    control = Unbounded()
    return [
        lambda: reader.describe(read, control),
        lambda: reader.count(read, control),
        lambda: reader.boundaries(read, 10, 2, control),
        lambda: list(reader.batches(read, control)),
    ]


@pytest.mark.parametrize("query", WRITES)
def test_no_declared_query_writes_or_runs_a_program_whatever_the_role(
    guarded: tuple[str, PostgresReader], query: str
) -> None:
    admin, reader = guarded
    PWNED.unlink(missing_ok=True)
    *looks, rows = _attempts(reader, query)
    for look in looks:  # a look at the result (LIMIT 0) may evaluate nothing: it may succeed, harmless
        try:
            look()
        except ExportFailed as error:
            assert error.code == "SOURCE_QUERY_FAILED"
    with pytest.raises(ExportFailed) as refused:
        rows()
    assert refused.value.code == "SOURCE_QUERY_FAILED"
    with psycopg.connect(admin) as conn:
        assert conn.execute("SELECT count(*) FROM victims").fetchone() == (0,)
        assert conn.execute("SELECT last_value, is_called FROM victim_ids").fetchone() == (1, False)
    assert not PWNED.exists()


@pytest.mark.parametrize("query", PRIVILEGED)
def test_the_read_only_role_reads_no_server_file(postgres: EmbeddedPostgres, scratch: str, query: str) -> None:
    postgres.create_reader(READER)
    try:
        with pytest.raises(ExportFailed, match="permission denied"):
            list(reader_as(postgres, scratch, READER).batches(SqlRead(query, {}, ("x",)), Unbounded()))
    finally:
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {READER}; DROP ROLE {READER}")


def test_the_reader_role_reads_what_it_is_given(guarded: tuple[str, PostgresReader]) -> None:
    _, reader = guarded
    batches = list(reader.batches(SqlRead("SELECT 1 AS x UNION ALL SELECT 2", {}, ("x",)), Unbounded()))
    assert [row for batch in batches for row in batch.rows] == [(1,), (2,)]
