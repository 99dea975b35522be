"""The MySQL kind, as the registry holds it: what its sources and types are checked for, how
their reader is made, and what the deployment grants the worker to connect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.kind import Fail, SourceReaders
from exports.sources.mysql.checks import SQL_PLACEHOLDER, check_connection, check_query
from exports.sources.mysql.model import CONNECTION_KEYS, TYPE_KEY, MySqlSource
from exports.sources.sql.kind import SqlKind


class MySqlKind(SqlKind):
    """Sources of ``kind = "mysql"`` (MySQL, Aurora MySQL, MariaDB); their types declare a
    ``mysql_query``."""

    source_model = MySqlSource
    title = "MySQL"
    type_key = TYPE_KEY
    type_key_label = "mysql_query (MySQL)"
    bound_in = "the query"
    connection_keys = CONNECTION_KEYS
    ca_key = "ssl_ca"
    placeholder = SQL_PLACEHOLDER
    # PyMySQL: pure Python, one wheel for arm64; imported on a MySQL query only.
    distributions = ("PyMySQL",)

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """One way to connect, at most; IAM only over TLS."""
        check_connection(fail, self.own(source))

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The query: one SELECT that reads, over declared placeholders."""
        check_query(fail, declared, self.query(declared))

    def reader(self, source_name: str, source: MySqlSource, readers: SourceReaders, base_dir: Path) -> Any:
        """PyMySQL's reader of the source (the driver is imported on a MySQL query only)."""
        from exports.sources.mysql.connections import connection_settings, rds_token_maker
        from exports.sources.mysql.reader import MySqlReader
        from exports.sources.sql.connections import secrets_manager_reader

        connect = connection_settings(
            source_name,
            source,
            readers.environ,
            secrets_manager_reader(readers.client),
            rds_token_maker(readers.client),
            base_dir,
        )
        return MySqlReader(source_name, connect)
