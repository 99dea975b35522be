"""An embedded PostgreSQL for local mode and the tests: the server binaries come with the
``pgserver`` wheel (installed by the Makefile with everything else), no Docker, nothing by hand.

Everything about starting PostgreSQL stays in this module, so another way (Debian's
``postgresql`` package, ``pytest-postgresql``) can replace it. The server listens on a Unix
socket in its data directory only (no TCP port to collide with), and stops with the process.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from urllib.parse import quote

logger = logging.getLogger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server over the data directory ``data_dir`` (created on first start)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._server: object | None = None

    def start(self) -> None:
        """Initialise the data directory if needed and start (or join) its server."""
        import pgserver

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._server = pgserver.get_server(self.data_dir, cleanup_mode="stop")

    def uri(self, database: str = "postgres", user: str = "postgres") -> str:
        """A libpq URI of ``database`` on the server's socket as ``user`` (the superuser by
        default, e.g. for ``psql``)."""
        return f"postgresql://{quote(user)}@/{quote(database)}?host={quote(str(self.data_dir))}"

    def create_reader(self, role: str) -> None:
        """A login role that reads every table and writes nothing (``pg_read_all_data``,
        read-only transactions, no superuser): what the exports connect as, so a declared query
        cannot write, and cannot run ``COPY ... TO PROGRAM`` either. Row-level security still
        applies to it."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.uri(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            name = sql.Identifier(role)
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(name))
            conn.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(name))
            conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(name))

    def create_database(self, name: str) -> None:
        """Create ``name`` unless it exists."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.uri(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def stop(self) -> None:
        """Stop the server this process started (another process's handle keeps it running)."""
        if self._server is not None:
            self._server.cleanup()  # type: ignore[attr-defined]
            self._server = None


def psql_command() -> str:
    """How to run ``psql`` here: the one on PATH, or the one that came with the server."""
    found = shutil.which("psql")
    if found:
        return "psql"
    import pgserver

    bundled = Path(pgserver.__file__).parent / "pginstall" / "bin" / "psql"
    return str(bundled)
