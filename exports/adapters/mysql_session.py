"""A MySQL session of one export run (PyMySQL): connect, the read-only transaction, the watchdog.

Every statement of a run is on its own connection (:func:`connect`): utf8mb4 whatever the server's
default, no multi-statements, no ``LOAD DATA LOCAL``, named after the task (PyMySQL's
``program_name`` connection attribute, and a ``/* exports:<task> */`` comment on every statement,
so an operator finds the query in ``SHOW PROCESSLIST`` and a DBA can kill it).

:func:`begin` pins the session (time zone UTC, the statement time limit from the run's time
left: MySQL's ``max_execution_time``, MariaDB's ``max_statement_time``), then starts the one
transaction of the connection: ``START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT`` at
REPEATABLE READ, so every page is read from the same snapshot and any write (a stored function
that writes included) fails with MySQL error 1792. The declared query only ever runs as a
subquery of our ``SELECT``; a ``COMMIT`` cannot appear inside it, and a stored function may not
commit (MySQL refuses to create one that does).

A :class:`Watchdog` thread asks the run every ``CANCEL_CHECK_SEC`` whether the task was stopped
and if so kills the query (``KILL QUERY`` on a connection of its own).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Final

from exports.adapters.mysql_errors import refused_connection
from exports.adapters.mysql_values import decoders
from exports.adapters.postgres_errors import SourceUnavailable
from exports.domain.errors import ExportFailed, RetryableError, SourceCode
from exports.export_types.base import RunControl
from exports.ports import ConnectionSettings

if TYPE_CHECKING:
    import pymysql

logger = logging.getLogger(__name__)

# The longest a connection attempt may take before the task is retried.
CONNECT_TIMEOUT_SEC: Final = 5
# While a query runs, the worker looks this often whether its task was stopped.
CANCEL_CHECK_SEC: Final = 2.0
# A server that has not answered this long after the statement's time limit should have ended
# it does not answer at all: the socket read gives up (PyMySQL's read_timeout).
UNANSWERED_GRACE_SEC: Final = 5.0
# Every connection's character set: it holds every character (utf8mb4; MySQL's utf8 is 3 bytes).
CHARSET: Final = "utf8mb4"
_TASK_NAME: Final = re.compile(r"[^A-Za-z0-9_:.-]")


def connect(source: str, settings: ConnectionSettings, control: RunControl, limit_sec: float | None = None) -> Any:
    """A connection to ``source`` (keywords from ``settings``, asked now so that rotated secrets
    and fresh IAM tokens are picked up), utf8mb4, with our decoders; reads give up
    ``UNANSWERED_GRACE_SEC`` after ``limit_sec``; a refusal is ours (mysql_errors.refused_connection)."""
    import pymysql

    options = _connection_settings(source, settings)
    read_timeout = None if limit_sec is None else max(1.0, limit_sec) + UNANSWERED_GRACE_SEC
    try:
        return pymysql.connect(
            **options,
            charset=CHARSET,
            conv=decoders(),
            autocommit=False,
            connect_timeout=CONNECT_TIMEOUT_SEC,
            read_timeout=read_timeout,
            local_infile=False,
            client_flag=0,
            program_name=task_name(control)[:32],
        )
    except pymysql.MySQLError as error:
        logger.warning("could not connect to a data source", extra={"source": source, "mysql_error": error.args[0]})
        raise refused_connection(source, error) from None
    except RuntimeError as error:
        # PyMySQL's only RuntimeErrors while connecting: the server's authentication method needs
        # a package the worker does not ship (caching_sha2_password's RSA exchange without TLS
        # needs cryptography; MariaDB's ed25519, pynacl).
        logger.warning("could not authenticate to a data source", extra={"source": source}, exc_info=True)
        raise ExportFailed(
            f"data source {source!r} asks for an authentication the worker cannot answer ({error}): connect "
            "over TLS (ssl_mode), where caching_sha2_password sends the password without RSA, or give the "
            "database user another authentication method; not retried",
            code=SourceCode.AUTH_FAILED,
        ) from None


def _connection_settings(source: str, settings: ConnectionSettings) -> dict[str, Any]:
    """The connection keywords; a secret that cannot be read now is retried, one that lacks a
    key fails the export."""
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


def task_name(control: RunControl) -> str:
    """The task's name as the server shows it (in a comment, and the connection's program name)."""
    return "exports:" + _TASK_NAME.sub("_", control.task_id)


def statement(control: RunControl, sql: str) -> str:
    """``sql`` with the task's name in a leading comment (SHOW PROCESSLIST shows it)."""
    return f"/* {task_name(control)} */ {sql}"


