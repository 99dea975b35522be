"""A declared query's rows as Arrow record batches, for Parquet and XLSX: the ADBC PostgreSQL driver reads
the result with binary ``COPY`` straight into Arrow arrays, so no value becomes a Python object
(docs/performance.md, "Parquet through Arrow").

The session is the tuple reader's (:mod:`exports.sources.postgres.session`): the same libpq
keywords (``client_encoding`` forced to UTF-8 after any ``options``, keepalives, the connect
timeout, ``application_name``, ``sslrootcert=system`` resolved), one read-only transaction in
UTC with the statement timeout of the run's time left and the types' output formats, then the
declared role and row-level security settings, every one ``LOCAL``. The reader's own
:meth:`~exports.sources.postgres.reader.PostgresReader.describe` types the result, so each
column is read as the tuple path reads it (``postgres_values.read_as``).

The driver's own conversions are used only where they are PostgreSQL's values: integers,
``double precision``, ``real`` (widened here to the double of its printed text), booleans,
text, dates and timestamps (their binary values; infinities and years past 9999 wrap in the
driver, which the writer's range check refuses as the tuple path does). Every other type reaches
Arrow as PostgreSQL's text: ``numeric`` (the driver writes ``inf`` for ``Infinity``), ``money``
as its numeric, ``oid`` as a ``bigint`` (the driver reads it as a signed int32), ``uuid``, json,
arrays and the rest as the tuple reader casts them.

ADBC binds parameters by their Arrow type (a ``str`` as ``text``, where psycopg sends it
untyped), so the values are merged client-side as psycopg's literals, as ``COPY`` does it
(:mod:`exports.sources.postgres.copy`); the driver prepares the statement (the extended
protocol: one statement, whatever the text says) before it copies its rows.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from exports.core.errors import ExportFailed, LostOwnership, SourceCode, SourceQueryTimeout
from exports.core.export_type import Column, ColumnKind, RunControl
from exports.sources.errors import SourceUnavailable
from exports.sources.postgres import driver_socket
from exports.sources.postgres.errors import TRANSIENT_SQLSTATES
from exports.sources.postgres.pages import PLACEHOLDER, numbers_parenthesized
from exports.sources.postgres.reader import PostgresReader
from exports.sources.postgres.session import (
    CANCEL_CHECK_SEC,
    CONNECT_TIMEOUT_SEC,
    UNANSWERED_GRACE_SEC,
    libpq_keywords,
)
from exports.sources.postgres.values import SESSION_FORMATS, read_as
from exports.sources.sql.ports import INSTANT_TYPE, ConnectionSettings, ResultColumn, SqlRead, SqlSession

if TYPE_CHECKING:
    import pyarrow as pa
    from psycopg import sql

logger = logging.getLogger(__name__)

# Types whose binary value the driver turns into the Arrow value the file holds (after a cast
# to int64 or float64): read as they are.
DRIVER_TYPES: Final = frozenset(
    {"int2", "int4", "int8", "float4", "float8", "bool", "date", "timestamp", "timestamptz", "text", "varchar"}
    | {"bpchar", "name"}
)
# Types read through a cast of our own rather than the driver's conversion (see above).
_CASTS: Final = {"oid": "int8", "numeric": "text", "money": "numeric::text", "uuid": "text"}
# The size the driver aims its record batches at (its default: 16 MiB). A batch lives until the
# row groups it feeds are written: 4 MiB keeps the peak RSS of a million rows 20 MiB lower at
# the same CPU (docs/performance.md, "PostgreSQL → Parquet: the client's CPU").
BATCH_BYTES: Final = 4 << 20
# libpq's port when the settings name none.
DEFAULT_PORT: Final = 5432
# The kinds whose values may be ones no Python value holds (given as text beside them on demand).
_DATED: Final = (ColumnKind.DATE, ColumnKind.DATETIME)


class PostgresArrowReader(PostgresReader):
    """A :class:`PostgresReader` that also reads a whole result as Arrow record batches."""

    def __init__(self, source: str, settings: ConnectionSettings) -> None:
        super().__init__(source, settings)
        self._keywords = settings

    def record_batches(
        self, read: SqlRead, columns: Sequence[Column], control: RunControl, date_texts: bool = False
    ) -> Iterator[pa.RecordBatch] | None:
        """The read's rows in order of its key as record batches of ``columns`` (by name, in
        their order: int64, float64, bool, string, date32 and timestamp arrays); None when
        the tuple path must write them: a read that starts or ends at a key (a resumed or
        split read: Parquet does neither), or a column whose declared kind differs from the
        result's (the Parquet writer turns those values one by one).

        ``date_texts`` (a writer that keeps every value the tuple path has, XLSX): each batch
        also has, after ``columns``, a string array per date and date-time column holding
        PostgreSQL's text of the values no Python value holds (infinities, BC, years past
        9999: what the tuple reader gives for them), null elsewhere; and a ``uuid`` or array
        column, which the tuple path holds otherwise than as text, leaves the read to it."""
        if read.after is not None or read.until is not None:
            return None
        described = {column.name: column for column in self.describe(read, control)}
        if any(column.name not in described or not _same_kind(column, described[column.name]) for column in columns):
            return None
        wanted = [described[column.name] for column in columns]
        if date_texts and any(column.type_name == "uuid" or column.array_of is not None for column in wanted):
            return None
        texts = [_date_text(column) for column in wanted if column.kind in _DATED] if date_texts else []
        # DateStyle: the texts are ISO, as the tuple reader writes them (postgres_values.date_text).
        settings = (("DateStyle", "ISO, MDY"),) if texts else ()
        return self._batches(_statement(read, wanted, texts), read.session, control, settings)

    def _batches(
        self,
        statement: str,
        session: SqlSession | None,
        control: RunControl,
        settings: Sequence[tuple[str, str]] = (),
    ) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        arrow = self._connect_arrow(control)
        watch = _Cancel(arrow, control)
        try:
            with _translated(self.source, watch):
                _begin(arrow, control, session, settings)
                watch.start()
                for batch in arrow.rows(statement):
                    watch.raise_if_stopped()
                    arrays = [_as_filed(array) for array in batch.columns]
                    yield pa.record_batch(arrays, names=batch.schema.names)
                watch.raise_if_stopped()
        finally:
            watch.stop()
            arrow.close()

    def _connect_arrow(self, control: RunControl) -> _ArrowConnection:
        import adbc_driver_manager
        from psycopg.conninfo import make_conninfo

        conninfo = make_conninfo(**libpq_keywords(self.source, self._keywords, control))
        try:
            return _ArrowConnection(conninfo, _port(conninfo))
        except adbc_driver_manager.Error as error:
            logger.warning("could not connect to a data source", extra={"source": self.source})
            raise SourceUnavailable(
                f"could not connect to data source {self.source!r} ({_server_words(error)}); the export is retried"
            ) from None


class _ArrowConnection:
    """One connection of the driver through ADBC's own bindings (``adbc_driver_manager``), not
    its DB-API module: that one imports ``pyarrow.dataset`` and, where installed, polars (0.1 s
    and 0.4 s of CPU on a worker's first Parquet export, docs/performance.md). Autocommit, as
    ADBC begins: the read-only transaction is begun by the statement that says so. ``socket``:
    the connection's socket, found from outside the driver (:mod:`.driver_socket`; None when it
    cannot be told apart), for the grace of a server that does not answer."""

    def __init__(self, conninfo: str, port: int) -> None:
        import adbc_driver_manager
        import adbc_driver_postgresql

        before = driver_socket.open_descriptors()
        database = adbc_driver_postgresql.connect(conninfo)
        try:
            connection = adbc_driver_manager.AdbcConnection(database)
        except adbc_driver_manager.Error:
            database.close()
            raise
        self.socket = driver_socket.connection_socket(before, port)
        if self.socket is None:
            logger.warning("the Arrow connection's socket was not found: no grace for a server that does not answer")
        self._statement = adbc_driver_manager.AdbcStatement(connection)
        # Closed in this order: the statement, then what it runs on.
        self._handles = (self._statement, connection, database)

    def run(self, statement: str) -> None:
        """Run ``statement``, its rows (if any) dropped."""
        self._statement.set_sql_query(statement)
        self._statement.execute_update()

    def rows(self, statement: str) -> pa.RecordBatchReader:
        """``statement``'s rows: prepared first (the extended protocol: one statement, whatever
        the text says), then read by the driver's binary ``COPY``; a read error carries the
        server's SQLSTATE (the reader the DB-API module returns)."""
        from adbc_driver_manager._reader import AdbcRecordBatchReader

        self._statement.set_sql_query(statement)
        self._statement.set_options(**{"adbc.postgresql.batch_size_hint_bytes": str(BATCH_BYTES)})
        self._statement.prepare()
        stream, _ = self._statement.execute_query()
        reader: pa.RecordBatchReader = AdbcRecordBatchReader._import_from_c(stream.address)
        return reader

    def cancel(self) -> None:
        """Cancel the running statement (from another thread)."""
        self._statement.cancel()

    def close(self) -> None:
        """Close the statement, the connection and the database (a failure is logged)."""
        import adbc_driver_manager

        driver_socket.release(self.socket)  # first: the driver's close then ends the connection
        for handle in self._handles:
            try:
                handle.close()
            except adbc_driver_manager.Error:
                logger.warning("could not close an Arrow connection", exc_info=True)


