"""The PostgreSQL source on a real server: typed values, bound parameters only, keyset resume,
read-only, cancellation, timeouts and failures that say what happened."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import psycopg
import pytest
import python_calamine

from exports.core.errors import ExportFailed, LostOwnership, SourceCode, SourceQueryTimeout
from exports.core.export_type import ExportType, Row, Unbounded
from exports.running.writers import csv_writer, xlsx_engine
from exports.sources.errors import SourceUnavailable
from exports.sources.postgres.reader import PostgresReader
from exports.sources.postgres.session import CANCEL_CHECK_SEC, CONNECT_TIMEOUT_SEC, UNANSWERED_GRACE_SEC
from exports.sources.sql.ports import SqlRead
from local_stack.embedded_postgres import EmbeddedPostgres
from tests.polling import poll_until
from tests.postgres.conftest import SEED_DAY, backends, declared_types, write_declaration

DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.things]
description = "things"
source = "db"
query = "SELECT id, label, amount, happened_at, day FROM things WHERE label <> %(not_label)s OR %(not_label)s IS NULL"
order_key = ["id"]
[types.things.parameters.not_label]
type = "string"
required = false

[types.by_real]
description = "ordered by float keys: a real, then a double precision"
source = "db"
query = '''
SELECT r, d FROM (VALUES (0.1::real, 0.1::float8), (0.1::real, 0.30000000000000004::float8),
(1.5::real, 1e22::float8), (3.4e38::real, -0.5::float8), (-0.7::real, 5e-324::float8)) AS v(r, d)
'''
order_key = ["r", "d"]

[types.slow]
description = "a query that takes its time"
source = "db"
query = "SELECT 1 AS one FROM pg_sleep(%(seconds)s)"
[types.slow.parameters.seconds]
type = "integer"

[types.inferred]
description = "columns from the result"
source = "db"
query = "SELECT id, amount, happened_at, day, flag, uid, doc FROM things ORDER BY id"

[types.broken]
description = "names a column that does not exist"
source = "db"
query = "SELECT no_such_column FROM things"

[types.wrong_columns]
description = "declares a column the query does not return"
source = "db"
query = "SELECT id FROM things"
columns = [{ name = "id" }, { name = "label" }]

[types.writer]
description = "tries to write"
source = "db"
query = "SELECT nextval('things_seq') AS n"
"""
# Text from every Unicode plane we can put in a cell, and characters XML 1.0 cannot carry.
UNICODE = "Aé中😀\U00020000\U000e0041\U0010fffd"
XML_ILLEGAL = "bell\x07 and form feed\x0c"


@pytest.fixture
def things(scratch: str, tmp_path: Path) -> tuple[str, dict[str, ExportType]]:
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE things (id integer PRIMARY KEY, label text, amount numeric(40, 10), happened_at timestamptz,"
            " day date, flag boolean, uid uuid, doc jsonb)"
        )
        conn.execute("CREATE SEQUENCE things_seq")
        conn.execute(
            "INSERT INTO things VALUES"
            " (1, %s, 12345678901234567890.1234567890, '2025-03-01 10:00:00+08:00', '2025-03-01', true,"
            "  'a8098c1a-f86e-11da-bd1a-00112444be1e', '{\"k\": [1, 2]}'),"
            " (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
            " (3, %s, -0.0000000001, '2025-03-01 10:00:00-05:00', '2025-03-02', false, NULL, NULL),"
            " (4, 'plain', 1, '2025-06-01 00:00:00+00', '2025-06-01', true, NULL, NULL)",
            [UNICODE, XML_ILLEGAL],
        )
    path = write_declaration(tmp_path, DECLARATION)
    return scratch, declared_types(path, {"DB_URL": scratch})


def rows_of(export: ExportType, filters: dict[str, Any], cursor: Any = None) -> list[Row]:
    parsed = export.parse_filters(filters)
    return [row for page in export.pages(parsed, cursor) for row in page.rows]


