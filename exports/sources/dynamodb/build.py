"""How a DynamoDB source's export types are made: each on its table (named in the declaration,
or by a variable this deployment sets)."""

from __future__ import annotations

from exports.core.export_type import AnyExportType
from exports.declared.common import DeclaredParts
from exports.declared.model import TypeDecl
from exports.sources.dynamodb.export import DeclaredDynamoExport
from exports.sources.dynamodb.model import declared_read
from exports.sources.dynamodb.reader import DynamoItemsReader
from exports.sources.kind import LeftOut, SourceReaders, TypeMaker


def items_type_maker(readers: SourceReaders) -> TypeMaker:
    """The maker of a DynamoDB source's types (left out: a table variable that is not set),
    each on an items reader of its own (no client is made for a type left out)."""

    def make(declared: TypeDecl, parts: DeclaredParts) -> AnyExportType:
        read = declared_read(declared)
        table = read.table or readers.environ.get(read.table_env or "")
        if not table:
            raise LeftOut(f"its table name comes from {read.table_env}, which is not set")
        attributes = {column.name: column.attribute or column.name for column in declared.columns or ()}
        return DeclaredDynamoExport(
            reader=DynamoItemsReader(readers.client("dynamodb")),
            table=table,
            query=read,
            attributes=attributes,
            page_rows=readers.page_rows,
            **parts,
        )

    return make
