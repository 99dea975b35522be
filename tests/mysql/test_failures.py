"""A MySQL source that is down, refuses, is slow or is stopped ends in a clear error: retried
when waiting can help (SOURCE_UNAVAILABLE), final with its own code when it cannot, a statement
over the run's time ends SOURCE_QUERY_TIMEOUT, a stopped task's query is killed on the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

from exports.core.errors import ExportFailed, LostOwnership, SourceCode, SourceQueryTimeout
from exports.sources.errors import SourceUnavailable
from exports.sources.mysql.connections import connection_settings
from exports.sources.mysql.model import MySqlSource
from exports.sources.mysql.reader import MySqlReader
from exports.sources.sql.ports import Batch, SqlRead
from local_stack.embedded_mariadb import EmbeddedMariaDB, free_port
from tests.mysql.conftest import run_as_root
from tests.mysql.test_streaming_memory import create_wide

# A statement that runs for minutes: a cross join of 50,000 rows with themselves.
SLOW = "SELECT COUNT(*) AS n FROM wide AS a CROSS JOIN wide AS b WHERE a.digest <> b.digest"


class Control:
    """A run that ends after ``seconds`` (a deadline), or is stopped after ``stop_after``."""

    def __init__(self, seconds: float | None = None, stop_after: float | None = None) -> None:
        self._started = time.monotonic()
        self._seconds = seconds
        self._stop_after = stop_after

    @property
    def task_id(self) -> str:
        return "01TESTTASK"

    def seconds_left(self) -> float | None:
        return None if self._seconds is None else self._seconds - (time.monotonic() - self._started)

    def stop_requested(self) -> bool:
        return self._stop_after is not None and time.monotonic() - self._started > self._stop_after


def reader(url: str) -> MySqlReader:
    source = MySqlSource(kind="mysql", url_env="DB_URL")
    return MySqlReader("db", connection_settings("db", source, {"DB_URL": url}, _none, _none, Path(".")))


def _none(_: Any) -> Any:
    raise AssertionError("not asked")


def running_queries(server: EmbeddedMariaDB) -> list[str]:
    rows = run_as_root(
        server, "mysql", "SELECT info FROM information_schema.processlist WHERE info LIKE '/* exports:%'"
    )
    return [str(row[0]) for row in rows]


@pytest.fixture
def slow_url(mariadb: EmbeddedMariaDB, scratch_mysql: str) -> str:
    create_wide(mariadb, scratch_mysql, 50_000)
    return mariadb.url(scratch_mysql)


def test_a_statement_over_the_runs_time_ends_as_a_timeout(slow_url: str) -> None:
    started = time.monotonic()

    with pytest.raises(SourceQueryTimeout, match="ran out of time"):
        list(reader(slow_url).batches(SqlRead(SLOW, {}), Control(seconds=2)))

    assert time.monotonic() - started < 8


def test_a_stopped_tasks_query_is_killed_on_the_server(mariadb: EmbeddedMariaDB, slow_url: str) -> None:
    seen: list[list[str]] = []
    watcher = threading.Timer(1.0, lambda: seen.append(running_queries(mariadb)))
    watcher.start()
    started = time.monotonic()

    with pytest.raises(LostOwnership):
        list(reader(slow_url).batches(SqlRead(SLOW, {}), Control(stop_after=1.5)))

    watcher.join()
    assert time.monotonic() - started < 8
    assert seen[0] and seen[0][0].startswith("/* exports:01TESTTASK */ SELECT * FROM (SELECT COUNT(*)")
    assert running_queries(mariadb) == []


def test_an_export_closed_early_ends_its_query(mariadb: EmbeddedMariaDB, scratch_mysql: str) -> None:
    create_wide(mariadb, scratch_mysql, 50_000)
    read = SqlRead("SELECT * FROM wide", {}, ("n",))
    pages = cast(Generator[Batch, None, None], reader(mariadb.url(scratch_mysql)).batches(read, Control()))

    first = next(pages)
    pages.close()

    assert len(first.rows) == 5000
    deadline = time.monotonic() + 5
    while running_queries(mariadb) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_queries(mariadb) == []


def test_a_server_that_is_down_is_retried() -> None:
    with pytest.raises(SourceUnavailable, match="cannot be reached"):
        list(reader(f"mysql://u:p@127.0.0.1:{free_port()}/shop").batches(SqlRead("SELECT 1", {}), Control()))


@pytest.mark.parametrize(
    ("user", "password", "database", "code"),
    [
        ("exports_reader", "wrong", "shop", SourceCode.AUTH_FAILED),
        ("exports_reader", "exports-reader", "no_such_database", SourceCode.DATABASE_UNKNOWN),
    ],
)
def test_a_refusal_waiting_cannot_fix_is_final(
    mariadb: EmbeddedMariaDB, user: str, password: str, database: str, code: str
) -> None:
    url = f"mysql://{user}:{password}@127.0.0.1:{mariadb.port}/{database}"

    with pytest.raises(ExportFailed) as raised:
        list(reader(url).batches(SqlRead("SELECT 1", {}), Control()))

    assert raised.value.code == code
    assert password not in raised.value.message and "127.0.0.1" not in raised.value.message


def test_a_query_that_fails_names_the_servers_words(mariadb: EmbeddedMariaDB, scratch_mysql: str) -> None:
    with pytest.raises(ExportFailed) as raised:
        list(reader(mariadb.url(scratch_mysql)).batches(SqlRead("SELECT nope FROM missing", {}), Control()))

    assert raised.value.code == SourceCode.QUERY_FAILED
    assert "doesn't exist (MySQL error 1146)" in raised.value.message
