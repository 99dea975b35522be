"""A declared query's CSV straight from PostgreSQL: ``COPY (...) TO STDOUT (FORMAT csv)``.

The server formats every value (:mod:`exports.sources.postgres.csv_sql` gives the select list
whose text is our CSV writer's, byte for byte); the worker only turns COPY's ``\\n`` row ends
into ``\\r\\n`` and passes the bytes on, in chunks of whole rows. The header and BOM stay the
writer's (a header is not limited to an identifier's 63 bytes).

The session is the reader's (:mod:`exports.sources.postgres.session`): read-only, UTC, the
statement timeout of the run's time left, ``SET LOCAL ROLE`` and the ``set_config`` values of
row-level security, the watchdog that cancels a stopped task's query. The transaction is
``REPEATABLE READ``: stopping for a checkpoint cancels the COPY back to a savepoint and finds the
order key of the last row sent in the same snapshot (``OFFSET rows - 1``), so the next
invocation continues exactly after it.

COPY takes no bind parameters. The values (filters, the caller's tenancy values, keyset bounds)
are merged by psycopg client-side (``ClientCursor.mogrify``: libpq's ``PQescapeLiteral`` in the
connection's encoding, which is UTF-8 here), and the merged statement is parsed by the server
with the extended protocol before it runs: a text that were more than one statement is refused
there, never executed. The describe and the checkpoint's key look-up still bind server-side.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import RunControl
from exports.core.zones import UTC_ZONE, is_utc, offset_probes
from exports.sources.postgres.csv_sql import copy_supported, csv_select
from exports.sources.postgres.errors import translated
from exports.sources.postgres.pages import keyset_params, keyset_statement, numbers_parenthesized, order_keys
from exports.sources.postgres.results import converter, described, result_columns, type_name
from exports.sources.postgres.session import Watchdog, begin, close, time_limit
from exports.sources.postgres.values import register_loaders
from exports.sources.sql.ports import INSTANT_TYPE, SqlRead

if TYPE_CHECKING:
    import psycopg
    from psycopg.abc import Buffer

logger = logging.getLogger(__name__)

# Rows per chunk handed to the writer (about 100 KiB of typical rows: few, large writes).
ROWS_PER_CHUNK = 1000
_CR, _LF = ord("\r"), ord("\n")


class CopyCsv:
    """The CSV rows of one read from COPY, on a connection of its own. :meth:`chunks` gives
    them; :meth:`stop_after` ends the read where the caller is and gives the order key of the
    last row it got; :meth:`close` frees the connection."""

    def __init__(
        self, source: str, conn: psycopg.Connection[Any], watchdog: Watchdog, read: SqlRead, statement: bytes
    ) -> None:
        self._source = source
        self._conn = conn
        self._watchdog = watchdog
        self._read = read
        self._statement = statement
        self._reading: Generator[bytes, None, None] | None = None
        self.rows = 0

    def chunks(self) -> Iterator[bytes]:
        """Whole rows, ``\\r\\n`` ended; :attr:`rows` counts those given."""
        self._reading = self._copy()
        return self._reading

    def _copy(self) -> Generator[bytes, None, None]:
        with translated(self._source, self._watchdog):
            self._conn.execute("SAVEPOINT exports_copy")
            with self._conn.cursor() as cursor, cursor.copy(self._statement) as copy:
                for rows, chunk in _row_batches(self._conn, copy):
                    self._watchdog.raise_if_stopped()
                    # Counted as given: the caller may stop right after this one.
                    self.rows += rows
                    yield chunk
            self._watchdog.raise_if_stopped()

    def stop_after(self) -> Sequence[Any] | None:
        """End the COPY after the rows given so far; the order key of the last of them (the
        read's own ``after`` when none was given, None when the read has no order key)."""
        if self._reading is not None:
            self._reading.close()  # psycopg cancels the COPY and drains it
        if not self._read.order_key:
            return None
        if self.rows == 0:
            return self._read.after
        from psycopg import sql

        with translated(self._source, self._watchdog):
            self._conn.execute("ROLLBACK TO SAVEPOINT exports_copy")
            statement = sql.SQL("{rows} OFFSET %(exports_offset)s LIMIT 1").format(
                rows=keyset_statement(self._read, order_keys(self._read))
            )
            params = {**self._read.params, **keyset_params(self._read), "exports_offset": self.rows - 1}
            cursor = self._conn.execute(statement, params, prepare=True)
            convert = converter(result_columns(self._conn, cursor.description or []))
            row = cursor.fetchone()
        if row is None:
            raise ExportFailed(
                f"the rows of data source {self._source!r} changed under the export's snapshot",
                code=SourceCode.QUERY_FAILED,
            )
        return tuple(convert([tuple(row)])[0])

    def close(self) -> None:
        """End the read and free its connection."""
        if self._reading is not None:
            self._reading.close()
        self._watchdog.stop()
        close(self._conn)


def _row_batches(conn: psycopg.Connection[Any], copy: psycopg.Copy) -> Iterator[tuple[int, bytes]]:
    """The rows of ``copy`` (a COPY TO running on ``conn``), ``\\r\\n`` ended, as (rows, their
    bytes), :data:`ROWS_PER_CHUNK` rows at a time (the last batch fewer).

    Each ``CopyData`` message is one row. The rows libpq has already buffered are taken with
    ``PGconn.get_copy_data`` directly (``Copy.read()`` runs three generators and a wait per
    row) and copied into one buffer at once: holding each row's buffer object until the chunk
    is joined made the garbage collector run every 700 rows over the worker's whole heap
    (docs/performance.md, "Fourth round: PostgreSQL to CSV").
    When no whole row is buffered, ``Copy.read()`` waits for the socket (and, if the COPY ends
    there, reads its result itself). The end found in the buffer is read here as
    ``Copy.read()`` would: the statement's one result, an error raised as psycopg raises it. A
    batch given up early (the generator closed) leaves the COPY running:
    ``Copy``'s exit cancels and drains it."""
    from psycopg import errors, generators, pq

    pgconn = conn.pgconn
    text = bytearray()
    rows = 0
    block: Buffer
    while True:
        size, block = pgconn.get_copy_data(1)  # 1: 0 at once when no whole row is buffered
        if size == 0:
            block = copy.read()
            if not block:
                break
        elif size < 0:
            results = conn.wait(generators.fetch_many(pgconn))
            if len(results) != 1 or results[0].status != pq.ExecStatus.COMMAND_OK:
                raise errors.error_from_result(results[-1], encoding=conn.info.encoding)
            break
        text += block
        text[-1] = _CR  # the row's "\n" becomes "\r\n"
        text.append(_LF)
        rows += 1
        if rows == ROWS_PER_CHUNK:
            yield rows, bytes(text)
            text.clear()
            rows = 0
    if rows:
        yield rows, bytes(text)


def open_copy(
    source: str,
    conn: psycopg.Connection[Any],
    read: SqlRead,
    names: Sequence[str] | None,
    guard: bool,
    control: RunControl,
    timezone: str = UTC_ZONE,
) -> CopyCsv | None:
    """A :class:`CopyCsv` of the result columns ``names`` (None: all) of ``read``, ``timestamptz`` in
    ``timezone``, on ``conn`` (the caller's fresh
    connection, which it owns from then on), or None (``conn`` closed) when COPY cannot write
    these columns as the CSV writer does: the caller writes them in Python."""
    import psycopg

    limit_sec = time_limit(control)
    watchdog = Watchdog(conn, control, limit_sec)
    try:
        with translated(source, watchdog):
            watchdog.start()
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            register_loaders(conn)  # the checkpoint's key look-up loads values
            begin(conn, limit_sec, read.session)
            # COPY writes the session's DateStyle and client encoding; the file is UTF-8.
            conn.execute(
                "SELECT set_config('DateStyle', 'ISO, MDY', true), set_config('client_encoding', 'UTF8', true)"
            )
            columns = described(conn, read)
            types = {column.name: type_name(conn, column) for column in columns}
            result_names = [column.name for column in columns]
            names = result_names if names is None else names
            if len(types) != len(result_names) or any(name not in types for name in (*names, *read.order_key)):
                # A name twice or missing: the Python path says what is wrong.
                _decline(conn, watchdog)
                return None
            wanted = [types[name] for name in names]
            if not copy_supported(wanted) or not _zone_agrees(conn, timezone, wanted):
                _decline(conn, watchdog)
                return None
            statement = _merged(conn, read, csv_select(names, wanted, guard, timezone))
            _parse_one(conn, statement)
            return CopyCsv(source, conn, watchdog, read, statement)
    except BaseException:
        watchdog.stop()
        close(conn)
        raise


def _zone_agrees(conn: psycopg.Connection[Any], timezone: str, type_names: Sequence[str]) -> bool:
    """Whether the database's tz database gives ``timezone`` the offsets the worker's does
    (exports.core.zones.offset_probes), so that COPY writes its instants as the Python path
    would; True when no instant is written in a zone. A database that lacks the zone, or whose
    history or rules of it differ (another tz database version), leaves the file to Python."""
    import psycopg

    if is_utc(timezone) or INSTANT_TYPE not in type_names:
        return True
    instants, offsets = offset_probes(timezone)
    try:
        with conn.transaction():
            rows = conn.execute(
                "SELECT extract(epoch FROM (p AT TIME ZONE %s) - (p AT TIME ZONE 'UTC'))::int "
                "FROM unnest(%s::timestamptz[]) WITH ORDINALITY AS probes (p, i) ORDER BY i",
                [timezone, list(instants)],
            ).fetchall()
    except psycopg.errors.InvalidParameterValue:  # the database knows no such zone
        rows = []
    if [row[0] for row in rows] == list(offsets):
        return True
    logger.info(
        "the database's rules of a time zone differ from the worker's: written in Python", extra={"timezone": timezone}
    )
    return False


def _decline(conn: psycopg.Connection[Any], watchdog: Watchdog) -> None:
    watchdog.stop()
    close(conn)


def _merged(conn: psycopg.Connection[Any], read: SqlRead, select: Any) -> bytes:
    """The COPY statement with its values merged in as literals (psycopg's client-side
    binding, libpq's quoting in the connection's encoding)."""
    import psycopg
    from psycopg import sql

    # The select list applied to the rows as the query's own plan gives them: OFFSET 0 keeps the
    # planner from folding it into the query, where the cost it guesses for the expressions
    # made it plan parallel workers and a Gather Merge, which cost more CPU than they save
    # (docs/performance.md, "Third round: native speed"). The outer ORDER BY is the inner one's: no sort.
    order = sql.SQL(" ORDER BY {keys}").format(keys=order_keys(read)) if read.order_key else sql.SQL("")
    bound = replace(read, query=numbers_parenthesized(read.query, read.params))
    rows = sql.SQL("SELECT {select} FROM ({rows} OFFSET 0) AS exported{order}").format(
        select=select, rows=keyset_statement(bound), order=order
    )
    statement = sql.SQL("COPY ({rows}) TO STDOUT (FORMAT csv)").format(rows=rows)
    text = psycopg.ClientCursor(conn).mogrify(statement, {**read.params, **keyset_params(read)})
    return text.encode(conn.info.encoding)


def _parse_one(conn: psycopg.Connection[Any], statement: bytes) -> None:
    """Have the server parse ``statement`` with the extended protocol, which takes exactly one
    statement, without running it: a text that is not one statement fails here."""
    from psycopg import pq

    result = conn.pgconn.prepare(b"", statement)
    if result.status != pq.ExecStatus.COMMAND_OK:
        message = (result.error_message or b"").decode(errors="replace").strip()
        raise ExportFailed(f"the COPY statement was refused: {message}", code=SourceCode.QUERY_FAILED)