def begin(conn: pymysql.Connection[Any], limit_sec: float | None) -> None:
    """Pin the session (UTC, the statement time limit) and start the read-only transaction with
    its consistent snapshot: :func:`session_statements` for the server that answered."""
    with conn.cursor() as cursor:
        for sql, args in session_statements(str(conn.get_server_info()), limit_sec):
            cursor.execute(sql, args or None)


def session_statements(server_version: str, limit_sec: float | None) -> list[tuple[str, list[Any]]]:
    """The statements that open a run's session on a server of ``server_version`` (its
    handshake's version string), with their arguments.

    The time zone is an offset, which needs no time zone tables (MySQL 8 and RDS have them,
    Debian's MariaDB not until ``mysql_tzinfo_to_sql``). The time limit is MariaDB's
    ``max_statement_time`` (seconds, every statement) or MySQL's ``max_execution_time``
    (milliseconds, read-only SELECTs, which are all a run sends; Aurora MySQL the same), at least
    one second: 0 would mean none."""
    statements: list[tuple[str, list[Any]]] = [("SET SESSION time_zone = '+00:00'", [])]
    if limit_sec is not None:
        if is_mariadb(server_version):
            statements.append(("SET SESSION max_statement_time = %s", [max(1.0, limit_sec)]))
        else:
            statements.append(("SET SESSION max_execution_time = %s", [max(1000, int(limit_sec * 1000))]))
    statements.append(("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", []))
    statements.append(("START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT", []))
    return statements


def is_mariadb(server_version: str) -> bool:
    """Whether the server is MariaDB: its version string says so (``10.11.6-MariaDB-0+deb12u1``;
    before 11.0 the handshake prefixes ``5.5.5-`` for old clients). MySQL's never does, nor
    Aurora MySQL's, which reports the MySQL version it is compatible with (``8.0.28``)."""
    return "mariadb" in server_version.lower()


def time_limit(control: RunControl, at_most_sec: float | None = None) -> float | None:
    """How long the statements of one connection may take: the run's time left, at most
    ``at_most_sec``; None when nothing bounds them."""
    limits = [limit for limit in (control.seconds_left(), at_most_sec) if limit is not None]
    return min(limits) if limits else None


class Watchdog:
    """Kills the running query (``KILL QUERY`` from a connection of its own) when the run says
    its task was stopped; the read then fails with MySQL error 1317, which the caller turns into
    LostOwnership because :attr:`stopped` is set."""

    def __init__(self, source: str, settings: ConnectionSettings, conn: Any, control: RunControl) -> None:
        self._source = source
        self._settings = settings
        self._thread_id = conn.thread_id()
        self._control = control
        self._done = threading.Event()
        self.stopped = False
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{control.task_id}", daemon=True)

    def start(self) -> None:
        """Start watching (a daemon thread)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=CONNECT_TIMEOUT_SEC)

    def raise_if_stopped(self) -> None:
        """Between pages: a stopped task ends its read here."""
        from exports.domain.errors import LostOwnership

        if self.stopped or self._control.stop_requested():
            self.stopped = True
            raise LostOwnership("the task was stopped")

    def _watch(self) -> None:
        while not self._done.wait(CANCEL_CHECK_SEC):
            if self._control.stop_requested():
                self.stopped = True
                self._kill()
                return

    def _kill(self) -> None:
        import pymysql

        try:
            killer = pymysql.connect(**self._settings(), connect_timeout=CONNECT_TIMEOUT_SEC, autocommit=True)
            try:
                with killer.cursor() as cursor:
                    cursor.execute("KILL QUERY %s", [self._thread_id])
            finally:
                killer.close()
        except (pymysql.MySQLError, OSError, ExportFailed, RetryableError):
            logger.warning("could not kill the query of a stopped task", exc_info=True)
