"""How a declared MySQL source connects: PyMySQL's connection keywords from a ``mysql://`` URL in
the environment, an RDS secret in Secrets Manager, or an RDS IAM authentication token.

TLS: a source reached through a secret or IAM defaults to ``VERIFY_IDENTITY`` against the
runtime's trust store (``ssl_ca = "system"``, which RDS Proxy's certificates chain to); a
database that presents the RDS CA's certificates needs that CA's bundle shipped with the
declaration (``ssl_ca = "certs/rds-global-bundle.pem"``, relative to the declaration file). The
modes are those of MySQL's own client (``--ssl-mode``): ``REQUIRED`` encrypts without verifying,
``VERIFY_CA`` checks the chain, ``VERIFY_IDENTITY`` the chain and the host name.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from exports.core.errors import ExportFailed, SourceCode
from exports.sources.mysql.model import MYSQL_PORT, MySqlIamAuth, MySqlSource, SslMode
from exports.sources.sql.connections import SecretReader, SourceNotConfigured, runtime_ca_bundle
from exports.sources.sql.ports import ConnectionSettings

if TYPE_CHECKING:
    from exports.core.aws.clients import ClientFactory

TokenMaker = Callable[[MySqlIamAuth], str]

# The ssl_ca value that names the runtime's own trust store, not a shipped file.
SYSTEM_ROOTS: Final = "system"
# The URL schemes a url_env variable may use.
_SCHEMES: Final = frozenset({"mysql", "mariadb"})


def connection_settings(
    name: str,
    source: MySqlSource,
    environ: Mapping[str, str],
    read_secret: SecretReader,
    make_token: TokenMaker,
    base_dir: Path,
) -> ConnectionSettings:
    """A function giving fresh PyMySQL keywords for ``source`` at each connection (rotated
    secrets and new IAM tokens are picked up)."""
    if source.url_env:
        variable = source.url_env
        if not environ.get(variable):
            raise SourceNotConfigured(
                f"data source {name!r} reads its connection URL from {variable}, which is not set"
            )
        keywords, mode, ca = _from_url(name, environ[variable])
        tls = _tls(name, source.ssl_mode or mode, source.ssl_ca or ca, base_dir, managed=False)
        return lambda: {**keywords, **tls}
    if source.secret_arn:
        arn = source.secret_arn
        tls = _tls(name, source.ssl_mode, source.ssl_ca, base_dir, managed=True)

        def from_secret() -> dict[str, Any]:
            secret = read_secret(arn)
            return {
                "host": source.host or secret["host"],
                "port": source.port or int(secret.get("port", MYSQL_PORT)),
                "database": source.database or secret.get("dbname") or secret.get("dbName"),
                "user": secret["username"],
                "password": secret["password"],
                **tls,
            }

        return from_secret
    if source.iam_auth:
        auth = source.iam_auth
        tls = _tls(name, source.ssl_mode, source.ssl_ca, base_dir, managed=True)
        return lambda: {
            "host": auth.host,
            "port": auth.port,
            "database": auth.database,
            "user": auth.user,
            "password": make_token(auth),
            **tls,
        }
    raise SourceNotConfigured(f"data source {name!r} has no connection (url_env, secret_arn or iam_auth)")


def _from_url(name: str, url: str) -> tuple[dict[str, Any], SslMode | None, str | None]:
    """PyMySQL's keywords of ``mysql://user:password@host:port/database?ssl_mode=…&ssl_ca=…``
    (``unix_socket=…`` for a socket), and the URL's TLS settings."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise SourceNotConfigured(f"data source {name!r}: its URL must start with mysql:// (or mariadb://)")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    keywords: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "port": parts.port or MYSQL_PORT,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "database": unquote(parts.path.lstrip("/")) or None,
    }
    if "unix_socket" in query:
        keywords["unix_socket"] = query["unix_socket"]
    mode = query.get("ssl_mode")
    try:
        ssl_mode = SslMode(mode.upper()) if mode else None
    except ValueError:
        raise SourceNotConfigured(f"data source {name!r}: its URL's ssl_mode {mode!r} is not one of MySQL's") from None
    return keywords, ssl_mode, query.get("ssl_ca")


def _tls(name: str, mode: SslMode | None, ca: str | None, base_dir: Path, *, managed: bool) -> dict[str, Any]:
    """PyMySQL's ``ssl`` keyword: an SSL context for the mode (none: no TLS unless the source
    is managed, which defaults to VERIFY_IDENTITY)."""
    mode = mode or (SslMode.VERIFY_IDENTITY if managed else None)
    if mode in (None, SslMode.DISABLED):
        return {"ssl_disabled": True} if mode is SslMode.DISABLED else {}
    if mode is SslMode.REQUIRED:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return {"ssl": context}
    root = ca or SYSTEM_ROOTS
    bundle = runtime_ca_bundle() if root == SYSTEM_ROOTS else str((base_dir / root).resolve())
    if bundle is None:
        raise ExportFailed(
            f'data source {name!r} verifies its server against the runtime\'s trust store (ssl_ca = "system"), '
            "and this runtime has no CA bundle: ship the server's CA bundle with the declaration (ssl_ca = "
            '"certs/<bundle>.pem") or set SSL_CERT_FILE',
            code=SourceCode.TLS_UNVERIFIED,
        )
    try:
        context = ssl.create_default_context(cafile=bundle)
    except (OSError, ssl.SSLError) as error:
        raise ExportFailed(
            f"data source {name!r}: the CA bundle of ssl_ca cannot be read ({type(error).__name__})",
            code=SourceCode.TLS_UNVERIFIED,
        ) from None
    context.check_hostname = mode is SslMode.VERIFY_IDENTITY
    return {"ssl": context}


def rds_token_maker(client_factory: ClientFactory) -> TokenMaker:
    """RDS IAM authentication tokens (valid 15 minutes; one is made per connection)."""

    def make(auth: MySqlIamAuth) -> str:
        return client_factory("rds").generate_db_auth_token(auth.host, auth.port, auth.user, Region=auth.region or None)

    return make
