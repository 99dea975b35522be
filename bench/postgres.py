"""The PostgreSQL cases of ``make bench``: the declared ``orders_all_tenants`` type of ``exports.toml`` over an
embedded PostgreSQL, next to the floor, ``COPY (the same query) TO STDOUT (FORMAT csv)``.

``python -m bench`` starts one embedded server (``local_stack.embedded_postgres``, a temporary
data directory, Unix socket only) and loads one database per row count with the demo orders
(``local_stack.demo_database.load_demo_data``, 90 days up to :data:`DEMO_TODAY`, loaded with
``COPY``). Each case process gets that database's URI in the declared source's variable
(:data:`URI_ENV`), as ``make run`` gives it to the worker, and builds the type the way
``exports.export_types.composition.build_registry`` does: ``build_export_types``, whose PostgreSQL kind puts
a ``PostgresReader`` on ``connection_settings``. The filters cover all 90 days, so the export holds every loaded order.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

# The database the bench loads: demo orders over the 90 days up to this day (fixed, so every
# run exports the same rows).
DEMO_TODAY = date(2026, 1, 31)
# Every tenant's orders: the tenant-scoped ``orders`` reads a third of them (one tenant's).
EXPORT_TYPE = "orders_all_tenants"
# The declared source of ``orders`` reads its URI from this variable (exports.toml, url_env).
URI_ENV = "EXPORTS_SHOP_DATABASE_URL"
# The peer of the PostgreSQL → Parquet goal, run by another interpreter (bench/duckdb_peer.py).
DUCKDB_PEER = "pg_duckdb_parquet"
CASES = ("pg_copy", "pg_read", "pg_csv_python", "pg_csv", "pg_xlsx", DUCKDB_PEER, "pg_parquet")
# DuckDB 1.4.4 with its postgres extension (`make bench` builds it: bench/duckdb-requirements.in).
DUCKDB_PYTHON = Path(__file__).resolve().parents[1] / ".venv-duckdb" / "bin" / "python"


def export_filters() -> dict[str, str]:
    """The task filters of the bench export: every demo day, all statuses."""
    from local_stack.demo_orders import DEMO_DAYS

    first = DEMO_TODAY - timedelta(days=DEMO_DAYS - 1)
    return {"date_from": first.isoformat(), "date_to": DEMO_TODAY.isoformat()}


class BenchDatabases:
    """One embedded PostgreSQL in a temporary directory, one database of demo orders per row
    count (loaded on first use). Use as a context manager: leaving it stops the server and
    removes its data."""

    cases = CASES

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._server: Any = None
        self._uris: dict[int, str] = {}

    def __enter__(self) -> BenchDatabases:
        from local_stack.embedded_postgres import EmbeddedPostgres

        self._folder = tempfile.TemporaryDirectory(prefix="exports-bench-pg-")
        self._server = EmbeddedPostgres(Path(self._folder.name) / "data")
        started = time.perf_counter()
        with warnings.catch_warnings():
            # pgserver's platformdirs warns when XDG_RUNTIME_DIR is unset (containers): harmless.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            self._server.start()
        print(f"  postgres    started in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.stop()
        if self._folder is not None:
            self._folder.cleanup()

    def server_cpu_seconds(self) -> float:
        """CPU seconds of the server's exited processes so far (the postmaster's reaped
        children: every backend of a finished case); a case's share is the difference."""
        postmaster = int((self._server.data_dir / "postmaster.pid").read_text().split()[0])
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
        # cutime and cstime: fields 16 and 17 of proc_pid_stat(5), here from the state (3) on.
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")

    def uri(self, rows: int) -> str:
        """The URI of a database holding ``rows`` demo orders (loaded now if it is new)."""
        if rows not in self._uris:
            from local_stack.demo_database import load_demo_data

            name = f"bench_{rows}"
            self._server.create_database(name)
            uri = self._server.uri(name)
            started = time.perf_counter()
            loaded, _ = load_demo_data(uri, rows, DEMO_TODAY)
            assert loaded == rows
            _vacuum(uri)
            print(
                f"  postgres    {rows:>9,} demo orders loaded in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            self._uris[rows] = uri
        return self._uris[rows]

    def environ(self, rows: int) -> dict[str, str]:
        """The environment of a case process reading the database of ``rows`` orders."""
        return {**os.environ, URI_ENV: self.uri(rows)}


def _vacuum(uri: str) -> None:
    """VACUUM the loaded orders, as a served database is: otherwise the first case's reads set
    every row's hint bits and autovacuum then vacuums the table, both counted in that case's
    server CPU (12.3 s instead of 2.6 s for pg_copy at 1M rows, docs/performance.md)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) orders")


def declared_registry(environ: Mapping[str, str] = os.environ) -> Any:
    """The export types of ``exports.toml`` wired as ``build_registry`` wires them (PostgreSQL
    sources on ``url_env``, no AWS client); DynamoDB types, whose tables are not set here, are
    left out."""
    from exports.core.aws.clients import ClientFactory
    from exports.export_types.build import build_export_types
    from exports.export_types.loader import default_path, load_declarations
    from exports.export_types.registry import ExportTypeRegistry
    from exports.sources.kind import SourceReaders

    readers = SourceReaders(client=ClientFactory(), environ=environ)
    return ExportTypeRegistry(build_export_types(load_declarations(default_path()), readers).types)


_registry: list[Any] = []


# The cases that read through Arrow (ADBC): what they import, before the clock as for DuckDB's
# peer (its module and postgres extension are loaded before its clock), as a warm worker has it.
ARROW_IMPORTS = {
    "pg_parquet": ("pyarrow.compute", "pyarrow.parquet", "adbc_driver_manager", "adbc_driver_postgresql"),
    "pg_xlsx": ("pyarrow.compute", "adbc_driver_manager", "adbc_driver_postgresql"),
}


def prepare(case: str | None = None) -> None:
    """Build the registry (the declaration read, the types made) before the clock starts, as a
    warm worker has it; imports psycopg too, and what ``case`` reads with (ARROW_IMPORTS)."""
    import importlib

    import psycopg  # noqa: F401

    for module in ARROW_IMPORTS.get(case or "", ()):
        importlib.import_module(module)
    if not _registry:
        _registry.append(declared_registry())


def _registry_now() -> Any:
    prepare()
    return _registry[0]


def _orders_read(registry: Any = None) -> tuple[Any, Any]:
    """The declared type (of ``registry``, else of this process's) and its parsed bench filters."""
    export_type = (registry or _registry_now()).get(EXPORT_TYPE)
    return export_type, export_type.parse_filters(export_filters())


def _peer_query(registry: Any = None) -> tuple[Any, Mapping[str, Any]]:
    """The statement the peers run: the declared query, ordered by its order key, and its
    bound filters (the reader's statement without its keyset pages)."""
    from psycopg import sql

    export_type, filters = _orders_read(registry)
    read = export_type._read(filters, None)
    keys = sql.SQL(", ").join(sql.Identifier(name) for name in read.order_key)
    query = sql.SQL("SELECT * FROM ({query}) AS exported ORDER BY {keys}").format(query=sql.SQL(read.query), keys=keys)
    return query, read.params


def copy_floor(rows: int, folder: Path) -> int:
    """The floor: the peers' statement as ``COPY ... TO STDOUT (FORMAT csv, HEADER)`` in a
    read-only transaction in UTC, as the reader runs it, every block read through psycopg and
    written to a file in ``folder``, as issue 34's peer did (the pipeline cases write theirs
    too: on this machine the kernel's copy into fresh page cache is a large share of a
    process's CPU; docs/performance.md, "Fourth round: PostgreSQL to CSV"). Returns the
    file's bytes."""
    import psycopg
    from psycopg import sql

    query, params = _peer_query()
    statement = sql.SQL("COPY ({query}) TO STDOUT (FORMAT csv, HEADER)").format(query=query)
    path = folder / "copy.csv"
    with psycopg.connect(os.environ[URI_ENV]) as conn, path.open("wb") as out:
        conn.read_only = True
        conn.execute("SELECT set_config('TimeZone', 'UTC', true)")
        with conn.cursor() as cursor, cursor.copy(statement, params) as copy:
            for block in copy:
                out.write(block)
            lines = cursor.rowcount
    assert lines in (rows, -1), lines
    return path.stat().st_size


def duckdb_statement(environ: Mapping[str, str]) -> str:
    """The peers' statement with its filters written in as literals (DuckDB's
    ``postgres_query`` takes no parameters), built here for the DuckDB interpreter, which does
    not import the service."""
    import psycopg

    query, params = _peer_query(declared_registry(environ))
    with psycopg.connect(environ[URI_ENV]) as conn:
        return psycopg.ClientCursor(conn).mogrify(query, params)


def main() -> None:
    """Print :func:`duckdb_statement` for this process's environment, as a JSON line."""
    print(json.dumps({"statement": duckdb_statement(os.environ)}))


def read_rows(rows: int) -> int:
    """The type's pages (``stream()``: server-side cursor, binary rows, the reader's conversion,
    the type's projection) read and dropped: the source's share of the pipeline."""
    from exports.core.export_type import Unbounded

    export_type, filters = _orders_read()
    count = 0
    for page in export_type.stream(filters, None, Unbounded()):
        count += len(page.rows)
    assert count == rows, count
    return 0


def pipeline_inputs(copy: bool = True) -> tuple[Any, str, dict[str, str]]:
    """What ``bench.cases.run_pipeline`` needs to run the declared type: the registry, the
    type's name and the task's filters. ``copy=False``: CSV is written in Python from the
    type's pages, as before COPY (the type's ``csv_rows`` declines)."""
    registry = _registry_now()
    if not copy:
        from exports.export_types.registry import ExportTypeRegistry

        export_type = registry.get(EXPORT_TYPE)
        export_type.csv_rows = lambda *_: None
        registry = ExportTypeRegistry([export_type])
    return registry, EXPORT_TYPE, export_filters()


if __name__ == "__main__":
    main()
