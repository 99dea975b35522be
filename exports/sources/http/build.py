"""How an HTTP source's export types are made: one reader per source, on its declared hosts,
with its auth, timeout and rate, shared by its types."""

from __future__ import annotations

from exports.core.errors import ExportsError
from exports.core.export_type import AnyExportType
from exports.declared.common import DeclaredParts
from exports.declared.model import TypeDecl
from exports.sources.http.export import DeclaredHttpExport
from exports.sources.http.model import BearerAuth, HeaderAuth, HttpSource, declared_read
from exports.sources.http.reader import HttpJsonReader, Signer, origins, permits, secret_header, sigv4_signer
from exports.sources.kind import SourceReaders, TypeMaker


class SourceNotReachable(ExportsError):
    """This deployment gives an HTTP source no base URL, or one off its declared hosts: its
    types are left out (``make run`` refuses to start)."""

    code = "SOURCE_NOT_CONFIGURED"


def http_type_maker(source_name: str, source: HttpSource, readers: SourceReaders) -> TypeMaker:
    """The maker of ``source``'s types on one reader (:class:`SourceNotReachable`: no base
    URL on a declared host here)."""
    base_url = _base_url(source_name, source, readers)
    reader = HttpJsonReader(
        source_name,
        origins(base_url, source.hosts),
        timeout_sec=source.timeout_sec,
        rate_per_sec=source.rate_per_sec,
        headers=source.headers,
        sign=_signer(source_name, source, readers),
    )

    def make(declared: TypeDecl, parts: DeclaredParts) -> AnyExportType:
        fields = {column.name: column.attribute or column.name for column in declared.columns or ()}
        return DeclaredHttpExport(
            reader=reader, source=source_name, base_url=base_url, read=declared_read(declared), fields=fields, **parts
        )

    return make


def _base_url(source_name: str, source: HttpSource, readers: SourceReaders) -> str:
    """The declared base URL, or the variable's when its host is a declared one."""
    if source.base_url is not None:
        return source.base_url
    variable = source.base_url_env or ""
    url = readers.environ.get(variable, "")
    if not url:
        raise SourceNotReachable(f"data source {source_name!r} reads its base URL from {variable}, which is not set")
    if not permits(origins(None, source.hosts), url):
        raise SourceNotReachable(
            f"data source {source_name!r}: the base URL in {variable} is not on a host its declaration names"
        )
    return url


def _signer(source_name: str, source: HttpSource, readers: SourceReaders) -> Signer | None:
    auth = source.auth
    if auth is None:
        return None
    if isinstance(auth, BearerAuth | HeaderAuth):
        header, prefix = ("Authorization", "Bearer ") if isinstance(auth, BearerAuth) else (auth.header, "")
        return secret_header(lambda: readers.client("secretsmanager"), auth.secret_arn, auth.secret_key, header, prefix)
    # Lambda sets AWS_REGION; a shell, AWS_DEFAULT_REGION.
    region = auth.region or readers.environ.get("AWS_REGION") or readers.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise SourceNotReachable(
            f"data source {source_name!r} signs with SigV4 but no region is known: declare auth.region"
        )
    return sigv4_signer(readers.client.credentials, auth.service.value, region)
