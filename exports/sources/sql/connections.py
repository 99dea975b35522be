"""What the SQL kinds share to connect: a source this deployment gives no connection, the
runtime's CA bundle, and Secrets Manager secrets in RDS's JSON shape."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from exports.core.errors import ExportsError

if TYPE_CHECKING:
    from exports.core.aws.clients import ClientFactory


SecretReader = Callable[[str], Mapping[str, Any]]


def secrets_manager_reader(client_factory: ClientFactory) -> SecretReader:
    """Read an RDS-shaped JSON secret, cached for five minutes (rotations are picked up)."""
    providers: list[Any] = []  # one provider (and its cache) per reader, made on first use

    def read(arn: str) -> Mapping[str, Any]:
        from aws_lambda_powertools.utilities.parameters import SecretsProvider

        # The client goes to the provider: get_secret() would pass it on to GetSecretValue as a
        # parameter, which botocore refuses.
        if not providers:
            providers.append(SecretsProvider(boto3_client=client_factory("secretsmanager")))
        value = providers[0].get(arn, transform="json", max_age=300)
        if not isinstance(value, Mapping):
            raise SourceNotConfigured(f"secret {arn} does not hold a JSON object")
        return value

    return read


class SourceNotConfigured(ExportsError):
    """A source's connection cannot be built (its environment variable is not set)."""

    code = "SOURCE_NOT_CONFIGURED"


def runtime_ca_bundle() -> str | None:
    """The CA bundle of the runtime's own OpenSSL, the one the interpreter's ``ssl`` module is
    linked against: ``SSL_CERT_FILE`` if set, else the OS's bundle (``/etc/pki/tls/cert.pem``
    on Lambda's Amazon Linux 2023, kept current with the runtime and holding the Amazon roots
    RDS Proxy chains to). None when there is no such file."""
    return ssl.get_default_verify_paths().cafile
