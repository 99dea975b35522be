"""The PostgreSQL kind, as the registry holds it: what its sources and SQL types are checked
for, how their export types are made, and what the deployment grants the worker to connect."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from exports.core.export_type import AnyExportType
from exports.declared.model import SourceDecl, TypeDecl
from exports.sources.kind import Fail, RdsUser, SourceKind, SourceReaders, TypeMaker, secret_resource
from exports.sources.postgres.checks import SQL_PLACEHOLDER, check_connection, check_query
from exports.sources.postgres.model import CONNECTION_KEYS, TYPE_KEY, PostgresSource, declared_query

# The CA bundle value that names the runtime's own trust store, not a shipped file.
_SYSTEM_ROOTS: Final = "system"


class PostgresKind(SourceKind):
    """Sources of ``kind = "postgresql"``; their types declare a ``query``."""

    source_model = PostgresSource
    title = "PostgreSQL"
    type_key = TYPE_KEY
    read_model = str
    type_key_label = "query (PostgreSQL)"
    bound_in = "the query or a session setting"
    sets_session = True
    has_order_key = True
    splits = True
    connection_keys = CONNECTION_KEYS

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """One way to connect, at most."""
        check_connection(fail, _own(source))

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The query: one statement over declared placeholders."""
        check_query(fail, declared, declared_query(declared))

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The query's placeholders."""
        return set(SQL_PLACEHOLDER.findall(declared_query(declared)))

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """SQL types on one reader of the source."""
        # Imported here: the loader and the CDK app consult this kind without the adapters.
        from exports.sources.postgres.build import sql_type_maker

        return sql_type_maker(source_name, _own(source), readers, base_dir)

    def missing_result_columns(self, export_type: AnyExportType) -> Sequence[str]:
        """What the query does not return of the declared columns, found by describing it."""
        from exports.sources.postgres.build import missing_result_columns

        return missing_result_columns(export_type)

    def shipped_files(self, source: SourceDecl) -> Sequence[tuple[str, str]]:
        """The CA bundle ``sslrootcert`` names, when it is a file."""
        bundle = _own(source).sslrootcert
        return [] if bundle in (None, _SYSTEM_ROOTS) else [("sslrootcert", str(bundle))]

    def secret_arns(self, source: SourceDecl) -> Sequence[str]:
        """The secret, as an IAM resource (:func:`secret_resource`)."""
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


def _own(source: SourceDecl) -> PostgresSource:
    # The registry hands a kind only the sources its model validated.
    if not isinstance(source, PostgresSource):
        raise TypeError(f"not a PostgreSQL source: {source.kind}")
    return source
