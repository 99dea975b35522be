"""How a declared PostgreSQL source connects: libpq keywords from a URI in the environment, an
RDS secret in Secrets Manager, or an RDS IAM authentication token.

TLS: a source reached through a secret or IAM defaults to ``sslmode=verify-full`` against the
runtime's trust store (``sslrootcert=system``, which RDS Proxy's certificates chain to); a
database that presents the RDS CA's certificates needs that CA's bundle shipped with the
declaration (``sslrootcert = "certs/rds-global-bundle.pem"``, relative to the declaration file).

``system`` is resolved here, not by libpq (:func:`trust_runtime_roots`): libpq takes it to mean
its OpenSSL's default store, and psycopg-binary bundles an OpenSSL whose default store
(``/usr/lib/psycopg-openssl``) exists neither on Lambda nor on most hosts, so it trusted nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from exports.core.errors import ExportFailed, SourceCode
from exports.sources.postgres.model import IamAuth, PostgresSource, SslMode
from exports.sources.sql.connections import SecretReader, SourceNotConfigured, runtime_ca_bundle
from exports.sources.sql.ports import ConnectionSettings

if TYPE_CHECKING:
    from exports.core.aws.clients import ClientFactory


TokenMaker = Callable[[IamAuth], str]

# libpq's value of sslrootcert for "the SSL library's trust store".
SYSTEM_ROOTS: Final = "system"


def trust_runtime_roots(source: str, keywords: Mapping[str, Any]) -> dict[str, Any]:
    """libpq's connection ``keywords`` of data source ``source`` with ``sslrootcert=system``
    replaced by :func:`runtime_ca_bundle`. libpq refuses ``system`` with a mode weaker than
    ``verify-full`` (anyone can get a publicly trusted certificate for a host they own), so the
    mode is ``verify-full``, as libpq itself would have it. Without a bundle the export fails
    (``SOURCE_TLS_UNVERIFIED``): no retry brings one."""
    if keywords.get("sslrootcert") != SYSTEM_ROOTS:
        return dict(keywords)
    bundle = runtime_ca_bundle()
    if bundle is None:
        raise ExportFailed(
            f"data source {source!r} verifies its server against the runtime's trust store "
            '(sslrootcert = "system"), and this runtime has no CA bundle: ship the server\'s CA '
            'bundle with the declaration (sslrootcert = "certs/<bundle>.pem") or set SSL_CERT_FILE',
            code=SourceCode.TLS_UNVERIFIED,
        )
    return {**keywords, "sslrootcert": bundle, "sslmode": SslMode.VERIFY_FULL.value}


def connection_settings(
    name: str,
    source: PostgresSource,
    environ: Mapping[str, str],
    read_secret: SecretReader,
    make_token: TokenMaker,
    base_dir: Path,
) -> ConnectionSettings:
    """A function giving fresh libpq keywords for ``source`` at each connection."""
    tls = _tls(source, base_dir)
    if source.url_env:
        variable = source.url_env
        if not environ.get(variable):
            raise SourceNotConfigured(
                f"data source {name!r} reads its connection URI from {variable}, which is not set"
            )
        url = environ[variable]
        return lambda: {"conninfo": url, **tls}
    if source.secret_arn:
        arn = source.secret_arn

        def from_secret() -> dict[str, Any]:
            secret = read_secret(arn)
            return {
                "host": source.host or secret["host"],
                "port": source.port or int(secret.get("port", 5432)),
                "dbname": source.database or secret.get("dbname") or secret.get("dbName") or "postgres",
                "user": secret["username"],
                "password": secret["password"],
                **tls,
            }

        return from_secret
    if source.iam_auth:
        auth = source.iam_auth
        return lambda: {
            "host": auth.host,
            "port": auth.port,
            "dbname": auth.database,
            "user": auth.user,
            "password": make_token(auth),
            **tls,
        }
    raise SourceNotConfigured(f"data source {name!r} has no connection (url_env, secret_arn or iam_auth)")


def _tls(source: PostgresSource, base_dir: Path) -> dict[str, str]:
    managed = source.secret_arn is not None or source.iam_auth is not None
    mode = source.sslmode or (SslMode.VERIFY_FULL if managed else None)
    settings: dict[str, str] = {}
    if mode is not None:
        settings["sslmode"] = mode.value
    root = source.sslrootcert or (SYSTEM_ROOTS if mode in (SslMode.VERIFY_CA, SslMode.VERIFY_FULL) else None)
    if root is not None:
        settings["sslrootcert"] = root if root == SYSTEM_ROOTS else str((base_dir / root).resolve())
    return settings


def rds_token_maker(client_factory: ClientFactory) -> TokenMaker:
    """RDS IAM authentication tokens (valid 15 minutes; one is made per connection)."""

    def make(auth: IamAuth) -> str:
        # No region: the client's own.
        region = auth.region or None
        return client_factory("rds").generate_db_auth_token(auth.host, auth.port, auth.user, Region=region)

    return make
