"""A PostgreSQL session of one export run (psycopg 3): connect, the read-only transaction, the watchdog.

Every statement of a run is on its own connection (:func:`connect`): read-only, named after the
task (``application_name``, so an operator can find, and a DBA kill, the query), UTF-8 whatever
the connection string says, with TCP keepalives. The transaction (:func:`begin`) runs in UTC with
``statement_timeout`` set from the run's time left, then the declared session's role and settings.

While the run waits on the server, a :class:`Watchdog` thread asks the run every
``CANCEL_CHECK_SEC`` whether the task was stopped (cancelled, timed out, taken over) and cancels
the query if so; the connection is closed (:func:`close`) whatever way the run ends.

psycopg is imported on first use: the functions that never query a database (the API, the
lifecycle and callback functions build the same registry) do not pay for it at cold start.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Final, Protocol

from exports.core.errors import ExportFailed, LostOwnership, RetryableError, SourceCode
from exports.core.export_type import RunControl
from exports.sources.errors import SourceUnavailable
from exports.sources.postgres.connections import trust_runtime_roots
from exports.sources.postgres.errors import refused_connection
from exports.sources.postgres.values import SESSION_FORMATS
from exports.sources.sql.ports import ConnectionSettings, SqlSession

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

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


def connect(source: str, settings: ConnectionSettings, control: RunControl) -> psycopg.Connection[Any]:
    """A read-only connection to ``source`` (libpq's keywords from ``settings``, asked now so
    that rotated secrets and fresh IAM tokens are picked up), named after the task, UTF-8,
    with TCP keepalives and psycopg's own loaders (postgres_values.register_loaders adds ours);
    a refusal is ours (postgres_errors.refused_connection)."""
    import psycopg

    options = libpq_keywords(source, settings, control)
    try:
        conn = psycopg.connect(**options)
    except psycopg.Error as error:
        logger.warning("could not connect to a data source", extra={"source": source, "sqlstate": error.sqlstate})
        raise refused_connection(source, error) from None
    conn.read_only = True
    return conn


def libpq_keywords(source: str, settings: ConnectionSettings, control: RunControl) -> dict[str, Any]:
    """The libpq keywords of one connection to ``source``, for psycopg and the ADBC driver
    alike: ``settings``' own, then the connect timeout, TCP keepalives, the task's name and
    UTF-8."""
    from psycopg.conninfo import conninfo_to_dict

    # One set of keywords, a URI's parameters included, so that sslrootcert=system is
    # resolved wherever it was given.
    given = dict(_connection_settings(source, settings))
    keywords = conninfo_to_dict(given.pop("conninfo", ""), **given)
    return {
        "connect_timeout": CONNECT_TIMEOUT_SEC,
        "keepalives": 1,
        "keepalives_idle": KEEPALIVES_IDLE_SEC,
        "keepalives_interval": KEEPALIVES_INTERVAL_SEC,
        "keepalives_count": KEEPALIVES_COUNT,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
        **trust_runtime_roots(source, keywords),
        "application_name": f"exports:{control.task_id}"[:63],
        # Whatever the URI, its options or PGCLIENTENCODING ask for: parameters are encoded
        # and rows decoded in UTF-8, which holds every value. (In Shift JIS, BIG5 or GBK a
        # character's second byte may be 0x5C, a backslash, which psycopg escaped inside
        # the character: a list item became several.) The keyword is sent after `options`,
        # so the server takes it last.
        "client_encoding": CLIENT_ENCODING,
    }


def _connection_settings(source: str, settings: ConnectionSettings) -> dict[str, Any]:
    """The libpq keywords; a secret that cannot be read now is retried, one that lacks a
    key fails the export (no retry makes it whole)."""
    try:
        return settings()
    except (RetryableError, ExportFailed):
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise ExportFailed(
            f"the connection of data source {source!r} is misconfigured (missing or bad {error})",
            code=SourceCode.NOT_CONFIGURED,
        ) from None
    except Exception as error:  # Secrets Manager or STS said no, or did not answer
        logger.warning("could not read a data source's credentials", extra={"source": source}, exc_info=True)
        raise SourceUnavailable(
            f"could not read the credentials of data source {source!r} ({type(error).__name__}); the export is retried"
        ) from None


def time_limit(control: RunControl, at_most_sec: float | None = None) -> float | None:
    """How long the statements of one connection may take: the run's time left, at most
    ``at_most_sec``; None when nothing bounds them. Asked once per connection: the statement
    timeout and the watchdog's bound are the same."""
    limits = [limit for limit in (control.seconds_left(), at_most_sec) if limit is not None]
    return min(limits) if limits else None


def begin(conn: psycopg.Connection[Any], limit_sec: float | None, session: SqlSession | None) -> None:
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


class Watchdog:
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
        """Start watching (a daemon thread)."""
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
        """Raise :class:`LostOwnership` when the query was cancelled because the task was stopped."""
        if self.stopped:
            raise LostOwnership(f"task {self._control.task_id} was stopped; its query was cancelled")

    def stop(self) -> None:
        """Stop watching (the statements ended)."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=CONNECT_TIMEOUT_SEC)


class Fetcher(Protocol):
    """A thread fetching a connection's rows (postgres_pages.Prefetch), stopped before the
    connection closes."""

    def stop(self) -> None: ...

    def join(self) -> None: ...


def close(conn: psycopg.Connection[Any], prefetch: Fetcher | None = None) -> None:
    """Close the connection; a query still running on it is cancelled first, and ``prefetch``,
    the thread fetching its rows, stopped and waited for."""
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
