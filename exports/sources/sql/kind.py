"""What the SQL source kinds (PostgreSQL, MySQL) share as registered kinds.

A SQL type reads one query over declared placeholders, in keyset pages by its order key, split
when it declares partitions; a SQL source names its CA bundle, its Secrets Manager secret and its
RDS IAM user alike. A SQL kind says what differs: its model, its checks, its reader."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from exports.core.export_type import AnyExportType
from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.kind import Fail, RdsUser, SourceKind, SourceReaders, TypeMaker, secret_resource

# The CA bundle value that names the runtime's own trust store, not a shipped file.
SYSTEM_ROOTS: Final = "system"


class SqlKind(SourceKind):
    """A kind whose types declare a query (its ``type_key``) over one SQL source."""

    read_model = str
    has_order_key = True
    splits = True
    #: The source key naming a CA bundle; a file it names ships with the declaration.
    ca_key: ClassVar[str]
    #: The placeholders of a query, as the kind's checks find them.
    placeholder: ClassVar[re.Pattern[str]]

    def query(self, declared: TypeDecl) -> str:
        """The type's query (the registry hands a kind only its own types)."""
        query = getattr(declared, self.type_key, None)
        if not isinstance(query, str):
            raise TypeError(f"not a {self.title} type")
        return query

    def own(self, source: SourceDecl) -> Any:
        """``source`` as this kind's model (the registry hands a kind only the sources it validated)."""
        if not isinstance(source, self.source_model):
            raise TypeError(f"not a {self.title} source: {source.kind}")
        return source

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The query's placeholders."""
        return set(self.placeholder.findall(self.query(declared)))

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """SQL types on one reader of the source (``ExportsError``: this deployment gives it no
        connection)."""
        from exports.sources.sql.build import sql_type_maker

        return sql_type_maker(self.reader(source_name, self.own(source), readers, base_dir), self.query, self.session)

    @abstractmethod
    def reader(self, source_name: str, source: Any, readers: SourceReaders, base_dir: Path) -> Any:
        """The kind's reader of ``source`` (an ``exports.sources.sql.ports.SqlReader``), on the
        connection its declaration gives. Imports the driver: called only when types are built."""

    def session(self, declared: TypeDecl) -> dict[str, Any]:
        """What a read of the type sets in its transaction (a role, settings): none by default."""
        return {}

    def missing_result_columns(self, export_type: AnyExportType) -> Sequence[str]:
        """What the query does not return of the declared columns, found by describing it."""
        from exports.sources.sql.build import missing_result_columns

        return missing_result_columns(export_type)

    def shipped_files(self, source: SourceDecl) -> Sequence[tuple[str, str]]:
        """The CA bundle ``ca_key`` names, when it is a file."""
        bundle = getattr(self.own(source), self.ca_key)
        return [] if bundle in (None, SYSTEM_ROOTS) else [(self.ca_key, str(bundle))]

    def secret_arns(self, source: SourceDecl) -> Sequence[str]:
        """The secret, as an IAM resource (:func:`secret_resource`)."""
        arn = self.own(source).secret_arn
        return [secret_resource(arn)] if arn else []

    def rds_users(self, fail: Fail, source: SourceDecl) -> Sequence[RdsUser]:
        """The user of ``iam_auth``, on the instance or cluster ``resource_id`` names."""
        auth = self.own(source).iam_auth
        if auth is None:
            return []
        if auth.resource_id is None:
            raise fail("iam_auth.resource_id", "is needed on AWS: the worker is granted rds-db:connect on it")
        return [RdsUser(auth.resource_id, auth.user, auth.region)]
