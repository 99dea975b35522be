"""An embedded PostgreSQL for local mode and the tests: the server binaries come with the
``pgserver`` wheel (installed by the Makefile with everything else), no Docker, nothing by hand.

Everything about starting PostgreSQL stays in this module, so another way (Debian's
``postgresql`` package, ``pytest-postgresql``) can replace it. The server listens on a Unix
socket in its data directory only (no TCP port to collide with), and stops with the process.
:class:`TlsPostgres` is the other kind, for tests of TLS: TCP on 127.0.0.1, TLS required, on the
distribution's PostgreSQL.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

logger = logging.getLogger(__name__)
# How long a server left running by a killed process gets to shut down (fast shutdown: seconds).
ABANDONED_STOP_SEC = 15


class EmbeddedPostgres:
    """A PostgreSQL server over the data directory ``data_dir`` (created on first start)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._server: object | None = None

    def start(self) -> None:
        """Initialise the data directory if needed and start (or join) its server; a server left
        running by a process that was killed is stopped first."""
        import pgserver

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._stop_abandoned()
        self._server = pgserver.get_server(self.data_dir, cleanup_mode="stop")

    def _stop_abandoned(self) -> None:
        """pgserver keeps the pids of the processes using a server in ``.handle_pids.json`` and
        stops it when the last one lets go; a process killed with ``kill -9`` never lets go, so
        its server would run for ever (and be joined, never stopped, by the next one). A server
        none of whose users is alive is stopped here (fast shutdown) before anything starts."""
        handles, pid_file = self.data_dir / ".handle_pids.json", self.data_dir / "postmaster.pid"
        users = json.loads(handles.read_text() or "[]") if handles.exists() else []
        if any(_alive(pid) for pid in users):
            return  # another local stack (or test process) uses it: join it
        handles.unlink(missing_ok=True)
        if not pid_file.exists():
            return
        postmaster = int(pid_file.read_text().split()[0])
        if not _alive(postmaster):
            return  # a stale pid file: PostgreSQL starts over it
        logger.warning("stopping the PostgreSQL a killed local stack left running (pid %d)", postmaster)
        os.kill(postmaster, signal.SIGINT)
        deadline = time.monotonic() + ABANDONED_STOP_SEC
        while _alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.1)

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


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (not Linux): it exists


def psql_command() -> str:
    """How to run ``psql`` here: the one on PATH, or the one that came with the server."""
    found = shutil.which("psql")
    if found:
        return "psql"
    import pgserver

    bundled = Path(pgserver.__file__).parent / "pginstall" / "bin" / "psql"
    return str(bundled)


class TlsPostgres:
    """A PostgreSQL server that accepts only TLS connections over TCP on 127.0.0.1 (what a
    deployed worker meets: RDS with ``rds.force_ssl``), with password authentication.

    ``cert_file`` and ``key_file`` are the server's certificate and key. pgserver's build has no
    TLS ("SSL is not supported by this build"), so this one runs the distribution's PostgreSQL
    (Debian's ``postgresql`` package, :func:`system_bin_dir`), as its ``postgres`` user when
    started by root (PostgreSQL refuses to run as root).
    """

    USER = "postgres"

    def __init__(self, cert_file: Path, key_file: Path, port: int, password: str) -> None:
        # A folder of its own in the temporary directory, which the postgres user can reach
        # (a test's tmp_path is private to root); removed when the server stops.
        self._folder = Path(tempfile.mkdtemp(prefix="exports-tls-pg-"))
        self._folder.chmod(0o755)
        self.data_dir = self._folder / "data"
        self.port = port
        self.password = password
        self._cert_file = cert_file
        self._key_file = key_file
        self._bin = system_bin_dir()
        self._system_user = "postgres" if os.geteuid() == 0 else None

    def _run(self, program: str, *arguments: str) -> None:
        command = [str(self._bin / program), "-D", str(self.data_dir), *arguments]
        result = subprocess.run(
            command, capture_output=True, text=True, user=self._system_user, check=False, timeout=120
        )
        if result.returncode != 0:
            log = self.data_dir / "log"
            raise RuntimeError(
                f"{program} failed: {result.stdout}{result.stderr}{log.read_text() if log.exists() else ''}"
            )

    def start(self) -> None:
        """Initialise the data directory, install the certificate and start the server."""
        self.data_dir.mkdir(parents=True)
        password_file = self.data_dir.parent / f"{self.data_dir.name}-password"
        password_file.write_text(self.password)
        if self._system_user is not None:
            for path in (self.data_dir, password_file):
                shutil.chown(path, self._system_user, self._system_user)
        self._run(
            "initdb", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}", "-U", self.USER
        )
        password_file.unlink()
        for source, name in ((self._cert_file, "server.crt"), (self._key_file, "server.key")):
            target = self.data_dir / name
            shutil.copyfile(source, target)
            target.chmod(0o600)  # PostgreSQL refuses a key others can read
            if self._system_user is not None:
                shutil.chown(target, self._system_user, self._system_user)
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(
                "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = '{self.data_dir}'\n"
            )
        # TCP only with TLS (no `host` line: a plain connection is refused); the socket for set-up.
        (self.data_dir / "pg_hba.conf").write_text("local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")
        self._run("pg_ctl", "-w", "-l", str(self.data_dir / "log"), "start")

    def socket_uri(self, database: str = "postgres") -> str:
        """A libpq URI of ``database`` over the Unix socket (no TLS, no password: for set-up)."""
        return f"postgresql://{self.USER}@/{quote(database)}?host={quote(str(self.data_dir))}&port={self.port}"

    def create_database(self, name: str) -> None:
        """Create ``name``."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.socket_uri(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def stop(self) -> None:
        """Stop the server (fast shutdown: clients are disconnected)."""
        self._run("pg_ctl", "-w", "-m", "fast", "stop")
        shutil.rmtree(self._folder, ignore_errors=True)


def system_bin_dir() -> Path:
    """The programs of the newest PostgreSQL the distribution installed (built with OpenSSL)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda path: int(path.parts[-3]))
    if not found:
        raise RuntimeError("no PostgreSQL under /usr/lib/postgresql: install the distribution's `postgresql` package")
    return found[-1].parent
