"""psycopg's errors as ours: what a failed connection or statement means for the export.

Unreachable or overloaded servers are :class:`SourceUnavailable` (retried with backoff), a query
that fails is ``SOURCE_QUERY_FAILED`` and one that runs past its time ``SOURCE_QUERY_TIMEOUT``;
messages carry the SQLSTATE and the server's own words, never the connection string or
credentials."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from exports.core.errors import (
    ExportFailed,
    ExportsError,
    LostOwnership,
    SourceCode,
    SourceQueryTimeout,
)
from exports.sources.errors import SourceUnavailable

if TYPE_CHECKING:
    import psycopg


# Server answers that mean "not now" rather than "never": too many connections, starting up or
# shutting down, out of resources. Connection-level failures (class 08) are transient too.
TRANSIENT_SQLSTATES = frozenset({"53300", "53400", "57P01", "57P02", "57P03", "53000", "53100", "53200", "58000"})

# libpq's messages when it cannot verify the server (fe-secure-openssl.c), and what they mean.
_CERTIFICATE_FAILURES = (
    ("certificate verify failed", "the certificate does not chain to a trusted CA"),
    ("does not match host name", "the certificate names another host"),
    ("root certificate file", "the CA bundle cannot be read"),
)


class StopState(Protocol):
    """What the watchdog of a connection (postgres_session.Watchdog) did: cancelled the query of
    a stopped task (``stopped``), shut down the socket of a server that did not answer (``severed``)."""

    stopped: bool
    severed: bool


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


def refused_connection(source: str, error: psycopg.Error) -> ExportsError:
    """A refused connection as ours: final with its own code when waiting cannot fix it (a
    certificate the worker cannot verify, a wrong password, an unknown role or database, no
    access, the role's or database's connection limit), otherwise :class:`SourceUnavailable`
    (retried).

    libpq hands over a refused connection without its SQLSTATE (psycopg's ``sqlstate`` is None,
    psycopg issue 1188): the server's FATAL message is all there is, so it is matched, in the
    server's default English. A server that answers in another language is retried as before.
    Neither message names the host or the user: they are the operator's business, and in the
    worker's log; the password is never in libpq's message.
    """
    if unverifiable := _certificate_failure(error):
        return ExportFailed(_unverified(source, unverifiable), code=SourceCode.TLS_UNVERIFIED)
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


class translated:
    """psycopg's errors, during a read, as ours."""

    def __init__(self, source: str, watchdog: StopState | None = None) -> None:
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
        if sqlstate in TRANSIENT_SQLSTATES:
            raise SourceUnavailable(
                f"data source {self._source!r} is busy or restarting (SQLSTATE {sqlstate}); the export is retried"
            ) from None
        primary = error.diag.message_primary or type(error).__name__
        raise ExportFailed(
            f"the query of data source {self._source!r} failed: {primary} (SQLSTATE {sqlstate or 'unknown'})",
            code=SourceCode.QUERY_FAILED,
        ) from None
