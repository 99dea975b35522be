"""An embedded MariaDB for local mode (``EXPORTS_DEMO_MYSQL=1``) and the tests: Debian's
``mariadb-server`` (installed here when missing, as root), over a data directory of its own, on
127.0.0.1 and a Unix socket in that directory, stopped with the process. Never the machine's
own service: nothing here reads /etc/mysql (``--no-defaults``).

The server's own time zone is deliberately not UTC (``SERVER_TIME_ZONE``): a reader that forgot
to pin its session to UTC would read TIMESTAMP columns shifted, and the tests would see it.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Final
from urllib.parse import quote

logger = logging.getLogger(__name__)

# The server's global time zone: anything but UTC (see the module's docstring).
SERVER_TIME_ZONE: Final = "+05:30"
# How long the server may take to accept connections after it starts.
START_TIMEOUT_SEC: Final = 60
# How often, and how long apart, the installation is tried while another apt holds the lock.
INSTALL_ATTEMPTS: Final = 30
INSTALL_RETRY_SEC: Final = 10
# The read-only account the exports connect as (SELECT only: a declared query cannot write even
# if it got out of the read-only transaction).
READER_USER: Final = "exports_reader"
READER_PASSWORD: Final = "exports-reader"


def ensure_installed() -> None:
    """Install Debian's ``mariadb-server`` when ``mariadbd`` is missing (as root; apt-get update
    first, retried while another apt holds the lock)."""
    if _program("mariadbd") is not None:
        return
    if os.geteuid() != 0:
        raise RuntimeError("MariaDB is not installed: run `apt-get install mariadb-server` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for attempt in range(INSTALL_ATTEMPTS):
        update = subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, check=False)
        install = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "mariadb-server", "mariadb-client"],
            capture_output=True,
            env=env,
            check=False,
        )
        if update.returncode == 0 and install.returncode == 0 and _program("mariadbd") is not None:
            return
        logger.warning("apt-get could not install mariadb-server (attempt %d), retrying", attempt + 1)
        time.sleep(INSTALL_RETRY_SEC)
    raise RuntimeError("could not install mariadb-server with apt-get")


def _program(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EmbeddedMariaDB:
    """A MariaDB server over ``folder`` (its data directory, socket and log), on ``port``.

    ``tls``: (certificate, key) files; the server then also speaks TLS (and, with
    ``require_tls``, refuses TCP connections without it)."""

    def __init__(
        self, folder: Path, port: int | None = None, tls: tuple[Path, Path] | None = None, require_tls: bool = False
    ) -> None:
        self.folder = folder
        self.data_dir = folder / "data"
        self.socket = folder / "mysqld.sock"
        self.port = port or free_port()
        self._tls = tls
        self._require_tls = require_tls
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Install MariaDB if needed, initialise the data directory on first start, start the
        server and wait until it answers; a reader account is created."""
        ensure_installed()
        self.folder.mkdir(parents=True, exist_ok=True)
        user = ["--user=root"] if os.geteuid() == 0 else []
        if not (self.data_dir / "mysql").exists():
            result = subprocess.run(
                [
                    _program("mariadb-install-db") or "mariadb-install-db",
                    "--no-defaults",
                    f"--datadir={self.data_dir}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    *user,
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            if result.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed: {result.stdout}{result.stderr}")
        tls = []
        if self._tls is not None:
            cert, key = self._tls
            tls = [f"--ssl-cert={cert}", f"--ssl-key={key}"]
            if self._require_tls:
                tls.append("--require-secure-transport=ON")
        self._process = subprocess.Popen(
            [
                _program("mariadbd") or "mariadbd",
                "--no-defaults",
                f"--datadir={self.data_dir}",
                f"--socket={self.socket}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--pid-file={self.folder / 'mysqld.pid'}",
                f"--log-error={self.folder / 'error.log'}",
                f"--default-time-zone={SERVER_TIME_ZONE}",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                *tls,
                *user,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_ready()
        self.admin(
            f"CREATE USER IF NOT EXISTS '{READER_USER}'@'%' IDENTIFIED BY '{READER_PASSWORD}'",
            f"CREATE USER IF NOT EXISTS '{READER_USER}'@'localhost' IDENTIFIED BY '{READER_PASSWORD}'",
            f"GRANT SELECT, EXECUTE, SHOW VIEW ON *.* TO '{READER_USER}'@'%'",
            f"GRANT SELECT, EXECUTE, SHOW VIEW ON *.* TO '{READER_USER}'@'localhost'",
        )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"mariadbd exited: {self.error_log()}")
            try:
                self.admin("SELECT 1")
                return
            except RuntimeError:
                time.sleep(0.2)
        raise RuntimeError(f"MariaDB did not start within {START_TIMEOUT_SEC} s: {self.error_log()}")

    @property
    def pid(self) -> int:
        """The server's process id (the bench reads its CPU time)."""
        if self._process is None:
            raise RuntimeError("MariaDB is not running")
        return self._process.pid

    def error_log(self) -> str:
        """The server's error log, for a failure's message."""
        log = self.folder / "error.log"
        return log.read_text(errors="replace")[-4000:] if log.exists() else ""

    def admin(self, *statements: str, database: str | None = None) -> str:
        """Run ``statements`` as root over the socket with the ``mariadb`` client; its output."""
        command = [
            _program("mariadb") or "mariadb",
            "--no-defaults",
            "--default-character-set=utf8mb4",
            f"--socket={self.socket}",
            "-uroot",
            "--batch",
        ]
        if database is not None:
            command.append(f"--database={database}")
        result = subprocess.run(
            command, input=";\n".join(statements) + ";\n", capture_output=True, text=True, check=False, timeout=120
        )
        if result.returncode != 0:
            raise RuntimeError(f"mariadb failed: {result.stderr}")
        return result.stdout

    def create_database(self, name: str) -> None:
        """Create ``name`` (utf8mb4) unless it exists."""
        self.admin(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")

    def root_url(self, database: str) -> str:
        """A ``mysql://`` URL of ``database`` as root over the socket (for loading data)."""
        return f"mysql://root@localhost/{quote(database)}?unix_socket={quote(str(self.socket))}"

    def url(self, database: str, user: str = READER_USER, password: str = READER_PASSWORD) -> str:
        """A ``mysql://`` URL of ``database`` over TCP as ``user`` (the reader by default)."""
        return f"mysql://{quote(user)}:{quote(password)}@127.0.0.1:{self.port}/{quote(database)}"

    def stop(self) -> None:
        """Stop the server this object started (a normal shutdown, then a kill)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
