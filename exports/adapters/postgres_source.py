"""Reading a declared query from PostgreSQL (psycopg 3), streamed in constant memory.

One export run is one read-only transaction on its own connection: the declared query, wrapped
as ``SELECT * FROM (<query>) AS exported [WHERE (order key) > (after)] ORDER BY <order key>``,
runs in a server-side cursor fetched page by page. Filters reach the server only as bound
parameters. The session runs in UTC with ``statement_timeout`` set from the run's time left, and
``application_name`` names the task, so an operator can find (and a DBA can kill) the query.

While the run waits on the server, a watchdog thread asks the run every
``CANCEL_CHECK_SEC`` whether the task was stopped (cancelled, timed out, taken over)
and cancels the query if so; the connection is closed whatever way the run ends.

psycopg is imported on first use: the functions that never query a database (the API, the
lifecycle and callback functions build the same registry) do not pay for it at cold start.

Errors become ours: unreachable or overloaded servers are :class:`SourceUnavailable` (retried
with backoff), a query that fails is ``SOURCE_QUERY_FAILED`` and one that runs past its time
``SOURCE_QUERY_TIMEOUT``; messages carry the SQLSTATE and the server's own words, never the
connection string or credentials.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from exports.adapters.postgres_connections import trust_runtime_roots
from exports.adapters.postgres_values import (
    NATIVE_KINDS,
    SESSION_FORMATS,
    array_element_kind,
    projection,
    read_as,
    real_as_printed,
    register_loaders,
)
from exports.domain.errors import (
    ExportFailed,
    ExportsError,
    LostOwnership,
    RetryableError,
    SourceCode,
    SourceQueryTimeout,
)
from exports.domain.zones import UTC_ZONE
from exports.export_types.base import ColumnKind, RunControl
from exports.ports import Batch, ConnectionSettings, ResultColumn, SqlRead, SqlSession

# Rows per fetch from a PostgreSQL server-side cursor (one page: progress and the time budget are
# looked at once per page).
SQL_PAGE_ROWS: Final = 5000
# The longest a PostgreSQL connection attempt may take before the task is retried.
CONNECT_TIMEOUT_SEC: Final = 5
# While a query runs, the worker looks this often whether its task was cancelled or ran out of
# time, and cancels the query if so.
CANCEL_CHECK_SEC: Final = 2.0
# A server that has not ended the query this long after a cancel, or after its statement_timeout
# should have, does not answer at all (a hung or stopped backend, a network that drops packets):
# the worker closes the connection's socket itself.
UNANSWERED_GRACE_SEC: Final = 5.0
# TCP keepalives on every connection (libpq's keepalives_*, tcp_user_timeout): a peer that
# vanished (a failed-over host, a dropped route) is noticed within about a minute, even while no
# query runs. Unix sockets ignore them.
KEEPALIVES_IDLE_SEC: Final = 30
KEEPALIVES_INTERVAL_SEC: Final = 10
KEEPALIVES_COUNT: Final = 3
TCP_USER_TIMEOUT_MS: Final = 60_000
# Every connection's client encoding, whatever the source's connection string says.
CLIENT_ENCODING: Final = "UTF8"

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from exports.adapters.postgres_copy import CopyCsv

logger = logging.getLogger(__name__)

# The longest the look at a query's result columns may take (types that infer their columns).
DESCRIBE_TIMEOUT_SEC = 30
# Server answers that mean "not now" rather than "never": too many connections, starting up or
# shutting down, out of resources. Connection-level failures (class 08) are transient too.
_TRANSIENT_SQLSTATES = frozenset({"53300", "53400", "57P01", "57P02", "57P03", "53000", "53100", "53200", "58000"})
# libpq's messages when it cannot verify the server (fe-secure-openssl.c), and what they mean.
_CERTIFICATE_FAILURES = (
    ("certificate verify failed", "the certificate does not chain to a trusted CA"),
    ("does not match host name", "the certificate names another host"),
    ("root certificate file", "the CA bundle cannot be read"),
)


class SourceUnavailable(RetryableError):
    """The database cannot be reached or refuses connections for now: the task is retried."""

    code = "SOURCE_UNAVAILABLE"


class PostgresReader:
    """Runs declared queries against one source. ``settings`` gives libpq's connection keywords
    (host, port, dbname, user, password, sslmode, ...) each time a connection is opened, so
    rotated secrets and fresh IAM tokens are picked up."""

    def __init__(self, source: str, settings: ConnectionSettings, page_rows: int = SQL_PAGE_ROWS) -> None:
        self.source = source
        self._settings = settings
        self._page_rows = page_rows

    def describe(self, read: SqlRead, control: RunControl) -> list[ResultColumn]:
        """The result's columns, without reading a row."""

        with self._watched(control, DESCRIBE_TIMEOUT_SEC) as (conn, limit_sec):
            _begin(conn, limit_sec, read.session)
            return _result_columns(conn, _described(conn, read))

    def batches(self, read: SqlRead, control: RunControl) -> Iterator[Batch]:
        """The rows in pages of ``page_rows``, from a server-side cursor; closing the iterator
        early (the export stopped) closes the cursor and the connection."""
        conn = self._connect(control)
        limit_sec = _time_limit(control)
        watchdog = _Watchdog(conn, control, limit_sec)
        prefetch: _Prefetch | None = None
        try:
            with _translated(self.source, watchdog):
                # Watched from the first statement: a server that stops answering is let go of
                # at the run's end, whichever statement it hangs in.
                watchdog.start()
                _begin(conn, limit_sec, read.session)
                # The result's types first: the columns no Python value holds exactly are read as
                # PostgreSQL's text (postgres_values.read_as).
                described = _described(conn, read)
                select = projection([column.name for column in described], [_type_name(conn, c) for c in described])
                cursor = conn.cursor(name=f"export_{control.task_id}".lower()[:60], binary=True)
                cursor.execute(_keyset_statement(read, select), {**read.params, **_after_params(read)})
                columns = _result_columns(conn, described)
                convert = _converter(columns)
                prefetch = _Prefetch(cursor, self._page_rows)
                for rows in prefetch.pages():
                    watchdog.raise_if_stopped()
                    yield Batch(columns, convert(rows))
                watchdog.raise_if_stopped()
        finally:
            watchdog.stop()
            _close(conn, prefetch)

    def copy_csv(
        self, read: SqlRead, names: Sequence[str] | None, guard: bool, control: RunControl, timezone: str = UTC_ZONE
    ) -> CopyCsv | None:
        """The result columns ``names`` (None: all) of the read as CSV rows from ``COPY`` (postgres_copy),
        ``timestamptz`` in ``timezone``, or None when COPY cannot write them as the CSV writer does."""
        from exports.adapters.postgres_copy import open_copy

        return open_copy(self.source, self._connect(control), read, names, guard, control, timezone)

    def count(self, read: SqlRead, control: RunControl) -> int:
        """``count(*)`` of the read."""
        from psycopg import sql

        statement = sql.SQL("SELECT count(*) FROM ({query}) AS exported").format(query=sql.SQL(read.query))
        return int(self._one_shot(statement, read, read.params, control)[0][0])

    def boundaries(self, read: SqlRead, step: int, ranges: int, control: RunControl) -> list[tuple[Sequence[Any], int]]:
        """One pass over the read's keys numbered in key order (an index-only scan when an
        index has the order key), keeping every range's last row."""
        from psycopg import sql

        keys = sql.SQL(", ").join(sql.Identifier(name) for name in read.order_key)
        statement = sql.SQL(
            "SELECT {keys}, exports_row FROM (SELECT {keys}, row_number() OVER (ORDER BY {keys}) AS exports_row, "
            "count(*) OVER () AS exports_rows FROM ({query}) AS exported) AS numbered "
            "WHERE exports_row %% greatest(%(exports_step)s, ceil(exports_rows::numeric / %(exports_ranges)s)::bigint) "
            "= 0 OR exports_row = exports_rows ORDER BY exports_row"
        ).format(keys=keys, query=sql.SQL(read.query))
        params = {**read.params, "exports_step": step, "exports_ranges": ranges}
        rows = self._one_shot(statement, read, params, control)
        return [(tuple(row[:-1]), int(row[-1])) for row in rows]

    def _one_shot(
        self, statement: sql.Composed, read: SqlRead, params: Mapping[str, Any], control: RunControl
    ) -> list[Any]:
        """All rows of a small result (a count, the boundaries), bounded by the run's time."""
        with self._watched(control) as (conn, limit_sec):
            _begin(conn, limit_sec, read.session)
            # Prepared: the extended protocol runs exactly one statement, whatever the query says.
            return conn.execute(statement, params, prepare=True).fetchall()

    @contextmanager
    def _watched(
        self, control: RunControl, at_most_sec: float | None = None
    ) -> Iterator[tuple[psycopg.Connection[Any], float | None]]:
        """A connection for one short statement and its time limit, its errors ours, watched
        like an export's."""
        conn = self._connect(control)
        limit_sec = _time_limit(control, at_most_sec)
        watchdog = _Watchdog(conn, control, limit_sec)
        try:
            with _translated(self.source, watchdog):
                watchdog.start()
                yield conn, limit_sec
        finally:
            watchdog.stop()
            _close(conn)

    def _connect(self, control: RunControl) -> psycopg.Connection[Any]:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        # One set of keywords, a URI's parameters included, so that sslrootcert=system is
        # resolved wherever it was given.
        given = dict(self._connection_settings())
        keywords = conninfo_to_dict(given.pop("conninfo", ""), **given)
        settings = {
            "connect_timeout": CONNECT_TIMEOUT_SEC,
            "keepalives": 1,
            "keepalives_idle": KEEPALIVES_IDLE_SEC,
            "keepalives_interval": KEEPALIVES_INTERVAL_SEC,
            "keepalives_count": KEEPALIVES_COUNT,
            "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
            **trust_runtime_roots(self.source, keywords),
            "application_name": f"exports:{control.task_id}"[:63],
            # Whatever the URI, its options or PGCLIENTENCODING ask for: parameters are encoded
            # and rows decoded in UTF-8, which holds every value. (In Shift JIS, BIG5 or GBK a
            # character's second byte may be 0x5C, a backslash, which psycopg escaped inside
            # the character: a list item became several.) The keyword is sent after `options`,
            # so the server takes it last.
            "client_encoding": CLIENT_ENCODING,
        }
        try:
            conn = psycopg.connect(**settings)
        except psycopg.Error as error:
            logger.warning(
                "could not connect to a data source", extra={"source": self.source, "sqlstate": error.sqlstate}
            )
            if reason := _certificate_failure(error):
                raise ExportFailed(_unverified(self.source, reason), code=SourceCode.TLS_UNVERIFIED) from None
            raise _connect_error(self.source, error) from None
        conn.read_only = True
        register_loaders(conn)
        return conn

    def _connection_settings(self) -> dict[str, Any]:
        """The libpq keywords; a secret that cannot be read now is retried, one that lacks a
        key fails the export (no retry makes it whole)."""
        try:
            return self._settings()
        except (RetryableError, ExportFailed):
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise ExportFailed(
                f"the connection of data source {self.source!r} is misconfigured (missing or bad {error})",
                code=SourceCode.NOT_CONFIGURED,
            ) from None
        except Exception as error:  # Secrets Manager or STS said no, or did not answer
            logger.warning("could not read a data source's credentials", extra={"source": self.source}, exc_info=True)
            raise SourceUnavailable(
                f"could not read the credentials of data source {self.source!r} ({type(error).__name__}); "
                "the export is retried"
            ) from None


