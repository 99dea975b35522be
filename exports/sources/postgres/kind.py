"""The PostgreSQL kind, as the registry holds it: what its sources and SQL types are checked
for, how their reader is made, and what the deployment grants the worker to connect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exports.declared.model import SourceDecl, TypeDecl
from exports.declared.type_facts import session_settings
from exports.sources.kind import Fail, SourceReaders
from exports.sources.postgres.checks import SQL_PLACEHOLDER, check_connection, check_query
from exports.sources.postgres.model import CONNECTION_KEYS, TYPE_KEY, PostgresSource
from exports.sources.sql.kind import SqlKind


class PostgresKind(SqlKind):
    """Sources of ``kind = "postgresql"``; their types declare a ``query``."""

    source_model = PostgresSource
    title = "PostgreSQL"
    type_key = TYPE_KEY
    type_key_label = "query (PostgreSQL)"
    bound_in = "the query or a session setting"
    sets_session = True
    connection_keys = CONNECTION_KEYS
    ca_key = "sslrootcert"
    placeholder = SQL_PLACEHOLDER
    # psycopg (its binary wheel has libpq inside) reads rows and COPYs CSV; the ADBC driver
    # reads a Parquet or XLSX export into Arrow. Both are imported on their paths only.
    distributions = ("psycopg", "adbc-driver-postgresql")

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """One way to connect, at most."""
        check_connection(fail, self.own(source))

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The query: one statement over declared placeholders."""
        check_query(fail, declared, self.query(declared))

    def session(self, declared: TypeDecl) -> dict[str, Any]:
        """The role and custom settings a read sets, so row-level security sees the caller."""
        return {"role": declared.session.role if declared.session else None, "settings": session_settings(declared)}

    def reader(self, source_name: str, source: PostgresSource, readers: SourceReaders, base_dir: Path) -> Any:
        """Rows as tuples, and as Arrow record batches for Parquet and XLSX (docs/performance.md)."""
        from exports.sources.postgres.arrow import PostgresArrowReader
        from exports.sources.postgres.connections import connection_settings, rds_token_maker
        from exports.sources.sql.connections import secrets_manager_reader

        connect = connection_settings(
            source_name,
            source,
            readers.environ,
            secrets_manager_reader(readers.client),
            rds_token_maker(readers.client),
            base_dir,
        )
        return PostgresArrowReader(source_name, connect)
