"""The delivery's adapters, built beside the callback function's own (the function the lifecycle
workflow's ``DeliverFiles`` state invokes): the task and the results it already reads, the
destinations table and their secrets, and each registered kind's adapter."""

from __future__ import annotations

from exports.core.aws.clients import aws_client
from exports.finishing.delivery.deliver import DeliveryDependencies
from exports.finishing.dependencies import CallbackDependencies


def compose_delivery(callback: CallbackDependencies) -> DeliveryDependencies:
    """Delivery through the callback function's adapters: each kind's (SFTP behind the same SSRF
    guard as its webhooks, and its ``allow_local_callbacks`` for local development; S3 through
    STS)."""
    from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
    from exports.finishing.delivery.notices import DeliveryWebhooks
    from exports.finishing.destinations.dynamodb_destinations import DynamoDestinationStore
    from exports.finishing.destinations.kind import KindContext
    from exports.finishing.destinations.registry import adapters
    from exports.finishing.destinations.secrets_manager import SecretsManagerVault

    settings = callback.settings
    return DeliveryDependencies(
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        destinations=DynamoDestinationStore(aws_client("dynamodb"), settings.destinations_table),
        vault=SecretsManagerVault(aws_client("secretsmanager")),
        results=callback.results,
        kinds=adapters(
            KindContext(
                resolve=callback.resolve,
                allow_local=settings.allow_local_callbacks,
                aws_client=aws_client,
                assumed_s3=aws_client.assumed_s3,
                # Deliveries assume the customers' roles; the principal they trust is the API's to show.
                principal_arn=None,
            )
        ),
        metrics=callback.metrics,
        clock=callback.clock,
        events=callback.events,
        notices=DeliveryWebhooks(callback),
        run_end=callback.run_end,
        # The callback function's trail (the mail's records): the declaration's [tenants] with it.
        audit=callback.run_end.audit if callback.run_end else None,
    )
