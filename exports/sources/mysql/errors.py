"""PyMySQL's errors as ours: what a failed connection or statement means for the export.

Unreachable or overloaded servers are :class:`SourceUnavailable` (retried with backoff), a
refusal that waiting cannot fix (credentials, unknown database, an unverifiable certificate) is
final with its own code, a query that fails is ``SOURCE_QUERY_FAILED`` and one that runs past its
time ``SOURCE_QUERY_TIMEOUT``. Messages carry MySQL's error number and the server's own words,
never the host, the user or a password.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any, Final, Protocol

from exports.core.errors import ExportFailed, ExportsError, LostOwnership, SourceCode, SourceQueryTimeout
from exports.sources.errors import SourceUnavailable

if TYPE_CHECKING:
    import pymysql

# Client-side errors (CR_*) of a connection that failed or was lost: retried.
_CONNECTION_LOST: Final = frozenset({2002, 2003, 2006, 2013, 2055})
# Server errors that mean "not now": too many connections, shutting down, lock wait timeout,
# deadlock, out of memory or threads.
_TRANSIENT: Final = frozenset({1040, 1053, 1205, 1213, 1037, 1041, 1135, 1927})
# Statement time limits: MySQL 8's max_execution_time (3024), MariaDB's max_statement_time (1969).
_TIMED_OUT: Final = frozenset({3024, 1969})
# KILL QUERY (by the watchdog of a stopped task, or by an operator).
_INTERRUPTED: Final = 1317
# Refusals of a connection that waiting cannot fix: (our code, what to tell the operator).
_FINAL_CONNECT: Final = {
    1045: (
        SourceCode.AUTH_FAILED,
        "its credentials were refused (password or IAM token; MySQL error 1045), or it requires TLS and the "
        "connection had none (MariaDB's require_secure_transport answers 1045 too)",
    ),
    1044: (SourceCode.ACCESS_DENIED, "the user may not use the database (MySQL error 1044)"),
    1049: (SourceCode.DATABASE_UNKNOWN, "the database does not exist (MySQL error 1049)"),
    1130: (SourceCode.ACCESS_DENIED, "the host is not allowed to connect (MySQL error 1130)"),
    1226: (
        SourceCode.CONNECTION_LIMIT,
        "the user's max_user_connections is reached (MySQL error 1226): raise it above the source's "
        "max_concurrent_exports, or give the exports a user of their own",
    ),
    3159: (SourceCode.ACCESS_DENIED, "the server requires TLS (require_secure_transport; MySQL error 3159)"),
}


class StopState(Protocol):
    """What the watchdog of a read did: killed the query of a stopped task (``stopped``)."""

    stopped: bool


def _number(error: BaseException) -> int:
    """MySQL's error number (PyMySQL's first argument; 0: none)."""
    args: tuple[Any, ...] = error.args
    return args[0] if args and isinstance(args[0], int) else 0


def _server_words(error: BaseException) -> str:
    """The server's message (PyMySQL's second argument)."""
    args: tuple[Any, ...] = error.args
    return str(args[1]) if len(args) > 1 else type(error).__name__


def refused_connection(source: str, error: pymysql.MySQLError) -> ExportsError:
    """A refused connection as ours: final when waiting cannot fix it, else retried."""
    cause = getattr(error, "original_exception", None)
    if isinstance(cause, ssl.SSLCertVerificationError):
        reason = "the certificate names another host" if "match" in str(cause) else "it does not chain to a trusted CA"
        return ExportFailed(
            f"could not verify the TLS certificate of data source {source!r} ({reason}); not retried. Set the "
            "source's ssl_ca to the CA bundle of the server, shipped with the declaration (for RDS, "
            'certs/rds-global-bundle.pem), or connect through RDS Proxy (ssl_ca = "system")',
            code=SourceCode.TLS_UNVERIFIED,
        )
    number = _number(error)
    if number in _FINAL_CONNECT:
        code, reason = _FINAL_CONNECT[number]
        return ExportFailed(f"data source {source!r} refused the connection: {reason}; not retried", code=code)
    reason = "too many connections" if number == 1040 else "the server cannot be reached or refused"
    return SourceUnavailable(f"could not connect to data source {source!r} ({reason}); the export is retried")


class translated:
    """PyMySQL's errors, during a read, as ours."""

    def __init__(self, source: str, watchdog: StopState | None = None) -> None:
        self._source = source
        self._watchdog = watchdog

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: Any) -> None:
        import pymysql

        if not isinstance(error, pymysql.MySQLError):
            return
        number = _number(error)
        stopped = self._watchdog is not None and self._watchdog.stopped
        if stopped and number in (_INTERRUPTED, *_CONNECTION_LOST):
            raise LostOwnership("the task was stopped; its query was killed") from None
        if number in _TIMED_OUT:
            raise SourceQueryTimeout(
                f"the query of data source {self._source!r} ran out of time (its statement time limit): it must "
                "return its rows before the task's deadline and within one worker run; narrow the filters"
            ) from None
        if number == _INTERRUPTED:
            raise ExportFailed(
                f"the query of data source {self._source!r} was killed on the database (an operator's KILL QUERY); "
                "submit the export again",
                code=SourceCode.QUERY_CANCELLED,
            ) from None
        if number in _CONNECTION_LOST or isinstance(error, pymysql.err.InterfaceError):
            raise SourceUnavailable(
                f"the connection to data source {self._source!r} was lost; the export is retried"
            ) from None
        if number in _TRANSIENT:
            raise SourceUnavailable(
                f"data source {self._source!r} is busy or restarting (MySQL error {number}); the export is retried"
            ) from None
        raise ExportFailed(
            f"the query of data source {self._source!r} failed: {_server_words(error)} "
            f"(MySQL error {number or 'unknown'})",
            code=SourceCode.QUERY_FAILED,
        ) from None
