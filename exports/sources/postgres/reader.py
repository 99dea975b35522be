"""Reading declared queries from PostgreSQL (psycopg 3): :class:`PostgresReader`, the SQL port.

Each call is one read-only transaction on a connection of its own
(:mod:`exports.sources.postgres.session`), its errors ours (:mod:`exports.sources.postgres.errors`):
the rows stream in keyset pages (:mod:`exports.sources.postgres.pages`), or as CSV straight from
``COPY`` (:mod:`exports.sources.postgres.copy`); the count and the fan-out's boundaries are one
short statement each.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from exports.core.export_type import RunControl
from exports.core.zones import UTC_ZONE
from exports.sources.postgres.errors import translated
from exports.sources.postgres.pages import SQL_PAGE_ROWS, read_batches
from exports.sources.postgres.results import described, result_columns
from exports.sources.postgres.session import Watchdog, begin, close, connect, time_limit
from exports.sources.postgres.values import register_loaders
from exports.sources.sql.ports import Batch, ConnectionSettings, ResultColumn, SqlRead

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from exports.sources.postgres.copy import CopyCsv

# The longest the look at a query's result columns may take (types that infer their columns).
DESCRIBE_TIMEOUT_SEC = 30


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
            begin(conn, limit_sec, read.session)
            return result_columns(conn, described(conn, read))

    def batches(self, read: SqlRead, control: RunControl) -> Iterator[Batch]:
        """The rows in pages of ``page_rows`` (postgres_pages.read_batches); closing the iterator
        early (the export stopped) closes the cursor and the connection."""
        yield from read_batches(self.source, self._settings, read, control, self._page_rows)

    def copy_csv(
        self, read: SqlRead, names: Sequence[str] | None, guard: bool, control: RunControl, timezone: str = UTC_ZONE
    ) -> CopyCsv | None:
        """The result columns ``names`` (None: all) of the read as CSV rows from ``COPY`` (postgres_copy),
        ``timestamptz`` in ``timezone``, or None when COPY cannot write them as the CSV writer does."""
        from exports.sources.postgres.copy import open_copy

        return open_copy(
            self.source, connect(self.source, self._settings, control), read, names, guard, control, timezone
        )

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
            begin(conn, limit_sec, read.session)
            # Prepared: the extended protocol runs exactly one statement, whatever the query says.
            return conn.execute(statement, params, prepare=True).fetchall()

    @contextmanager
    def _watched(
        self, control: RunControl, at_most_sec: float | None = None
    ) -> Iterator[tuple[psycopg.Connection[Any], float | None]]:
        """A connection for one short statement and its time limit, its errors ours, watched
        like an export's."""
        conn = connect(self.source, self._settings, control)
        register_loaders(conn)
        limit_sec = time_limit(control, at_most_sec)
        watchdog = Watchdog(conn, control, limit_sec)
        try:
            with translated(self.source, watchdog):
                watchdog.start()
                yield conn, limit_sec
        finally:
            watchdog.stop()
            close(conn)
