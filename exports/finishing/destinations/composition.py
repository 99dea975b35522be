"""The destinations' composition: their adapters beside the API's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.core.aws.clients import aws_client

if TYPE_CHECKING:
    from exports.accepting.dependencies import ApiDependencies
    from exports.finishing.destinations.service import DestinationDependencies


def compose_destinations(api: ApiDependencies) -> DestinationDependencies:
    """The destinations' adapters beside the API's (docs/destinations.md): their table, their
    secrets in Secrets Manager, the SFTP client behind the webhooks' SSRF guard, the customers'
    S3 through STS, and the declaration's rules of who manages and uses them."""
    from exports.core.config.destinations import Destinations
    from exports.finishing.destinations.declaration import load_destination_access
    from exports.finishing.destinations.dynamodb_destinations import DynamoDestinationStore
    from exports.finishing.destinations.model import DestinationKind
    from exports.finishing.destinations.s3_destination import S3Destinations
    from exports.finishing.destinations.secrets_manager import SecretsManagerVault
    from exports.finishing.destinations.service import DestinationDependencies
    from exports.finishing.destinations.sftp_destination import SftpConnector

    settings = api.settings
    access, tenant_claim = load_destination_access(settings.exports_config)
    sftp = SftpConnector(api.resolve, allow_local=settings.allow_local_callbacks)
    s3 = S3Destinations(aws_client("sts"), aws_client.assumed_s3)
    return DestinationDependencies(
        store=DynamoDestinationStore(aws_client("dynamodb"), settings.destinations_table),
        vault=SecretsManagerVault(aws_client("secretsmanager")),
        access=access,
        tenant_of=lambda caller: caller.text(tenant_claim),
        tenant_claim=tenant_claim,
        host_keys=sftp,
        probes={DestinationKind.SFTP: sftp, DestinationKind.S3: s3},
        clock=api.clock,
        max_per_tenant=Destinations.MAX_PER_TENANT,
        metrics=api.metrics,
        principal_arn=settings.destination_principal_arn,
    )