def _certificate_failure(error: psycopg.Error) -> str | None:
    """Why libpq could not verify the server's certificate, or None for any other failure.
    libpq reports these client-side, without a SQLSTATE: its own words are all there is."""
    message = str(error)
    for marker, reason in _CERTIFICATE_FAILURES:
        if marker in message:
            return reason
    return None


def _unverified(source: str, reason: str) -> str:
    return (
        f"could not verify the TLS certificate of data source {source!r} ({reason}); not retried. The "
        "server's certificate must chain to a CA the worker trusts and name the host connected to: set the "
        "source's sslrootcert to the CA bundle of the server, shipped with the declaration (for RDS, "
        "certs/rds-global-bundle.pem), or connect through RDS Proxy, whose certificates the runtime's trust "
        'store (sslrootcert = "system") verifies'
    )


def _connect_error(source: str, error: psycopg.Error) -> ExportsError:
    """A refused connection as ours: final with its own code when waiting cannot fix it (a wrong
    password, an unknown role or database, no access, the role's or database's connection
    limit), otherwise :class:`SourceUnavailable` (retried).

    libpq hands over a refused connection without its SQLSTATE (psycopg's ``sqlstate`` is None,
    psycopg issue 1188): the server's FATAL message is all there is, so it is matched, in the
    server's default English. A server that answers in another language is retried as before.
    Neither message names the host or the user: they are the operator's business, and in the
    worker's log; the password is never in libpq's message.
    """
    text = str(error)
    for pattern, code, reason in _FINAL_CONNECT_ERRORS:
        if re.search(pattern, text):
            return ExportFailed(f"data source {source!r} refused the connection: {reason}; not retried", code=code)
    reason = "too many connections" if "too many clients" in text else "the server cannot be reached or refused"
    return SourceUnavailable(f"could not connect to data source {source!r} ({reason}); the export is retried")