def _port(conninfo: str) -> int:
    """The server's port as libpq reads it: the connection string's, else ``PGPORT``, else 5432
    (the first, for a list of hosts)."""
    from psycopg.conninfo import conninfo_to_dict

    given = str(conninfo_to_dict(conninfo).get("port") or os.environ.get("PGPORT") or DEFAULT_PORT)
    first = given.split(",", maxsplit=1)[0]
    return int(first) if first.isdigit() else DEFAULT_PORT


def _same_kind(column: Column, result: ResultColumn) -> bool:
    return column.kind is result.kind and column.array_of is result.array_of


def _statement(read: SqlRead, columns: Sequence[ResultColumn], extra: Sequence[sql.Composable] = ()) -> str:
    """``SELECT <columns>, <extra> FROM (<query>) AS exported ORDER BY <order key>``, values merged."""
    from psycopg import sql

    select = sql.SQL(", ").join([*(_selected(column) for column in columns), *extra])
    # The merged query goes in as a format argument, which is never filled again: a result column
    # named "{query}" stays an identifier (it was once a slot for str.replace).
    query = sql.SQL(merged(read.query, read.params))
    statement = sql.SQL("SELECT {select} FROM ({query}) AS exported").format(select=select, query=query)
    if read.order_key:
        keys = sql.SQL(", ").join(sql.Identifier("exported", name) for name in read.order_key)
        statement = sql.SQL("{statement} ORDER BY {keys}").format(statement=statement, keys=keys)
    return statement.as_string(None)


