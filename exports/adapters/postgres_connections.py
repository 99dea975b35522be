"""How a declared PostgreSQL source connects: libpq keywords from a URI in the environment, an
RDS secret in Secrets Manager, or an RDS IAM authentication token.

TLS: a source reached through a secret or IAM defaults to ``sslmode=verify-full`` against the
runtime's trust store (``sslrootcert=system``, which RDS Proxy's certificates chain to); a
database that presents the RDS CA's certificates needs that CA's bundle shipped with the
declaration (``sslrootcert = "certs/rds-global-bundle.pem"``, relative to the declaration file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from exports.declared.model import IamAuth, PostgresSource, SslMode
from exports.domain.errors import ExportsError
from exports.ports import ConnectionSettings

SecretReader = Callable[[str], Mapping[str, Any]]
TokenMaker = Callable[[IamAuth], str]


class SourceNotConfigured(ExportsError):
    """A source's connection cannot be built (its environment variable is not set)."""

    code = "SOURCE_NOT_CONFIGURED"


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
                "host": secret["host"],
                "port": int(secret.get("port", 5432)),
                "dbname": secret.get("dbname") or secret.get("dbName") or "postgres",
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
    root = source.sslrootcert or ("system" if mode in (SslMode.VERIFY_CA, SslMode.VERIFY_FULL) else None)
    if root is not None:
        settings["sslrootcert"] = root if root == "system" else str((base_dir / root).resolve())
    return settings


def secrets_manager_reader(client_factory: Callable[[str], Any]) -> SecretReader:
    """Read an RDS-shaped JSON secret, cached for five minutes (rotations are picked up)."""

    def read(arn: str) -> Mapping[str, Any]:
        from aws_lambda_powertools.utilities.parameters import get_secret

        value = get_secret(arn, transform="json", max_age=300, boto3_client=client_factory("secretsmanager"))
        if not isinstance(value, Mapping):
            raise SourceNotConfigured(f"secret {arn} does not hold a JSON object")
        return value

    return read


def rds_token_maker(client_factory: Callable[[str], Any]) -> TokenMaker:
    """RDS IAM authentication tokens (valid 15 minutes; one is made per connection)."""

    def make(auth: IamAuth) -> str:
        client = client_factory("rds")
        kwargs: dict[str, Any] = {"DBHostname": auth.host, "Port": auth.port, "DBUsername": auth.user}
        if auth.region:
            kwargs["Region"] = auth.region
        return str(client.generate_db_auth_token(**kwargs))

    return make
