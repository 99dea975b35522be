"""The HTTP kind, as the registry holds it: what its sources and types are checked for, how
their export types are made, and which secrets and services the deployment lets the worker
read and call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from exports.declared.model import SourceDecl, TypeDecl
from exports.declared.templates import placeholders
from exports.sources.http.checks import check_read, check_source, templates
from exports.sources.http.grants import invoke_grants
from exports.sources.http.model import (
    CONNECTION_KEYS,
    TYPE_KEY,
    BearerAuth,
    HeaderAuth,
    HttpReadDecl,
    HttpSource,
    declared_read,
)
from exports.sources.kind import Fail, InvokeGrant, SourceKind, SourceReaders, TypeMaker, secret_resource


class HttpKind(SourceKind):
    """Sources of ``kind = "http"``; their types declare an ``http`` request."""

    source_model = HttpSource
    title = "HTTP"
    type_key = TYPE_KEY
    read_model = HttpReadDecl
    type_key_label = "http"
    bound_in = "the request's path or query"
    connection_keys = CONNECTION_KEYS

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """One base URL (in the file or a variable), and the hosts a variable's may name."""
        check_source(fail, _own(source))

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        """The columns, the request's templates, the pagination."""
        check_read(fail, declared, declared_read(declared))

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        """The placeholders of the path and the query."""
        return {name for template in templates(declared_read(declared)).values() for name in placeholders(template)}

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        """The source's types on one reader."""
        # Imported here: the loader and the CDK app consult this kind without the adapters.
        from exports.sources.http.build import http_type_maker

        return http_type_maker(source_name, _own(source), readers)

    def secret_arns(self, source: SourceDecl) -> Sequence[str]:
        """The secret of a bearer token or an API key header, as an IAM resource."""
        auth = _own(source).auth
        return [secret_resource(auth.secret_arn)] if isinstance(auth, BearerAuth | HeaderAuth) else []

    def invoke_grants(self, source: SourceDecl, types: Sequence[TypeDecl]) -> Sequence[InvokeGrant]:
        """A SigV4 source's API stage and paths, or its function's URL."""
        return invoke_grants(_own(source), [declared_read(declared) for declared in types])


def _own(source: SourceDecl) -> HttpSource:
    # The registry hands a kind only the sources its model validated.
    if not isinstance(source, HttpSource):
        raise TypeError(f"not an HTTP source: {source.kind}")
    return source
