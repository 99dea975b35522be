"""A declared query's rows in pages: the keyset statement and the streaming reader.

The declared query, wrapped as ``SELECT <select> FROM (<query>) AS exported [WHERE (order key) >
(after) AND (order key) <= (until)] ORDER BY <order key>`` (:func:`keyset_statement`), runs in a
server-side cursor fetched page by page (:func:`read_batches`), the next page fetched while the
caller writes the last (:class:`Prefetch`). Filters and keyset bounds reach the server only as
bound parameters.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from exports.core.export_type import RunControl
from exports.sources.postgres.errors import translated
from exports.sources.postgres.results import converter, described, result_columns, type_name
from exports.sources.postgres.session import CONNECT_TIMEOUT_SEC, Watchdog, begin, close, connect, time_limit
from exports.sources.postgres.values import projection, register_loaders
from exports.sources.sql.ports import Batch, ConnectionSettings, SqlRead

if TYPE_CHECKING:
    from psycopg import sql

# Rows per fetch from a PostgreSQL server-side cursor (one page: progress and the time budget are
# looked at once per page).
SQL_PAGE_ROWS: Final = 5000


def read_batches(
    source: str, settings: ConnectionSettings, read: SqlRead, control: RunControl, page_rows: int = SQL_PAGE_ROWS
) -> Iterator[Batch]:
    """The rows of ``read`` in pages of ``page_rows``, from a server-side cursor on a connection
    of their own; closing the iterator early (the export stopped) closes the cursor and the
    connection.

    Dates and timestamps load with psycopg's C loaders, until a value they refuse (infinity, BC,
    after 9999: our loaders give its text, postgres_values.register_loaders): the rest of the
    rows are then read with ours, after the rows already given (``OFFSET``, in the same
    snapshot: the transaction is ``REPEATABLE READ``). A read without an order key, whose order
    a second statement might not repeat, uses ours from the start."""
    import psycopg
    from psycopg import sql

    conn = connect(source, settings, control)
    limit_sec = time_limit(control)
    watchdog = Watchdog(conn, control, limit_sec)
    prefetch: Prefetch | None = None
    try:
        with translated(source, watchdog):
            # Watched from the first statement: a server that stops answering is let go of
            # at the run's end, whichever statement it hangs in.
            watchdog.start()
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            begin(conn, limit_sec, read.session)
            # The result's types first: the columns no Python value holds exactly are read as
            # PostgreSQL's text (postgres_values.read_as).
            columns_read = described(conn, read)
            select = projection([column.name for column in columns_read], [type_name(conn, c) for c in columns_read])
            columns = result_columns(conn, columns_read)
            convert = converter(columns)
            native = bool(read.order_key)
            if not native:
                register_loaders(conn)
            given = 0
            while True:
                cursor = conn.cursor(name=f"export_{control.task_id}".lower()[:60], binary=True)
                statement = keyset_statement(read, select)
                if given:
                    statement = sql.SQL("{rows} OFFSET {given}").format(rows=statement, given=sql.Literal(given))
                cursor.execute(statement, {**read.params, **keyset_params(read)})
                prefetch = Prefetch(cursor, page_rows)
                try:
                    for rows in prefetch.pages():
                        watchdog.raise_if_stopped()
                        given += len(rows)
                        yield Batch(columns, convert(rows))
                except psycopg.DataError as error:
                    # psycopg's own loaders refuse a value client-side (no SQLSTATE: the server
                    # did not fail): ours read the rest.
                    if error.sqlstate is not None or not native:
                        raise
                    native = False
                    prefetch.join()
                    cursor.close()
                    register_loaders(conn)
                    continue
                break
            watchdog.raise_if_stopped()
    finally:
        watchdog.stop()
        close(conn, prefetch)


# A psycopg placeholder, or a literal % written twice.
PLACEHOLDER: Final = re.compile(r"%%|%\((\w+)\)[sbt]")


def numbers_parenthesized(query: str, params: Mapping[str, Any]) -> str:
    """``query`` with each placeholder of a number in parentheses, for client-side binding:
    psycopg writes ``-5`` as `` -5``, and a cast binds tighter than a minus, so ``%(i)s::text``
    would read ``-(5::text)`` (server-side binding sends the value typed and needs none)."""

    def wrapped(match: re.Match[str]) -> str:
        name = match.group(1)
        number = name is not None and isinstance(params.get(name), int | float | Decimal)
        return f"({match.group(0)})" if number else match.group(0)

    return PLACEHOLDER.sub(wrapped, query)


def keyset_statement(read: SqlRead, select: sql.Composable | None = None) -> sql.Composed:
    """The read's rows in key order after ``read.after`` and up to ``read.until``; ``select``:
    the select list (None: every column as it is)."""
    from psycopg import sql

    statement = sql.SQL("SELECT {select} FROM ({query}) AS exported").format(
        select=select if select is not None else sql.SQL("*"), query=sql.SQL(read.query)
    )
    if not read.order_key:
        return statement
    keys = order_keys(read)
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


def keyset_params(read: SqlRead) -> dict[str, Any]:
    """The bound values of :func:`keyset_statement`'s bounds (``after_0``, ``until_0``, ...)."""
    # Saved key values travel as JSON text; bound untyped, the server reads them as the key
    # columns' own types.
    return {
        f"{name}_{position}": value
        for name, values in (("after", read.after), ("until", read.until))
        for position, value in enumerate(values or ())
    }


class Prefetch:
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


def order_keys(read: SqlRead) -> sql.Composable:
    """The read's order key as a list of the columns of ``exported``: qualified, so that a key
    the select list casts to text still compares and sorts as its own type."""
    from psycopg import sql

    return sql.SQL(", ").join(sql.Identifier("exported", name) for name in read.order_key)