def test_values_arrive_typed_nulls_empty_numerics_exact_and_timestamps_in_utc(things: Any) -> None:
    _, types = things

    rows = rows_of(types["things"], {})

    assert rows[0] == (
        1,
        UNICODE,
        Decimal("12345678901234567890.1234567890"),
        datetime(2025, 3, 1, 2, 0),
        SEED_DAY.replace(2025, 3, 1),
    )
    assert rows[1] == (2, None, None, None, None)
    assert rows[2][3] == datetime(2025, 3, 1, 15, 0)  # -05:00 -> UTC
    assert rows[2][2] == Decimal("-0.0000000001")


def test_inferred_columns_follow_the_result_and_odd_types_become_text(things: Any) -> None:
    _, types = things
    export = types["inferred"]
    filters = export.parse_filters({})

    columns = export.columns(filters)
    rows = rows_of(export, {})

    assert [(column.name, column.kind.value) for column in columns] == [
        ("id", "integer"),
        ("amount", "decimal"),
        ("happened_at", "datetime"),
        ("day", "date"),
        ("flag", "boolean"),
        ("uid", "string"),
        ("doc", "json"),
    ]
    assert rows[0][5] == "a8098c1a-f86e-11da-bd1a-00112444be1e" and rows[0][6] == '{"k": [1, 2]}'


def test_files_hold_the_text_exactly_csv_and_xlsx(things: Any) -> None:
    _, types = things
    export = types["things"]
    filters = export.parse_filters({})
    columns = export.columns(filters)
    rows = rows_of(export, {})

    stream = io.BytesIO()
    writer = csv_writer.CsvStream(columns, stream, bom=False, header=True)
    writer.write_rows(rows)
    writer.detach()
    parsed = list(csv.reader(io.StringIO(stream.getvalue().decode("utf-8"))))
    assert parsed[1][1] == UNICODE
    assert parsed[1][2] == "12345678901234567890.1234567890"

    book = io.BytesIO()
    xlsx_engine.write_xlsx_stream(columns, iter(rows), book)
    book.seek(0)
    sheet = openpyxl.load_workbook(book, read_only=True).active
    values = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert values[1][1] == UNICODE
    assert values[3][1] == "bell_x0007_ and form feed_x000C_"  # Excel's escapes, which openpyxl leaves
    assert values[2][0] == 2 and all(value is None for value in values[2][1:])  # NULL -> empty cell
    assert values[1][2] == "12345678901234567890.1234567890"  # no double holds it: every digit, as text
    calamine = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(book.getvalue()))
    assert calamine.get_sheet_by_index(0).to_python()[3][1] == "bell\x07 and form feed\x0c"


@pytest.mark.parametrize(
    "attack",
    [
        "x' OR '1'='1",
        "'; DROP TABLE things; --",
        "plain'); DELETE FROM things; --",
        "%(not_label)s",
        "\\' OR 1=1 --",
        "$1",
    ],
)
def test_a_string_parameter_reaches_the_database_only_as_a_bound_value(things: Any, attack: str) -> None:
    uri, types = things

    rows = rows_of(types["things"], {"not_label": attack})

    # Every row whose label is not the attack text (rows with NULL labels drop out of <>).
    assert [row[0] for row in rows] == [1, 3, 4]
    with psycopg.connect(uri) as conn:
        assert conn.execute("SELECT count(*) FROM things").fetchone() == (4,)


@pytest.mark.parametrize("name", ["things", "by_real"])
def test_pages_resume_after_any_cursor_like_an_uninterrupted_read(things: Any, name: str) -> None:
    # by_real: float keys are saved as their shortest text and read back as the key's own type,
    # so a real key (0.1 loads as a double other than 0.1::real widened) is not read again.
    _, types = things
    export = types[name]
    reader = export._reader
    reader._page_rows = 1
    filters = export.parse_filters({})

    pages = list(export.pages(filters))
    whole = [row for page in pages for row in page.rows]
    for position, page in enumerate(pages):
        rest = [row for later in export.pages(filters, page.cursor) for row in later.rows]
        assert whole[: position + 1] + rest == whole


def test_a_query_error_fails_clearly_without_connection_details(things: Any) -> None:
    uri, types = things

    with pytest.raises(ExportFailed) as raised:
        rows_of(types["broken"], {})

    assert raised.value.code == SourceCode.QUERY_FAILED
    assert 'column "no_such_column" does not exist' in raised.value.message
    assert "42703" in raised.value.message
    assert uri not in raised.value.message and "postgres" not in raised.value.message.replace("'db'", "")


