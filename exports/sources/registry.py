"""The source kinds this deployment knows, registered once: the loader, the builder, the
composition root and the CDK app find a source's or a type's kind here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.dynamodb.kind import DynamoKind
from exports.sources.kind import SourceKind
from exports.sources.postgres.kind import PostgresKind

# The one registration of each kind, by the name its sources declare (``kind = "..."``), in
# the order messages list them.
SOURCE_KINDS: Final[Mapping[str, SourceKind]] = MappingProxyType(
    {kind.name: kind for kind in (PostgresKind(), DynamoKind())}
)


def source_kind(source: SourceDecl) -> SourceKind:
    """The kind of a validated source."""
    return SOURCE_KINDS[source.kind]


def type_kind(declared: TypeDecl) -> SourceKind | None:
    """The kind whose key the type declares (None: a plugin type)."""
    return next((kind for kind in SOURCE_KINDS.values() if kind.reads(declared) is not None), None)
