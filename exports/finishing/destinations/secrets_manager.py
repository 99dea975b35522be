"""Destinations' secrets in Secrets Manager: one secret per destination, named
``<DESTINATION_SECRET_PREFIX><destination id>`` and tagged with the id, so an IAM policy can
grant the functions that prefix and nothing else of the account's secrets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.core.aws.errors import AwsError, translated
from exports.core.config.destinations import Destinations
from exports.core.config.names import Names
from exports.finishing.destinations.ports import SecretMissing
from exports.finishing.destinations.secrets import DestinationSecrets

if TYPE_CHECKING:
    from types_boto3_secretsmanager import SecretsManagerClient

_NOT_FOUND = "ResourceNotFoundException"
_EXISTS = "ResourceExistsException"
# Secrets Manager's answer for a secret scheduled for deletion.
_INVALID = "InvalidRequestException"
DESTINATION_TAG = "exports:destination_id"


def secret_name(destination_id: str, prefix: str = Names.DESTINATION_SECRET_PREFIX) -> str:
    """The name of the destination's secret."""
    return f"{prefix}{destination_id}"


class SecretsManagerVault:
    """:class:`exports.finishing.destinations.ports.SecretVault` on Secrets Manager."""

    def __init__(self, client: SecretsManagerClient, prefix: str = Names.DESTINATION_SECRET_PREFIX) -> None:
        self._client = client
        self._prefix = prefix

    def put(self, destination_id: str, secrets: DestinationSecrets) -> str:
        """Create the secret, or put a new version when it exists (a retried create, a change);
        its ARN."""
        name = secret_name(destination_id, self._prefix)
        try:
            with translated("create destination secret"):
                created = self._client.create_secret(
                    Name=name,
                    SecretString=secrets.stored(),
                    Description="Credentials of an exports delivery destination",
                    Tags=[{"Key": DESTINATION_TAG, "Value": destination_id}],
                )
            return created["ARN"]
        except AwsError as error:
            if error.aws_code != _EXISTS:
                raise
        with translated("update destination secret"):
            updated = self._client.put_secret_value(SecretId=name, SecretString=secrets.stored())
        return updated["ARN"]

    def get(self, secret_ref: str) -> DestinationSecrets:
        """The secrets (their current version)."""
        try:
            with translated("read destination secret"):
                value = self._client.get_secret_value(SecretId=secret_ref)
        except AwsError as error:
            if error.aws_code in (_NOT_FOUND, _INVALID):
                message = "the destination's credentials are gone; set them again"
                raise SecretMissing(message, secret_ref=secret_ref) from None
            raise
        return DestinationSecrets.from_stored(value["SecretString"])

    def delete(self, secret_ref: str) -> None:
        """Deleted after the recovery window (restorable meanwhile, from the console)."""
        try:
            with translated("delete destination secret"):
                self._client.delete_secret(SecretId=secret_ref, RecoveryWindowInDays=Destinations.SECRET_RECOVERY_DAYS)
        except AwsError as error:
            if error.aws_code not in (_NOT_FOUND, _INVALID):  # gone, or its deletion scheduled already
                raise
