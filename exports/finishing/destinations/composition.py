"""The destinations' composition: their adapters beside the API's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.core.aws.clients import aws_client

if TYPE_CHECKING:
    from exports.accepting.dependencies import ApiDependencies
    from exports.finishing.destinations.service import DestinationDependencies


def compose_destinations(api: ApiDependencies) -> DestinationDependencies:
    """The destinations' adapters beside the API's (docs/destinations.md): their table, their
    secrets in Secrets Manager, each registered kind's adapter (SFTP behind the webhooks' SSRF
    guard, the customers' S3 through STS), and the declaration's rules of who manages and uses
    them."""
    from exports.core.config.destinations import Destinations
    from exports.finishing.destinations.declaration import load_destination_access
    from exports.finishing.destinations.dynamodb_destinations import DynamoDestinationStore
    from exports.finishing.destinations.kind import KindContext
    from exports.finishing.destinations.registry import adapters
    from exports.finishing.destinations.secrets_manager import SecretsManagerVault
    from exports.finishing.destinations.service import DestinationDependencies

    settings = api.settings
    access, tenant_claim = load_destination_access(settings.exports_config)
    context = KindContext(
        resolve=api.resolve,
        allow_local=settings.allow_local_callbacks,
        aws_client=aws_client,
        assumed_s3=aws_client.assumed_s3,
        principal_arn=settings.destination_principal_arn,
    )
    return DestinationDependencies(
        store=DynamoDestinationStore(aws_client("dynamodb"), settings.destinations_table),
        vault=SecretsManagerVault(aws_client("secretsmanager")),
        access=access,
        tenant_of=lambda caller: caller.text(tenant_claim),
        tenant_claim=tenant_claim,
        kinds=adapters(context),
        clock=api.clock,
        max_per_tenant=Destinations.MAX_PER_TENANT,
        metrics=api.metrics,
        principal_arn=settings.destination_principal_arn,
    )
