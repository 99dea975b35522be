"""What a source kind registers: the contract each package of :mod:`exports.sources` fulfils
once, and the loader, the builder, the composition root and the CDK app consult through
:mod:`exports.sources.registry` instead of asking which kind a source is."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, get_args

from exports.declared.common import DeclaredParts
from exports.declared.model import SourceDecl, TypeDecl
from exports.export_types.base import SOURCE_PAGE_ROWS, AnyExportType

if TYPE_CHECKING:
    from exports.adapters.clients import ClientFactory

# Secrets Manager appends a hyphen and six random characters to a secret's name in its ARN.
_COMPLETE_SECRET_ARN: Final = re.compile(r":secret:.+-[A-Za-z0-9]{6}$")
PARTIAL_SECRET_SUFFIX: Final = "-??????"


def secret_resource(arn: str) -> str:
    """A secret's ARN as an IAM resource: a complete ARN as it is, a partial one (without the
    ``-XXXXXX`` suffix Secrets Manager appends to the name, which GetSecretValue accepts) with
    that suffix as a wildcard: IAM compares the full ARN, so the bare partial one would be denied."""
    return arn if _COMPLETE_SECRET_ARN.search(arn) else f"{arn}{PARTIAL_SECRET_SUFFIX}"


class Fail(Protocol):
    """Makes the error to raise for a mistake at ``key`` ("" for the whole entry) of the source
    or type being checked (the loader's ``DeclarationError``, naming the file and the entry)."""

    def __call__(self, key: str, message: str, /) -> Exception: ...


class LeftOut(Exception):
    """A type this deployment cannot serve (its source has no connection here): the reason."""


@dataclass
class SourceReaders:
    """How this deployment reaches its sources: the shared AWS client factory, the environment,
    the settings a plugin gets, and the items per DynamoDB query page."""

    client: ClientFactory
    environ: Mapping[str, str] = field(default_factory=dict)
    settings: Any = None
    page_rows: int = SOURCE_PAGE_ROWS


class TypeMaker(Protocol):
    """Makes the export type of one declared type of a source (raises :class:`LeftOut`)."""

    def __call__(self, declared: TypeDecl, parts: DeclaredParts, /) -> AnyExportType: ...


@dataclass(frozen=True)
class RdsUser:
    """A database user the worker connects as with an RDS IAM token (rds-db:connect)."""

    resource_id: str
    user: str
    # None: the stack's own region.
    region: str | None


@dataclass(frozen=True)
class InvokeGrant:
    """Permission to call a service a source is (an API Gateway API, a Lambda function URL,
    with SigV4): ``actions`` on one ARN, which the CDK app builds in the stack's partition,
    region and account unless ``region`` or ``account`` names another, under ``conditions``
    (operator, key, value)."""

    actions: tuple[str, ...]
    service: str
    region: str | None
    account: str | None
    # The ARN's resource part: "<resource>/<resource_name>" or "<resource>:<resource_name>".
    resource: str
    resource_name: str
    separator: str
    conditions: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class TableRead:
    """A DynamoDB table (by name, or by the variable naming one of the stack's) or index read."""

    table: str | None
    table_env: str | None
    index: str | None


class SourceKind(ABC):
    """One kind of source. A subclass sets the class attributes and implements the abstract
    methods; the grants default to none."""

    #: The source's model: its ``kind`` field (a one-value Literal) is the kind's name.
    source_model: ClassVar[type[SourceDecl]]
    #: How messages name the kind ("is not a PostgreSQL source").
    title: ClassVar[str]
    #: The key of a type of this kind that says what it reads, and what that key holds.
    type_key: ClassVar[str]
    read_model: ClassVar[type]
    #: How "declare exactly one of ..." names the key.
    type_key_label: ClassVar[str]
    #: What the message for an unused caller value says the type's reads are.
    bound_in: ClassVar[str]
    #: What a type of this kind may declare: a session, an order key, partitions.
    sets_session: ClassVar[bool] = False
    has_order_key: ClassVar[bool] = False
    splits: ClassVar[bool] = False
    #: Names a caller value may not take, with what they are reserved for (every kind's apply).
    reserved_names: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: The source keys of which a deployment's override replaces all (one way to connect).
    connection_keys: ClassVar[frozenset[str]] = frozenset()

    @property
    def name(self) -> str:
        """The ``kind`` a source of this kind declares."""
        (name,) = get_args(self.source_model.model_fields["kind"].annotation)
        return str(name)

    def reads(self, declared: TypeDecl) -> object:
        """What ``declared`` says it reads under :attr:`type_key` (None: not of this kind)."""
        return getattr(declared, self.type_key, None)

    @abstractmethod
    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """Refuse what the source's model alone cannot (e.g. two ways to connect)."""

    @abstractmethod
    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """Refuse what a type of this kind gets wrong in what it reads."""

    @abstractmethod
    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The parameters and caller values the type's reads use."""

    @abstractmethod
    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """What makes the export types of ``source``: built once per source, it raises
        ``ExportsError`` when the source cannot be reached from this deployment."""

    def missing_result_columns(self, export_type: AnyExportType) -> Sequence[str]:
        """Declared columns the type's source does not return (checked by local mode at start)."""
        return ()

    def shipped_files(self, source: SourceDecl) -> Sequence[tuple[str, str]]:
        """(key, path relative to the declaration) of the files the functions need with it."""
        return ()

    def secret_arns(self, source: SourceDecl) -> Sequence[str]:
        """The Secrets Manager secrets the worker reads to reach the source."""
        return ()

    def rds_users(self, fail: Fail, source: SourceDecl) -> Sequence[RdsUser]:
        """The database users the worker connects as with RDS IAM authentication."""
        return ()

    def invoke_grants(self, source: SourceDecl, types: Sequence[TypeDecl]) -> Sequence[InvokeGrant]:
        """The services the worker calls to read ``source`` for ``types`` (its types)."""
        return ()

    def table_reads(self, declared: TypeDecl) -> Sequence[TableRead]:
        """The DynamoDB tables and indexes a type of this kind reads."""
        return ()