# (a pattern of the server's FATAL message, our code, what to tell the operator). Each SQLSTATE is
# the one the server sends (and logs).
_FINAL_CONNECT_ERRORS = (
    (
        "authentication failed for user",
        SourceCode.AUTH_FAILED,
        "its credentials were refused (password, IAM token or certificate; SQLSTATE 28P01)",
    ),
    (r'database "[^"]*" does not exist', SourceCode.DATABASE_UNKNOWN, "the database does not exist (SQLSTATE 3D000)"),
    (r'role "[^"]*" does not exist', SourceCode.AUTH_FAILED, "the role does not exist (SQLSTATE 28000)"),
    ("is not permitted to log in", SourceCode.ACCESS_DENIED, "the role may not log in (SQLSTATE 28000)"),
    ("pg_hba.conf", SourceCode.ACCESS_DENIED, "pg_hba.conf has no entry that admits it (SQLSTATE 28000)"),
    ("permission denied for database", SourceCode.ACCESS_DENIED, "the role lacks CONNECT on it (SQLSTATE 42501)"),
    (
        "too many connections for role",
        SourceCode.CONNECTION_LIMIT,
        "the role's CONNECTION LIMIT is reached (SQLSTATE 53300): raise it above the source's"
        " max_concurrent_exports, or give the exports a role of their own",
    ),
    (
        "too many connections for database",
        SourceCode.CONNECTION_LIMIT,
        "the database's CONNECTION LIMIT is reached (SQLSTATE 53300)",
    ),
)


