"""The read-only guard of the MySQL kind has no way around it: whatever a declared query says,
it runs as a subquery of one statement (no multi-statements) inside ``START TRANSACTION READ
ONLY``, so nothing it calls can write, as local mode's read-only account or as root. The
breakout corpus is sent straight to the reader, past the loader's own checks
(tests/mysql/test_declarations.py shows the loader refusing the same queries at start-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql
import pytest

from exports.core.errors import ExportFailed
from exports.core.export_type import Unbounded
from exports.sources.mysql.connections import connection_settings
from exports.sources.mysql.model import MySqlSource
from exports.sources.mysql.reader import MySqlReader
from exports.sources.sql.ports import SqlRead
from local_stack.embedded_mariadb import EmbeddedMariaDB
from tests.mysql.conftest import run_as_root

ADMIN = "guard_admin"
PWNED = Path("/tmp/exports-mysql-read-only-guard-pwned")
# (the query, what stops it): sent as a declared query, run as `SELECT * FROM (<query>) AS exported`.
WRITES = [
    # One statement that calls a stored function that writes: the read-only transaction refuses.
    ("SELECT write_victim(1) AS x", "READ ONLY transaction"),
    ("SELECT 1 AS x FROM victims_seed WHERE write_victim(2) = 1", "READ ONLY transaction"),
    # A function that calls a procedure that commits first, then writes: the transaction is not
    # left while the statement runs: the write is still refused.
    ("SELECT leave_then_write() AS x", "READ ONLY transaction"),
    # Close the subquery, leave the transaction, write: several statements in one string.
    ("SELECT 1 AS x) AS exported; COMMIT; INSERT INTO victims VALUES (3); SELECT * FROM (SELECT 1 AS x", "syntax"),
    (
        "SELECT 1 AS x) AS exported; SET SESSION TRANSACTION READ WRITE; START TRANSACTION; "
        "INSERT INTO victims VALUES (4); COMMIT; SELECT * FROM (SELECT 1 AS x",
        "syntax",
    ),
    ("SELECT 1 AS x) AS exported; DO write_victim(5); SELECT * FROM (SELECT 1 AS x", "syntax"),
    # A SELECT that writes a file on the server, or a variable.
    (f"SELECT 1 AS x INTO OUTFILE '{PWNED}'", "syntax"),
    ("SELECT 1 AS x) AS exported UNION SELECT 1 INTO @pwned FROM (SELECT 1 AS x", "syntax"),
]


@pytest.fixture(params=["exports_reader", ADMIN])
def guarded(mariadb: EmbeddedMariaDB, scratch_mysql: str, request: pytest.FixtureRequest) -> tuple[str, MySqlReader]:
    """A reader of the scratch database as local mode's read-only account, or as an account with
    every privilege (a deployment's own choice): neither writes through a declared query."""
    database = scratch_mysql
    run_as_root(
        mariadb,
        database,
        "CREATE TABLE victims (id INT)",
        "CREATE TABLE victims_seed (id INT)",
        "INSERT INTO victims_seed VALUES (1)",
        "CREATE FUNCTION write_victim(n INT) RETURNS INT MODIFIES SQL DATA "
        "BEGIN INSERT INTO victims VALUES (n); RETURN 1; END",
        "CREATE PROCEDURE commit_then_write() BEGIN COMMIT; INSERT INTO victims VALUES (6); END",
        "CREATE FUNCTION leave_then_write() RETURNS INT MODIFIES SQL DATA "
        "BEGIN CALL commit_then_write(); RETURN 1; END",
        f"CREATE USER IF NOT EXISTS '{ADMIN}'@'%' IDENTIFIED BY 'admin'",
        f"GRANT ALL PRIVILEGES ON *.* TO '{ADMIN}'@'%' WITH GRANT OPTION",
    )
    password = "admin" if request.param == ADMIN else "exports-reader"
    url = mariadb.url(database, user=request.param, password=password)
    source = MySqlSource(kind="mysql", url_env="DB_URL")
    reader = MySqlReader("db", connection_settings("db", source, {"DB_URL": url}, _none, _none, Path(".")))
    return database, reader


def _none(_: Any) -> Any:
    raise AssertionError("a url_env source reads no secret and makes no token")


@pytest.mark.parametrize(("query", "refusal"), WRITES)
def test_no_declared_query_writes(
    mariadb: EmbeddedMariaDB, guarded: tuple[str, MySqlReader], query: str, refusal: str
) -> None:
    database, reader = guarded

    with pytest.raises(ExportFailed) as raised:
        list(reader.batches(SqlRead(query, {}), Unbounded()))

    assert refusal.lower() in raised.value.message.lower()
    assert run_as_root(mariadb, database, "SELECT COUNT(*) FROM victims") == [(0,)]
    assert not PWNED.exists()


def test_the_same_function_writes_outside_the_guard(mariadb: EmbeddedMariaDB, guarded: tuple[str, MySqlReader]) -> None:
    """The corpus is not refused for another reason: as root, outside the reader, the function writes."""
    database, _ = guarded

    run_as_root(mariadb, database, "SELECT write_victim(7)")

    assert run_as_root(mariadb, database, "SELECT COUNT(*) FROM victims") == [(1,)]


def test_a_stored_function_may_not_commit(mariadb: EmbeddedMariaDB, scratch_mysql: str) -> None:
    """MySQL refuses to create a function that leaves the transaction itself."""
    with pytest.raises(pymysql.err.MySQLError, match="commit is not allowed"):
        run_as_root(mariadb, scratch_mysql, "CREATE FUNCTION leave_now() RETURNS INT BEGIN COMMIT; RETURN 1; END")


def test_every_statement_runs_in_utc_at_repeatable_read(guarded: tuple[str, MySqlReader]) -> None:
    """(MariaDB 10.11 names the isolation variable tx_isolation; MySQL 8 transaction_isolation.)"""
    _, reader = guarded
    query = "SELECT @@session.time_zone AS zone, @@session.tx_isolation AS isolation"

    (batch,) = list(reader.batches(SqlRead(query, {}), Unbounded()))

    assert batch.rows == [("+00:00", "REPEATABLE-READ")]
