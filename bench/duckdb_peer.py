"""The PostgreSQL → Parquet peer of issue 34: DuckDB's postgres scanner running the bench's
statement on the same database and writing the Parquet file itself,
``COPY (SELECT * FROM postgres_query('source', '<statement>')) TO 'peer.parquet' (FORMAT parquet)``
with DuckDB's defaults (snappy, its own row groups, every thread).

Run by ``.venv-duckdb``'s interpreter (DuckDB 1.4.4 and its postgres extension from a pinned
wheel: ``bench/duckdb-requirements.in``), never by ``.venv``'s:
``python -m bench.duckdb_peer ROWS FOLDER STATEMENT``, the database's URI in
``EXPORTS_SHOP_DATABASE_URL``. Prints the JSON line of :func:`bench.child.measure`. Imports only
DuckDB and the standard library.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.child import measure

# The declared source's variable (bench.postgres.URI_ENV: that module imports the service).
URI_ENV = "EXPORTS_SHOP_DATABASE_URL"
CASE = "pg_duckdb_parquet"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _extension_directory() -> str:
    """Where the pinned wheel put the extension (its ``vX.Y.Z/<platform>/`` layout)."""
    import duckdb_ext  # type: ignore[import-not-found]  # only in .venv-duckdb

    return str(Path(duckdb_ext.__path__[0]) / "extensions")


def copy_to_parquet(connection: Any, uri: str, statement: str, path: Path) -> int:
    """Attach the database (libpq, as the reader connects), run ``statement`` there and write its
    rows as Parquet to ``path``; returns the file's bytes."""
    connection.execute(f"ATTACH {_literal(uri)} AS source (TYPE postgres, READ_ONLY)")
    query = f"SELECT * FROM postgres_query('source', {_literal(statement)})"
    connection.execute(f"COPY ({query}) TO {_literal(str(path))} (FORMAT parquet)")
    return path.stat().st_size


def main(argv: list[str]) -> None:
    """Measure one run (imports and the extension's load before the clock, as for our cases)."""
    import duckdb

    rows, folder, statement = int(argv[0]), Path(argv[1]), argv[2]
    # The reader's session runs in UTC; libpq sends PGTZ as the session's TimeZone.
    os.environ["PGTZ"] = "UTC"
    connection = duckdb.connect(
        config={"extension_directory": _extension_directory(), "autoinstall_known_extensions": False}
    )
    connection.execute("LOAD postgres")
    path = folder / "peer.parquet"
    result = measure(CASE, rows, lambda: copy_to_parquet(connection, os.environ[URI_ENV], statement, path))
    written = connection.execute(f"SELECT count(*) FROM read_parquet({_literal(str(path))})").fetchone()
    if written is None or written[0] != rows:
        raise SystemExit(f"DuckDB wrote {written} rows, not {rows}")
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, as bench.cases does


if __name__ == "__main__":
    main(sys.argv[1:])
