"""The DynamoDB kind, as the registry holds it: what its types are checked for, how their
export types are made, and which tables the deployment lets the worker read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType

from exports.declared.model import SourceDecl, TypeDecl
from exports.declared.templates import placeholders
from exports.sources.dynamodb.checks import check_read, key_templates
from exports.sources.dynamodb.model import DAY_PLACEHOLDER, TYPE_KEY, DynamoQueryDecl, DynamoSource, declared_read
from exports.sources.kind import Fail, SourceKind, SourceReaders, TableRead, TypeMaker


class DynamoKind(SourceKind):
    """Sources of ``kind = "dynamodb"``; their types declare a ``dynamodb`` table."""

    source_model = DynamoSource
    title = "DynamoDB"
    type_key = TYPE_KEY
    read_model = DynamoQueryDecl
    type_key_label = TYPE_KEY
    bound_in = "a key condition or filter"
    reserved_names = MappingProxyType({DAY_PLACEHOLDER: "dynamodb.each_day"})

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """Nothing beyond the model: a DynamoDB source is the deployment's account and region."""

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The table, the columns, the key conditions and filters."""
        check_read(fail, declared, declared_read(declared))

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The key conditions' placeholders and the filters' parameters."""
        read = declared_read(declared)
        used = {name for template in key_templates(fail, read).values() for name in placeholders(template)}
        used.update(item_filter.parameter for item_filter in read.filters)
        return used

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """The source's types on one items reader."""
        # Imported here: the loader and the CDK app consult this kind without the adapters.
        from exports.sources.dynamodb.build import items_type_maker

        return items_type_maker(readers)

    def table_reads(self, declared: TypeDecl) -> Sequence[TableRead]:
        """The table (or index) the type reads."""
        read = declared_read(declared)
        return [TableRead(read.table, read.table_env, read.index)]