def _time_limit(control: RunControl, at_most_sec: float | None = None) -> float | None:
    """How long the statements of one connection may take: the run's time left, at most
    ``at_most_sec``; None when nothing bounds them. Asked once per connection: the statement
    timeout and the watchdog's bound are the same."""
    limits = [limit for limit in (control.seconds_left(), at_most_sec) if limit is not None]
    return min(limits) if limits else None


def _begin(conn: psycopg.Connection[Any], limit_sec: float | None, session: SqlSession | None) -> None:
    """Start the read-only transaction: UTC, the statement timeout ``limit_sec``, the output
    formats of the types read as text, then the session's role and settings (every one
    ``LOCAL``: they end with the transaction)."""
    timeout_ms = max(1000, int(limit_sec * 1000)) if limit_sec is not None else 0
    formats = ", ".join(f"set_config('{name}', '{value}', true)" for name, value in SESSION_FORMATS)
    conn.execute(
        f"SELECT set_config('statement_timeout', %s, true), set_config('TimeZone', 'UTC', true), {formats}",
        [str(timeout_ms)],
    )
    if session is not None:
        _set_session(conn, session)


def _set_session(conn: psycopg.Connection[Any], session: SqlSession) -> None:
    """``SET LOCAL ROLE`` and one ``set_config(name, value, true)`` per setting, values bound."""
    from psycopg import sql

    if session.role is not None:
        conn.execute(sql.SQL("SET LOCAL ROLE {role}").format(role=sql.Identifier(session.role)))
    if not session.settings:
        return
    calls, params = [], []
    for name, value in session.settings:
        if isinstance(value, list):
            # PostgreSQL writes the array literal itself: current_setting(...)::text[] reads it back.
            calls.append(sql.SQL("set_config(%s, %s::text[]::text, true)"))
        else:
            calls.append(sql.SQL("set_config(%s, %s, true)"))
        params.extend(
            [name, json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, dict) else value]
        )
    conn.execute(sql.SQL("SELECT {calls}").format(calls=sql.SQL(", ").join(calls)), params)


