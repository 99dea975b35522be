"""The MySQL cases of ``make bench``: the declared ``mysql_orders_all_tenants`` type of
examples/mysql/exports.toml over an embedded MariaDB, next to its natural peer, the ``mysql``
client's batch output of the same statement.

``python -m bench`` starts one embedded MariaDB (``local_stack.embedded_mariadb``, a temporary
folder) and loads one database per row count with the demo orders
(``local_stack.demo_mysql.load_demo_mysql``, the days up to :data:`bench.postgres.DEMO_TODAY`).
Each case process gets that database's URL in the declared source's variable (:data:`URL_ENV`)
and the server's socket (:data:`SOCKET_ENV`, for the client).

- ``my_client``: ``mariadb --batch --quick`` (rows streamed, never cached), the statement the
  reader runs without its keyset pages, with the filters as literals, the output to a file:
  what a team exporting by hand runs. Its CPU is the client process's (a child).
- ``my_csv``: the worker's CSV pipeline on the declared type (PyMySQL, unbuffered result).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from bench.postgres import DEMO_TODAY, export_filters

CASES: Final = ("my_client", "my_csv")
EXPORT_TYPE: Final = "mysql_orders_all_tenants"
URL_ENV: Final = "EXPORTS_SHOP_MYSQL_URL"
SOCKET_ENV: Final = "EXPORTS_BENCH_MYSQL_SOCKET"
DECLARATION: Final = Path(__file__).resolve().parents[1] / "examples" / "mysql" / "exports.toml"


class BenchMariaDB:
    """One embedded MariaDB in a temporary folder, one database of demo orders per row count
    (loaded on first use); leaving the context stops the server and removes its data."""

    cases = CASES

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._server: Any = None
        self._urls: dict[int, str] = {}

    def __enter__(self) -> BenchMariaDB:
        from local_stack.embedded_mariadb import EmbeddedMariaDB

        self._folder = tempfile.TemporaryDirectory(prefix="exports-bench-mariadb-")
        self._server = EmbeddedMariaDB(Path(self._folder.name))
        started = time.perf_counter()
        self._server.start()
        print(f"  mariadb     started in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.stop()
        if self._folder is not None:
            self._folder.cleanup()

    def server_cpu_seconds(self) -> float:
        """CPU seconds of the server process so far (all its threads); a case's share is the
        difference."""
        fields = Path(f"/proc/{self._server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime: fields 14 and 15 of proc_pid_stat(5), here from the state (3) on.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def url(self, rows: int) -> str:
        """The reader's URL of a database holding ``rows`` demo orders (loaded now if new)."""
        if rows not in self._urls:
            from local_stack.demo_mysql import load_demo_mysql

            name = f"bench_{rows}"
            self._server.create_database(name)
            started = time.perf_counter()
            root = {"unix_socket": str(self._server.socket), "user": "root", "database": name}
            loaded, _ = load_demo_mysql(root, rows, DEMO_TODAY)
            assert loaded == rows
            self._server.admin("ANALYZE TABLE orders", database=name)
            print(
                f"  mariadb     {rows:>9,} demo orders loaded in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            self._urls[rows] = self._server.url(name)
        return self._urls[rows]

    def environ(self, rows: int) -> dict[str, str]:
        """The environment of a case process reading the database of ``rows`` orders."""
        return {**os.environ, URL_ENV: self.url(rows), SOCKET_ENV: str(self._server.socket)}


_registry: list[Any] = []


def prepare() -> None:
    """Build the registry (the declaration read, the types made) and import PyMySQL before the
    clock starts, as a warm worker has them."""
    import pymysql  # noqa: F401

    from exports.core.aws.clients import ClientFactory
    from exports.export_types.build import build_export_types
    from exports.export_types.loader import load_declarations
    from exports.export_types.registry import ExportTypeRegistry
    from exports.sources.kind import SourceReaders

    if not _registry:
        readers = SourceReaders(client=ClientFactory(), environ=os.environ)
        _registry.append(ExportTypeRegistry(build_export_types(load_declarations(DECLARATION), readers).types))


def pipeline_inputs() -> tuple[Any, str, dict[str, str]]:
    """What ``bench.cases.run_pipeline`` needs to run the declared type."""
    prepare()
    return _registry[0], EXPORT_TYPE, export_filters()


def client_statement() -> tuple[str, str]:
    """The database and the statement the client runs: the reader's, without its keyset pages,
    the filters written in by PyMySQL's own escaping."""
    import pymysql

    from exports.sources.mysql.reader import keyset_statement

    prepare()
    export_type = _registry[0].get(EXPORT_TYPE)
    read = export_type._read(export_type.parse_filters(export_filters()), None)
    database = os.environ[URL_ENV].rsplit("/", 1)[1]
    conn = pymysql.connect(unix_socket=os.environ[SOCKET_ENV], user="root", database=database)
    try:
        return database, conn.cursor().mogrify(keyset_statement(read), read.params)
    finally:
        conn.close()


def client_peer(rows: int, folder: Path) -> int:
    """The peer: ``mariadb --batch --quick`` into a file in ``folder``; its bytes."""
    database, statement = _statement[0]
    path = folder / "client.tsv"
    with path.open("wb") as out:
        subprocess.run(
            [
                "mariadb",
                "--no-defaults",
                f"--socket={os.environ[SOCKET_ENV]}",
                "-uroot",
                "--batch",
                "--quick",
                "--default-character-set=utf8mb4",
                database,
                "-e",
                f"SET time_zone = '+00:00'; {statement}",
            ],
            stdout=out,
            check=True,
        )
    with path.open("rb") as written:
        lines = sum(block.count(b"\n") for block in iter(lambda: written.read(1 << 20), b""))
    assert lines == rows + 1, lines
    return path.stat().st_size


_statement: list[tuple[str, str]] = []


def prepare_client() -> None:
    """The client's statement, before the clock."""
    if not _statement:
        _statement.append(client_statement())
