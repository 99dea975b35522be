"""How a SQL kind's export types are made: one reader per source, shared by its types, each type
the shared SQL export type (:class:`~exports.sources.sql.export.DeclaredSqlExport`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from exports.core.export_type import AnyExportType
from exports.declared.common import DeclaredParts
from exports.declared.model import PartitionBy, TypeDecl
from exports.declared.type_facts import partition_date_range
from exports.sources.kind import TypeMaker
from exports.sources.sql.export import DeclaredSqlExport
from exports.sources.sql.ports import SqlReader


def sql_type_maker(
    reader: SqlReader, query: Callable[[TypeDecl], str], session: Callable[[TypeDecl], dict[str, Any]]
) -> TypeMaker:
    """The maker of one source's types, all on ``reader``: each type's ``query``, and what a
    read of it sets in its transaction (``session``: the kind's, e.g. PostgreSQL's role)."""

    def make(declared: TypeDecl, parts: DeclaredParts) -> AnyExportType:
        partitions = declared.partitions
        return DeclaredSqlExport(
            reader=reader,
            query=query(declared),
            order_key=declared.order_key or (),
            split_by_key=partitions is not None and partitions.by is PartitionBy.ORDER_KEY,
            split_days=partition_date_range(declared)
            if partitions is not None and partitions.by is PartitionBy.DATE_RANGE
            else None,
            **session(declared),
            **parts,
        )

    return make


def missing_result_columns(export_type: AnyExportType) -> Sequence[str]:
    """The declared columns (and order key columns) the SQL type's query does not return."""
    if not isinstance(export_type, DeclaredSqlExport):
        raise TypeError(f"{export_type.name} is not a SQL type")
    return export_type.missing_result_columns()