def _described(conn: psycopg.Connection[Any], read: SqlRead) -> list[Any]:
    """The result's columns (``LIMIT 0``, prepared: one statement, the extended protocol)."""
    from psycopg import sql

    statement = sql.SQL("SELECT * FROM ({query}) AS exported LIMIT 0").format(query=sql.SQL(read.query))
    return list(conn.execute(statement, read.params, prepare=True).description or [])


def _type_name(conn: psycopg.Connection[Any], column: Any) -> str:
    """PostgreSQL's name of the column's type; an array's is its element's with ``[]`` (psycopg
    files an array's oid under its element type)."""
    info = conn.adapters.types.get(column.type_code)
    if info is None:
        return "unknown"
    return f"{info.name}[]" if column.type_code == info.array_oid else info.name


def _keyset_statement(read: SqlRead, select: sql.Composable | None = None) -> sql.Composed:
    """The read's rows in key order after ``read.after`` and up to ``read.until``; ``select``:
    the select list (None: every column as it is)."""
    from psycopg import sql

    statement = sql.SQL("SELECT {select} FROM ({query}) AS exported").format(
        select=select if select is not None else sql.SQL("*"), query=sql.SQL(read.query)
    )
    if not read.order_key:
        return statement
    # Qualified: a key the select list casts to text still compares and sorts as its own type.
    keys = sql.SQL(", ").join(sql.Identifier("exported", name) for name in read.order_key)
    bounds = []
    for name, operator, values in (("after", ">", read.after), ("until", "<=", read.until)):
        if values is not None:
            placeholders = sql.SQL(", ").join(sql.Placeholder(f"{name}_{position}") for position in range(len(values)))
            bounds.append(
                sql.SQL("({keys}) {operator} ({values})").format(
                    keys=keys, operator=sql.SQL(operator), values=placeholders
                )
            )
    if bounds:
        statement = sql.SQL("{statement} WHERE {bounds}").format(
            statement=statement, bounds=sql.SQL(" AND ").join(bounds)
        )
    return sql.SQL("{statement} ORDER BY {keys}").format(statement=statement, keys=keys)


def _after_params(read: SqlRead) -> dict[str, Any]:
    # Saved key values travel as JSON text; bound untyped, the server reads them as the key
    # columns' own types.
    return {
        f"{name}_{position}": value
        for name, values in (("after", read.after), ("until", read.until))
        for position, value in enumerate(values or ())
    }