def merged(query: str, params: Mapping[str, Any]) -> str:
    """``query`` with each psycopg placeholder replaced by its value's literal (psycopg's
    quoting, which a UTF-8 session reads as ``ClientCursor.mogrify`` writes it)."""
    from psycopg import sql

    def literal(match: re.Match[str]) -> str:
        name = match.group(1)
        return "%" if name is None else sql.Literal(params[name]).as_string(None)

    return PLACEHOLDER.sub(literal, numbers_parenthesized(query, params))


def _selected(column: ResultColumn) -> sql.Composable:
    """A result column as this reader reads it: as it is, through one of our casts, or as the
    tuple reader reads it (its text, or its cast: ``postgres_values.read_as``)."""
    from psycopg import sql

    name = sql.Identifier(column.name)
    qualified = sql.Identifier("exported", column.name)
    if column.type_name in DRIVER_TYPES:
        return qualified
    cast = _CASTS.get(column.type_name)
    if cast is None:
        cast = read_as(column.type_name)[0]  # type: ignore[index]  # not a driver type: a cast
        if cast == "text":
            return sql.SQL(
                "CASE WHEN num_nulls({column}) = 1 THEN NULL ELSE format('%s', {column}) END AS {name}"
            ).format(column=qualified, name=name)
    return sql.SQL("{column}::{cast} AS {name}").format(column=qualified, cast=sql.SQL(cast), name=name)


def _date_text(column: ResultColumn) -> sql.Composable:
    """PostgreSQL's text of a date or date-time no Python value holds (the UTC wall time of an
    instant, as the tuple reader reads it), else NULL."""
    from psycopg import sql

    value: sql.Composable = sql.Identifier("exported", column.name)
    if column.type_name == INSTANT_TYPE:
        value = sql.SQL("({value} AT TIME ZONE 'UTC')").format(value=value)
    return sql.SQL(
        "CASE WHEN {value} >= '0001-01-01' AND {value} < '10000-01-01' THEN NULL ELSE {value}::text END"
    ).format(value=value)


def _as_filed(array: pa.Array) -> pa.Array:
    """An array of the driver's as the tuple reader's values are: integers in int64, a
    ``real`` as the double of the text PostgreSQL prints (its shortest form, which Arrow's
    float32 to text writes too), text without the driver's extension types."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_integer(kind):
        return pc.cast(array, pa.int64())
    if pa.types.is_float32(kind):
        return pc.cast(pc.cast(array, pa.string()), pa.float64())
    if isinstance(kind, pa.ExtensionType):
        return array.storage
    return array


def _begin(
    arrow: _ArrowConnection,
    control: RunControl,
    session: SqlSession | None,
    settings: Sequence[tuple[str, str]] = (),
) -> None:
    """The read-only transaction, set up as ``postgres_source`` sets its own: UTC, the statement
    timeout of the run's time left, the output formats (and ``settings``), then the role and the
    session's settings."""
    from psycopg import sql

    left = control.seconds_left()
    timeout_ms = max(1000, int(left * 1000)) if left is not None else 0
    calls = [
        sql.SQL("set_config('statement_timeout', {ms}, true)").format(ms=sql.Literal(str(timeout_ms))),
        sql.SQL("set_config('TimeZone', 'UTC', true)"),
        *(
            sql.SQL("set_config({name}, {value}, true)").format(name=sql.Literal(name), value=sql.Literal(value))
            for name, value in (*SESSION_FORMATS, *settings)
        ),
    ]
    # REPEATABLE READ as the other readers: one snapshot for the whole file.
    arrow.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    if session is not None and session.role is not None:
        arrow.run(sql.SQL("SET LOCAL ROLE {role}").format(role=sql.Identifier(session.role)).as_string(None))
    for name, value in session.settings if session is not None else ():
        if isinstance(value, list):
            # PostgreSQL writes the array literal itself, as postgres_source has it.
            setting = sql.SQL("set_config({name}, {value}::text[]::text, true)")
        else:
            setting = sql.SQL("set_config({name}, {value}, true)")
        text = json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, dict) else value
        calls.append(setting.format(name=sql.Literal(name), value=sql.Literal(text)))
    arrow.run(sql.SQL("SELECT {calls}").format(calls=sql.SQL(", ").join(calls)).as_string(None))


