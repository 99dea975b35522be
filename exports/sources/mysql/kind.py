"""The MySQL kind, as the registry holds it: what its sources and types are checked for, how
their export types are made, and what the deployment grants the worker to connect."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from exports.core.export_type import AnyExportType
from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.kind import Fail, RdsUser, SourceKind, SourceReaders, TypeMaker, secret_resource
from exports.sources.mysql.checks import SQL_PLACEHOLDER, check_connection, check_query
from exports.sources.mysql.model import CONNECTION_KEYS, TYPE_KEY, MySqlSource, declared_query

# The CA bundle value that names the runtime's own trust store, not a shipped file.
_SYSTEM_ROOTS: Final = "system"


class MySqlKind(SourceKind):
    """Sources of ``kind = "mysql"`` (MySQL, Aurora MySQL, MariaDB); their types declare a
    ``mysql_query``."""

    source_model = MySqlSource
    title = "MySQL"
    type_key = TYPE_KEY
    read_model = str
    type_key_label = "mysql_query (MySQL)"
    bound_in = "the query"
    has_order_key = True
    splits = True
    connection_keys = CONNECTION_KEYS

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """One way to connect, at most; IAM only over TLS."""
        check_connection(fail, _own(source))

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The query: one SELECT that reads, over declared placeholders."""
        check_query(fail, declared, declared_query(declared))

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The query's placeholders."""
        return set(SQL_PLACEHOLDER.findall(declared_query(declared)))

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """SQL types on one reader of the source."""
        # Imported here: the loader and the CDK app consult this kind without the driver.
        from exports.sources.mysql.build import mysql_type_maker

        return mysql_type_maker(source_name, _own(source), readers, base_dir)

    def missing_result_columns(self, export_type: AnyExportType) -> Sequence[str]:
        """What the query does not return of the declared columns, found by describing it."""
        from exports.sources.mysql.build import missing_result_columns

        return missing_result_columns(export_type)

    def shipped_files(self, source: SourceDecl) -> Sequence[tuple[str, str]]:
        """The CA bundle ``ssl_ca`` names, when it is a file."""
        bundle = _own(source).ssl_ca
        return [] if bundle in (None, _SYSTEM_ROOTS) else [("ssl_ca", str(bundle))]

    def secret_arns(self, source: SourceDecl) -> Sequence[str]:
        """The secret, as an IAM resource (kind.secret_resource)."""
        arn = _own(source).secret_arn
        return [secret_resource(arn)] if arn else []

    def rds_users(self, fail: Fail, source: SourceDecl) -> Sequence[RdsUser]:
        """The user of ``iam_auth``, on the instance or cluster ``resource_id`` names."""
        auth = _own(source).iam_auth
        if auth is None:
            return []
        if auth.resource_id is None:
            raise fail("iam_auth.resource_id", "is needed on AWS: the worker is granted rds-db:connect on it")
        return [RdsUser(auth.resource_id, auth.user, auth.region)]


def _own(source: SourceDecl) -> MySqlSource:
    # The registry hands a kind only the sources its model validated.
    if not isinstance(source, MySqlSource):
        raise TypeError(f"not a MySQL source: {source.kind}")
    return source