def _result_columns(conn: psycopg.Connection[Any], description: Sequence[Any]) -> list[ResultColumn]:
    """The columns as the file types them (postgres_values.read_as), with PostgreSQL's type and,
    for an array, its element's kind (postgres_values.array_element_kind)."""
    # Arrays of types psycopg does not know (an enum's, a composite's): the catalog says.
    unknown = [column.type_code for column in description if conn.adapters.types.get(column.type_code) is None]
    unknown_arrays = _array_oids(conn, unknown) if unknown else set()
    columns = []
    for column in description:
        type_name = _type_name(conn, column)
        cast = read_as(type_name)
        kind = NATIVE_KINDS[type_name] if cast is None else cast[1]
        # psycopg reads a numeric's precision and scale from its type modifier (None: unconstrained).
        precision, scale = (column.precision, column.scale) if type_name == "numeric" else (None, None)
        array_of = None
        if type_name.endswith("[]"):
            array_of = array_element_kind(type_name.removesuffix("[]"))
        elif column.type_code in unknown_arrays:  # an enum's or a composite's: its elements' text
            array_of = ColumnKind.STRING
        columns.append(ResultColumn(column.name, kind, type_name, precision, scale, array_of))
    return columns


def _array_oids(conn: psycopg.Connection[Any], oids: Sequence[int]) -> set[int]:
    """Which of the type ``oids`` are array types."""
    rows = conn.execute("SELECT oid::bigint FROM pg_type WHERE oid = ANY(%s) AND typcategory = 'A'", [list(oids)])
    return {int(row[0]) for row in rows.fetchall()}


def _converter(columns: Sequence[ResultColumn]) -> Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    """Rows as files hold them: ``real`` values as the floats PostgreSQL prints, UUIDs as text.
    (Timestamps load as naive UTC and the other types arrive as text: see postgres_values.)"""
    changes: list[tuple[int, Callable[[Any], Any]]] = []
    for position, column in enumerate(columns):
        if column.type_name == "float4":
            changes.append((position, real_as_printed))
        elif column.type_name == "uuid":
            changes.append((position, str))
    if not changes:
        return lambda rows: rows

    def convert(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        converted = []
        for row in rows:
            values = list(row)
            for position, change in changes:
                value = values[position]
                if value is not None:
                    values[position] = change(value)
            converted.append(tuple(values))
        return converted

    return convert


class _Watchdog:
    """Cancels the running query when the run says its task was stopped, and lets go of a
    server that does not answer: once the cancel, or the statement timeout at the run's end,
    should have ended the query and ``UNANSWERED_GRACE_SEC`` more have passed, it shuts the
    connection's socket down, so the blocked read fails at once instead of waiting for a
    backend that may never answer (stopped, hung, or behind a dead route)."""

    def __init__(self, conn: psycopg.Connection[Any], control: RunControl, limit_sec: float | None) -> None:
        self._conn = conn
        self._control = control
        self._done = threading.Event()
        self.stopped = False
        self.severed = False
        grace = UNANSWERED_GRACE_SEC
        self._answer_by = None if limit_sec is None else time.monotonic() + max(1.0, limit_sec) + grace
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{control.task_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(CANCEL_CHECK_SEC):
            if self._answer_by is not None and time.monotonic() >= self._answer_by:
                self._sever()
                return
            try:
                stop = self._control.stop_requested()
            except Exception:  # a failed look must not kill the export; the next one may work
                logger.warning("could not check whether the task was stopped", exc_info=True)
                continue
            if stop:
                self.stopped = True
                self._conn.cancel_safe(timeout=CONNECT_TIMEOUT_SEC)
                if not self._done.wait(UNANSWERED_GRACE_SEC):
                    self._sever()
                return

    def _sever(self) -> None:
        """Shut the socket down under libpq (on a duplicate of its descriptor: libpq still
        owns and closes the original), which wakes the read blocked on it with an error."""
        import psycopg

        self.severed = True
        logger.warning("a data source did not answer in time; closing its connection", extra=self._keys())
        try:
            with socket.socket(fileno=os.dup(self._conn.fileno())) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)
        except (OSError, psycopg.Error):  # it closed meanwhile: nothing left to free
            logger.warning("could not shut the connection down", extra=self._keys(), exc_info=True)

    def _keys(self) -> dict[str, str]:
        return {"task_id": self._control.task_id}

    def raise_if_stopped(self) -> None:
        if self.stopped:
            raise LostOwnership(f"task {self._control.task_id} was stopped; its query was cancelled")

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=CONNECT_TIMEOUT_SEC)