def test_the_transaction_is_read_only(things: Any) -> None:
    uri, types = things

    with pytest.raises(ExportFailed) as raised:
        rows_of(types["writer"], {})

    assert raised.value.code == SourceCode.QUERY_FAILED and "read-only" in raised.value.message
    with psycopg.connect(uri) as conn:
        assert conn.execute("SELECT last_value, is_called FROM things_seq").fetchone() == (1, False)


def test_an_unreachable_database_is_a_retryable_fault(tmp_path: Path) -> None:
    reader = PostgresReader("db", lambda: {"conninfo": f"postgresql://postgres:secret@/x?host={tmp_path}"})

    with pytest.raises(SourceUnavailable) as raised:
        list(reader.batches(_read("SELECT 1"), Unbounded()))

    assert "could not connect to data source 'db'" in raised.value.message
    assert "secret" not in raised.value.message and str(tmp_path) not in raised.value.message


@pytest.fixture(scope="module")
def refusing_roles(postgres: EmbeddedPostgres) -> Iterator[str]:
    """Roles the server refuses for good, each in its own way; the server's socket folder.
    ``exports_pw`` must give a password (a pg_hba.conf line for it alone, reloaded)."""
    hba = postgres.data_dir / "pg_hba.conf"
    original = hba.read_text()
    with psycopg.connect(postgres.uri(), autocommit=True) as conn:
        for role, options in [
            ("exports_pw", "LOGIN PASSWORD 'right'"),
            ("exports_nologin", "NOLOGIN"),
            ("exports_full", "LOGIN CONNECTION LIMIT 0"),
        ]:
            conn.execute(f"DROP ROLE IF EXISTS {role}")
            conn.execute(f"CREATE ROLE {role} {options}")
        hba.write_text("local all exports_pw scram-sha-256\n" + original)
        conn.execute("SELECT pg_reload_conf()")
    time.sleep(0.2)  # the postmaster re-reads the file on SIGHUP
    yield str(postgres.data_dir)
    hba.write_text(original)
    with psycopg.connect(postgres.uri(), autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")


@pytest.mark.parametrize(
    ("user", "database", "code", "reason"),
    [
        ("exports_pw:wrong", "postgres", SourceCode.AUTH_FAILED, "credentials were refused"),
        ("nobody_here", "postgres", SourceCode.AUTH_FAILED, "the role does not exist"),
        ("postgres", "no_such_database", SourceCode.DATABASE_UNKNOWN, "the database does not exist"),
        ("exports_nologin", "postgres", SourceCode.ACCESS_DENIED, "may not log in"),
        ("exports_full", "postgres", SourceCode.CONNECTION_LIMIT, "CONNECTION LIMIT is reached"),
    ],
    ids=[
        "a wrong password",
        "an unknown role",
        "an unknown database",
        "a role that may not log in",
        "a role's connection limit",
    ],
)
def test_a_connection_that_waiting_cannot_fix_fails_at_once_with_its_own_code(
    refusing_roles: str, user: str, database: str, code: str, reason: str
) -> None:
    """Issue 23: these were retried as SOURCE_UNAVAILABLE, "the server cannot be reached",
    until the retries were spent. They are final, and say what to fix."""
    reader = PostgresReader("db", lambda: {"conninfo": f"postgresql://{user}@/{database}?host={refusing_roles}"})

    with pytest.raises(ExportFailed) as raised:
        list(reader.batches(_read("SELECT 1"), Unbounded()))

    assert raised.value.code == code and reason in raised.value.message
    assert raised.value.message.startswith("data source 'db' refused the connection: ")
    assert "wrong" not in raised.value.message and refusing_roles not in raised.value.message


def test_the_right_password_connects(refusing_roles: str) -> None:
    """The pg_hba.conf line above does ask for a password: with the right one the role reads."""
    reader = PostgresReader(
        "db", lambda: {"conninfo": f"postgresql://exports_pw:right@/postgres?host={refusing_roles}"}
    )

    assert [batch.rows for batch in reader.batches(_read("SELECT 1 AS one"), Unbounded())] == [[(1,)]]


class Control:
    """A run that has ``seconds`` left and is stopped once ``stop_after`` seconds passed."""

    def __init__(self, seconds: float | None = None, stop_after: float | None = None) -> None:
        self.task_id = "01TESTTASK"
        self._seconds = seconds
        self._stop_at = None if stop_after is None else time.monotonic() + stop_after

    def seconds_left(self) -> float | None:
        return self._seconds

    def stop_requested(self) -> bool:
        return self._stop_at is not None and time.monotonic() >= self._stop_at


def _read(query: str, **params: Any) -> Any:
    return SqlRead(query, params)


def test_a_query_past_its_time_is_cancelled_by_the_statement_timeout(things: Any) -> None:
    uri, types = things
    reader = types["slow"]._reader

    started = time.monotonic()
    with pytest.raises(ExportFailed) as raised:
        list(reader.batches(_read("SELECT pg_sleep(30)"), Control(seconds=1.5)))

    assert raised.value.code == SourceCode.QUERY_TIMEOUT
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 5  # a backend leaves pg_stat_activity a moment after its client
    while backends(uri) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert backends(uri) == []


def test_a_stopped_task_cancels_its_running_query_and_leaves_no_session(things: Any) -> None:
    uri, types = things
    reader = types["slow"]._reader
    seen: list[list[dict[str, Any]]] = []
    watcher = threading.Timer(1.0, lambda: seen.append(backends(uri)))
    watcher.start()

    started = time.monotonic()
    with pytest.raises(LostOwnership):
        list(reader.batches(_read("SELECT pg_sleep(30)"), Control(stop_after=1.5)))

    watcher.join()
    assert time.monotonic() - started < 10
    assert seen[0] and seen[0][0]["application_name"] == "exports:01TESTTASK"
    assert "export_01testtask" in seen[0][0]["query"] and seen[0][0]["state"] == "active"  # its cursor is fetching
    deadline = time.monotonic() + 5
    while backends(uri) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert backends(uri) == []


def peak_rss_kib(uri: str, rows: int) -> int:
    probe = subprocess.run(
        [sys.executable, "-m", "tests.postgres.rss_probe", uri, str(rows)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
        timeout=300,
    )
    # The last line: the declaration's own warnings are logged (to stdout) before it.
    written, rss = probe.stdout.strip().splitlines()[-1].split()
    assert int(written) == rows
    return int(rss)


def test_ten_times_the_rows_stream_in_the_same_memory(scratch: str) -> None:
    # 100 pages of SOURCE_PAGE_ROWS against 10; `make bench` streams a million rows.
    small = peak_rss_kib(scratch, 50_000)
    large = peak_rss_kib(scratch, 500_000)

    assert large <= small * 1.25, (small, large)


def test_a_declared_column_the_query_lacks_fails_without_retries(things: Any) -> None:
    _, types = things

    with pytest.raises(ExportFailed) as raised:
        rows_of(types["wrong_columns"], {})

    assert raised.value.code == SourceCode.QUERY_FAILED and "returns no column 'label'" in raised.value.message


def test_a_query_cancelled_by_an_operator_says_so(things: Any) -> None:
    uri, types = things
    reader = types["slow"]._reader

    def cancel_it() -> None:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'exports:%'")

    threading.Timer(1.0, cancel_it).start()
    with pytest.raises(ExportFailed) as raised:
        list(reader.batches(_read("SELECT pg_sleep(30)"), Control()))

    assert raised.value.code == "SOURCE_QUERY_CANCELLED"


@pytest.mark.parametrize(
    ("secret", "error"),
    [({"host": "h"}, ExportFailed), (RuntimeError("AccessDenied"), SourceUnavailable)],
)
def test_credentials_that_cannot_be_read_fail_clearly(tmp_path: Path, secret: Any, error: type) -> None:
    from exports.sources.postgres.connections import connection_settings
    from exports.sources.postgres.model import PostgresSource

    def read(arn: str) -> Any:
        if isinstance(secret, Exception):
            raise secret
        return secret

    source = PostgresSource(kind="postgresql", secret_arn="arn:aws:secretsmanager:x")
    reader = PostgresReader("db", connection_settings("db", source, {}, read, lambda auth: "", tmp_path))

    with pytest.raises(error) as raised:
        list(reader.batches(_read("SELECT 1"), Unbounded()))

    if error is ExportFailed:
        assert isinstance(raised.value, ExportFailed)
        assert raised.value.code == "SOURCE_NOT_CONFIGURED" and "username" in raised.value.message


def _backend_pid(uri: str, application_name: str, timeout: float = 10) -> int:
    """The pid of the server process of the session named ``application_name``, once it fetches
    from its cursor (the query runs in the FETCH)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        row = poll_until(
            lambda: conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"
                " AND query LIKE 'FETCH%%'",
                [application_name],
            ).fetchone(),
            timeout_sec=timeout,
            interval_sec=0.05,
            fail=f"no active backend named {application_name}",
        )
    assert row is not None  # poll_until returns only a truthy read
    return int(row[0])


@pytest.mark.parametrize(
    ("control", "raised_type", "bound_sec"),
    [
        (Control(seconds=2), SourceQueryTimeout, 2 + UNANSWERED_GRACE_SEC),
        (Control(stop_after=1), LostOwnership, 1 + UNANSWERED_GRACE_SEC),
    ],
    ids=["at the run's end", "when the task is stopped"],
)
def test_a_stopped_backend_does_not_hold_the_worker(
    things: Any, control: Control, raised_type: type, bound_sec: float
) -> None:
    """Issue 23: a backend stopped with SIGSTOP answers nothing, not even its statement_timeout
    or a cancel (both are signals it cannot take while stopped), and the worker waited for it
    with its upload open. Now it closes the connection itself, bounded in time."""
    import os
    import signal

    uri, types = things
    reader = types["slow"]._reader
    errors: list[BaseException] = []

    def run() -> None:
        try:
            list(reader.batches(_read("SELECT pg_sleep(60) AS x"), control))
        except BaseException as error:
            errors.append(error)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    pid = _backend_pid(uri, f"exports:{control.task_id}")
    os.kill(pid, signal.SIGSTOP)
    try:
        thread.join(bound_sec + CANCEL_CHECK_SEC + CONNECT_TIMEOUT_SEC + 5)
        elapsed = time.monotonic() - started
        assert not thread.is_alive(), "the worker is still waiting for the stopped backend"
    finally:
        os.kill(pid, signal.SIGCONT)
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
    (error,) = errors
    assert isinstance(error, raised_type), error
    assert bound_sec <= elapsed <= bound_sec + CANCEL_CHECK_SEC + CONNECT_TIMEOUT_SEC + 3


def test_dates_psycopg_cannot_load_are_read_as_text_after_the_rows_already_given(scratch: str) -> None:
    # psycopg's C loaders read the pages until the value they refuse (page 5 of 4 rows); the
    # rest come from our loaders, after the rows given, none twice, none lost.
    days = {17: "infinity", 23: "0044-03-15 BC"}
    instants = {20: "-infinity", 26: "10000-01-01 00:00:00+00"}
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE TABLE moments (id integer PRIMARY KEY, day date, at timestamptz)")
        conn.execute(
            "INSERT INTO moments SELECT n, '2025-03-01'::date + n, '2025-03-01 10:00:00.5+02'::timestamptz + n * "
            "interval '1 hour' FROM generate_series(1, 30) AS n"
        )
        for row, day in days.items():
            conn.execute("UPDATE moments SET day = %s WHERE id = %s", [day, row])
        for row, instant in instants.items():
            conn.execute("UPDATE moments SET at = %s WHERE id = %s", [instant, row])
    reader = PostgresReader("db", lambda: {"conninfo": scratch}, page_rows=4)
    read = SqlRead("SELECT id, day, at FROM moments", {}, order_key=("id",))

    rows = [row for batch in reader.batches(read, Control(seconds=60)) for row in batch.rows]

    assert [row[0] for row in rows] == list(range(1, 31))
    assert [row[1] for row in rows if isinstance(row[1], str)] == ["infinity", "0044-03-15 BC"]
    assert [row[2] for row in rows if isinstance(row[2], str)] == ["-infinity", "10000-01-01 00:00:00"]
    assert rows[0][1:] == (date(2025, 3, 2), datetime(2025, 3, 1, 9, 0, 0, 500_000))
    assert rows[29][1:] == (date(2025, 3, 31), datetime(2025, 3, 2, 14, 0, 0, 500_000))
