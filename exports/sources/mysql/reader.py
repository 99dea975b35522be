"""Reading declared queries from MySQL, Aurora MySQL and MariaDB (PyMySQL): :class:`MySqlReader`,
the SQL port.

Each call is one read-only transaction on a connection of its own (:mod:`exports.sources.mysql.session`),
its errors ours (:mod:`exports.sources.mysql.errors`), its values as the files hold them
(:mod:`exports.sources.mysql.values`). The rows stream from an unbuffered result (PyMySQL's
``SSCursor``: the server sends rows as they are read, the worker holds one page at a time) in
order of the order key, after and up to keyset bounds (never ``OFFSET``); the count and the
fan-out's boundaries are one short statement each. Filters and keyset bounds reach the server
only through PyMySQL's parameter binding (values escaped by the driver, never our string
building; the connection's character set is utf8mb4, in which no multi-byte character hides a
quote).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from exports.core.export_type import RunControl
from exports.core.zones import UTC_ZONE
from exports.sources.mysql.errors import translated
from exports.sources.mysql.session import Watchdog, begin, connect, statement, time_limit
from exports.sources.mysql.values import converter, result_columns
from exports.sources.sql.ports import Batch, ConnectionSettings, ResultColumn, SqlRead

# Rows per fetch from the unbuffered result (one page: progress and the time budget are looked
# at once per page).
MYSQL_PAGE_ROWS: Final = 5000
# The longest the look at a query's result columns may take (types that infer their columns).
DESCRIBE_TIMEOUT_SEC: Final = 30


class MySqlReader:
    """Runs declared queries against one source. ``settings`` gives PyMySQL's connection
    keywords each time a connection is opened, so rotated secrets and fresh IAM tokens are used."""

    def __init__(self, source: str, settings: ConnectionSettings, page_rows: int = MYSQL_PAGE_ROWS) -> None:
        self.source = source
        self._settings = settings
        self._page_rows = page_rows

    def describe(self, read: SqlRead, control: RunControl) -> list[ResultColumn]:
        """The result's columns, without reading a row (``LIMIT 0``)."""
        sql = f"SELECT * FROM ({read.query}) AS exported LIMIT 0"
        with self._transaction(control, DESCRIBE_TIMEOUT_SEC) as (conn, _), conn.cursor() as cursor:
            cursor.execute(statement(control, sql), read.params)
            return result_columns(cursor._result.fields)

    def batches(self, read: SqlRead, control: RunControl) -> Iterator[Batch]:
        """The rows in pages of ``page_rows`` from an unbuffered result; closing the iterator
        early (the export stopped) closes the connection, which ends the query."""
        import pymysql.cursors

        with self._transaction(control) as (conn, watchdog), conn.cursor(pymysql.cursors.SSCursor) as cursor:
            cursor.execute(statement(control, keyset_statement(read)), {**read.params, **keyset_params(read)})
            fields = cursor._result.fields
            columns, convert = result_columns(fields), converter(fields)
            while rows := cursor.fetchmany(self._page_rows):
                watchdog.raise_if_stopped()
                yield Batch(columns, convert(list(rows)))

    def copy_csv(
        self, read: SqlRead, names: Sequence[str] | None, guard: bool, control: RunControl, timezone: str = UTC_ZONE
    ) -> None:
        """None: MySQL has no ``COPY … TO STDOUT``; the CSV writer writes the rows."""
        return None

    def count(self, read: SqlRead, control: RunControl) -> int:
        """``COUNT(*)`` of the read."""
        rows = self._one_shot(f"SELECT COUNT(*) FROM ({read.query}) AS exported", read.params, control)
        return int(rows[0][0])

    def boundaries(self, read: SqlRead, step: int, ranges: int, control: RunControl) -> list[tuple[Sequence[Any], int]]:
        """One pass over the read's keys numbered in key order, keeping every range's last row."""
        keys = ", ".join(quoted(name) for name in read.order_key)
        sql = (
            f"SELECT {keys}, exports_row FROM (SELECT {keys}, ROW_NUMBER() OVER (ORDER BY {keys}) AS exports_row, "
            f"COUNT(*) OVER () AS exports_rows FROM ({read.query}) AS exported) AS numbered "
            "WHERE MOD(exports_row, GREATEST(%(exports_step)s, CEILING(exports_rows / %(exports_ranges)s))) = 0 "
            "OR exports_row = exports_rows ORDER BY exports_row"
        )
        rows = self._one_shot(sql, {**read.params, "exports_step": step, "exports_ranges": ranges}, control)
        return [(tuple(row[:-1]), int(row[-1])) for row in rows]

    def _one_shot(self, sql: str, params: Mapping[str, Any], control: RunControl) -> list[tuple[Any, ...]]:
        """All rows of a small result (a count, the boundaries), bounded by the run's time."""
        with self._transaction(control) as (conn, _), conn.cursor() as cursor:
            cursor.execute(statement(control, sql), params)
            return list(cursor.fetchall())

    @contextmanager
    def _transaction(self, control: RunControl, at_most_sec: float | None = None) -> Iterator[tuple[Any, Watchdog]]:
        """A connection in its read-only transaction and its watchdog, its errors ours; closed
        however the read ends."""
        limit_sec = time_limit(control, at_most_sec)
        conn = connect(self.source, self._settings, control, limit_sec)
        watchdog = Watchdog(self.source, self._settings, conn, control)
        try:
            with translated(self.source, watchdog):
                watchdog.start()
                begin(conn, limit_sec)
                yield conn, watchdog
        finally:
            watchdog.stop()
            _close(conn)


def _close(conn: Any) -> None:
    """Close the connection, an unread result and all: the server ends the query when it finds
    the client gone."""
    import pymysql

    try:
        conn.close()
    except pymysql.MySQLError:
        conn._force_close()


def quoted(name: str) -> str:
    """An identifier in backticks (a backtick in it doubled)."""
    return "`" + name.replace("`", "``") + "`"


def keyset_statement(read: SqlRead) -> str:
    """The read's rows in key order after ``read.after`` and up to ``read.until``."""
    sql = f"SELECT * FROM ({read.query}) AS exported"
    if not read.order_key:
        return sql
    keys = ", ".join(f"exported.{quoted(name)}" for name in read.order_key)
    bounds = [
        f"({keys}) {operator} ({', '.join(f'%({name}_{position})s' for position in range(len(values)))})"
        for name, operator, values in (("after", ">", read.after), ("until", "<=", read.until))
        if values is not None
    ]
    if bounds:
        sql += " WHERE " + " AND ".join(bounds)
    return f"{sql} ORDER BY {keys}"


def keyset_params(read: SqlRead) -> dict[str, Any]:
    """The bound values of :func:`keyset_statement`'s bounds (``after_0``, ``until_0``, ...)."""
    return {
        f"{name}_{position}": value
        for name, values in (("after", read.after), ("until", read.until))
        for position, value in enumerate(values or ())
    }