class _translated:
    """psycopg's errors, during a read, as ours."""

    def __init__(self, source: str, watchdog: _Watchdog | None = None) -> None:
        self._source = source
        self._watchdog = watchdog

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: Any) -> None:
        import psycopg

        if not isinstance(error, psycopg.Error):
            return
        if self._watchdog is not None and self._watchdog.severed:
            if self._watchdog.stopped:
                raise LostOwnership("the task was stopped; its data source did not answer the cancel") from None
            raise SourceQueryTimeout(
                f"data source {self._source!r} did not answer before the run's time was up (not even its "
                "statement_timeout): the worker closed the connection"
            ) from None
        if isinstance(error, psycopg.errors.QueryCanceled):
            if self._watchdog is not None and self._watchdog.stopped:
                raise LostOwnership("the task was stopped; its query was cancelled") from None
            if "statement timeout" not in (error.diag.message_primary or ""):
                raise ExportFailed(
                    f"the query of data source {self._source!r} was cancelled by the database (an operator "
                    "or pg_cancel_backend); submit the export again",
                    code=SourceCode.QUERY_CANCELLED,
                ) from None
            raise SourceQueryTimeout(
                f"the query of data source {self._source!r} ran out of time (statement_timeout): it must return "
                "its rows before the task's deadline and within one worker run; narrow the filters",
            ) from None
        sqlstate = error.sqlstate or ""
        if isinstance(error, psycopg.OperationalError) and (not sqlstate or sqlstate.startswith("08")):
            raise SourceUnavailable(
                f"the connection to data source {self._source!r} was lost; the export is retried"
            ) from None
        if sqlstate in _TRANSIENT_SQLSTATES:
            raise SourceUnavailable(
                f"data source {self._source!r} is busy or restarting (SQLSTATE {sqlstate}); the export is retried"
            ) from None
        primary = error.diag.message_primary or type(error).__name__
        raise ExportFailed(
            f"the query of data source {self._source!r} failed: {primary} (SQLSTATE {sqlstate or 'unknown'})",
            code=SourceCode.QUERY_FAILED,
        ) from None


class _Prefetch:
    """Fetches the next page in a thread while the caller writes the last one, so the server
    reads while we write (at most two pages wait: memory stays bounded)."""

    def __init__(self, cursor: Any, page_rows: int) -> None:
        self._cursor = cursor
        self._page_rows = page_rows
        self._pages: queue.Queue[list[tuple[Any, ...]] | BaseException] = queue.Queue(maxsize=2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._fetch, name="prefetch", daemon=True)

    def pages(self) -> Iterator[list[tuple[Any, ...]]]:
        """The pages in order until the result ends; a fetch's error is raised here."""
        self._thread.start()
        while True:
            page = self._pages.get()
            if isinstance(page, BaseException):
                raise page
            if not page:
                return
            yield page

    def stop(self) -> None:
        """Stop fetching (a fetch under way ends when the query is cancelled or closed)."""
        self._stopped.set()

    def join(self) -> None:
        """Wait for the fetching thread to end."""
        if self._thread.is_alive():
            self._thread.join(timeout=CONNECT_TIMEOUT_SEC)

    def _fetch(self) -> None:
        try:
            while not self._stopped.is_set():
                page = self._cursor.fetchmany(self._page_rows)
                self._put(page)
                if not page:
                    return
        except BaseException as error:  # handed to the reading thread, which raises it
            self._put(error)

    def _put(self, item: list[tuple[Any, ...]] | BaseException) -> None:
        while not self._stopped.is_set():
            try:
                self._pages.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


def _close(conn: psycopg.Connection[Any], prefetch: _Prefetch | None = None) -> None:
    """Close the connection; a query still running on it is cancelled first."""
    import psycopg

    if prefetch is not None:
        prefetch.stop()
    try:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
            conn.cancel_safe(timeout=CONNECT_TIMEOUT_SEC)
    except psycopg.Error:
        logger.warning("could not cancel the query before closing", exc_info=True)
    finally:
        if prefetch is not None:
            prefetch.join()
        conn.close()