class _Cancel:
    """Cancels the running statement when the run says its task was stopped (asked every
    ``CANCEL_CHECK_SEC``, as the tuple reader's watchdog asks); the statement timeout bounds
    the rest. And, as the tuple reader's watchdog, lets go of a server that does not answer:
    once the cancel, or the statement timeout at the run's end, should have ended the statement
    and ``UNANSWERED_GRACE_SEC`` more have passed, it shuts the connection's socket down (when
    it was found), so the driver's blocked read fails at once."""

    def __init__(self, arrow: _ArrowConnection, control: RunControl) -> None:
        self._arrow = arrow
        self._control = control
        self._done = threading.Event()
        self.stopped = False
        self.severed = False
        self._thread: threading.Thread | None = None
        left = control.seconds_left()
        self._answer_by = None if left is None else time.monotonic() + max(1.0, left) + UNANSWERED_GRACE_SEC

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="arrow-cancel", daemon=True)
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
                self._arrow.cancel()
                if not self._done.wait(UNANSWERED_GRACE_SEC):
                    self._sever()
                return

    def _sever(self) -> None:
        sock = self._arrow.socket
        if sock is None:
            return
        logger.warning(
            "a data source did not answer in time; closing its connection", extra={"task_id": self._control.task_id}
        )
        self.severed = driver_socket.sever(sock)

    def raise_if_stopped(self) -> None:
        if self.stopped:
            raise LostOwnership(f"task {self._control.task_id} was stopped; its query was cancelled")

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=CONNECT_TIMEOUT_SEC)


class _translated:
    """The driver's errors, during a read, as ours (as postgres_source translates psycopg's).
    A statement's error comes as the driver's error with its SQLSTATE; one while the rows
    stream in as pyarrow's (an ``ArrowInvalid`` or ``OSError``) with the server's words only."""

    def __init__(self, source: str, watch: _Cancel) -> None:
        self._source = source
        self._watch = watch

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: Any) -> None:
        import adbc_driver_manager
        import pyarrow as pa

        if not isinstance(error, adbc_driver_manager.Error | pa.ArrowException | OSError):
            return
        if self._watch.severed and not self._watch.stopped:
            raise SourceQueryTimeout(
                f"data source {self._source!r} did not answer before the run's time was up (not even its "
                "statement_timeout): the worker closed the connection"
            ) from None
        if self._watch.stopped:
            raise LostOwnership("the task was stopped; its query was cancelled") from None
        sqlstate = getattr(error, "sqlstate", None) or ""
        words = _server_words(error)
        if "statement timeout" in words:
            raise SourceQueryTimeout(
                f"the query of data source {self._source!r} ran out of time (statement_timeout): it must return "
                "its rows before the task's deadline and within one worker run; narrow the filters",
            ) from None
        if "due to user request" in words:
            raise ExportFailed(
                f"the query of data source {self._source!r} was cancelled by the database (an operator "
                "or pg_cancel_backend); submit the export again",
                code=SourceCode.QUERY_CANCELLED,
            ) from None
        server_said = words != type(error).__name__
        if sqlstate.startswith("08") or sqlstate in TRANSIENT_SQLSTATES or not server_said:
            raise SourceUnavailable(
                f"data source {self._source!r} could not be read now ({words}); the export is retried"
            ) from None
        raise ExportFailed(
            f"the query of data source {self._source!r} failed: {words} (SQLSTATE {sqlstate or 'unknown'})",
            code=SourceCode.QUERY_FAILED,
        ) from None


def _server_words(error: Exception) -> str:
    """The server's message in a driver error (``ERROR:  ...``), without the statement the
    driver quotes (it holds the merged values) or the connection string."""
    text = str(error)
    found = re.search(r"(?:ERROR|FATAL):\s+(.*?)\s*(?:\n|\. SQLSTATE|$)", text)
    return found.group(1) if found else type(error).__name__
