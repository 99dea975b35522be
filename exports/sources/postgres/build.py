"""How a PostgreSQL source's export types are made: one reader per source, on the connection
settings its declaration gives, shared by its SQL types."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from exports.core.export_type import AnyExportType
from exports.declared.common import DeclaredParts
from exports.declared.model import PartitionBy, TypeDecl
from exports.declared.type_facts import partition_date_range, session_settings
from exports.sources.kind import SourceReaders, TypeMaker
from exports.sources.postgres.arrow import PostgresArrowReader
from exports.sources.postgres.connections import connection_settings, rds_token_maker, secrets_manager_reader
from exports.sources.postgres.model import PostgresSource, declared_query
from exports.sources.sql.export import DeclaredSqlExport


def sql_type_maker(source_name: str, source: PostgresSource, readers: SourceReaders, base_dir: Path) -> TypeMaker:
    """The maker of ``source``'s SQL types, on one reader (``ExportsError``: no connection)."""
    connect = connection_settings(
        source_name,
        source,
        readers.environ,
        secrets_manager_reader(readers.client),
        rds_token_maker(readers.client),
        base_dir,
    )
    # Reads rows as tuples, and as Arrow record batches for Parquet (docs/performance.md).
    reader = PostgresArrowReader(source_name, connect)

    def make(declared: TypeDecl, parts: DeclaredParts) -> AnyExportType:
        partitions = declared.partitions
        return DeclaredSqlExport(
            reader=reader,
            query=declared_query(declared),
            order_key=declared.order_key or (),
            split_by_key=partitions is not None and partitions.by is PartitionBy.ORDER_KEY,
            split_days=partition_date_range(declared)
            if partitions is not None and partitions.by is PartitionBy.DATE_RANGE
            else None,
            role=declared.session.role if declared.session else None,
            settings=session_settings(declared),
            **parts,
        )

    return make


def missing_result_columns(export_type: AnyExportType) -> Sequence[str]:
    """The declared columns (and order key columns) the SQL type's query does not return."""
    if not isinstance(export_type, DeclaredSqlExport):
        raise TypeError(f"{export_type.name} is not a SQL type")
    return export_type.missing_result_columns()
