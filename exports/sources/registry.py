"""The source kinds this deployment knows, registered once: the loader, the builder, the
composition root and the CDK app find a source's or a type's kind here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.dynamodb.kind import DynamoKind
from exports.sources.http.kind import HttpKind
from exports.sources.kind import SourceKind
from exports.sources.mysql.kind import MySqlKind
from exports.sources.postgres.kind import PostgresKind

# The one registration of each kind, by the name its sources declare (``kind = "..."``), in
# the order messages list them.
SOURCE_KINDS: Mapping[str, SourceKind] = MappingProxyType(
    {kind.name: kind for kind in (PostgresKind(), DynamoKind(), HttpKind(), MySqlKind())}
)


def kinds() -> Sequence[SourceKind]:
    """Every registered kind, in registration order."""
    return tuple(SOURCE_KINDS.values())


def kind_named(name: object) -> SourceKind | None:
    """The kind a source's ``kind`` value names (None: no such kind, or not a name)."""
    return SOURCE_KINDS.get(name) if isinstance(name, str) else None


def source_kind(source: SourceDecl) -> SourceKind:
    """The kind of a validated source."""
    return SOURCE_KINDS[source.kind]


def type_kind(declared: TypeDecl) -> SourceKind | None:
    """The kind whose key the type declares (None: a plugin type)."""
    return next((kind for kind in kinds() if kind.reads(declared) is not None), None)


def reader_distributions() -> tuple[str, ...]:
    """What the registered kinds' readers import, each once, in registration order: the
    worker's package is built from this, so a new kind's driver ships without a list to edit."""
    return tuple(dict.fromkeys(name for kind in kinds() for name in kind.distributions))
