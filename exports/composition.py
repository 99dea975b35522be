"""Building the real adapters from settings: the composition root every handler uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_orders import DynamoOrdersReader
from exports.adapters.dynamodb_tasks import DynamoTaskRepository
from exports.adapters.s3_results import S3ResultStore
from exports.adapters.sqs_queue import SqsTaskQueue
from exports.adapters.stepfunctions import StepFunctionsLifecycle
from exports.adapters.webhook_http import PinnedWebhookSender
from exports.domain.errors import ExportsError
from exports.export_types.orders import OrdersExport
from exports.export_types.registry import ExportTypeRegistry
from exports.ports import BusinessMetrics
from exports.services.dependencies import Dependencies
from exports.settings import Settings
from exports.webhooks.signing import SECRET_PREFIX


class PowertoolsMetrics:
    """:class:`exports.ports.BusinessMetrics` on a Powertools ``Metrics`` (EMF) instance."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def add(self, name: str, value: float = 1, unit: str = "Count") -> None:
        """Add a data point to the metrics flushed at the end of the invocation."""
        self._metrics.add_metric(name=name, unit=unit, value=value)


def build_registry(settings: Settings) -> ExportTypeRegistry:
    """The export types of this deployment, wired to their data sources."""
    return ExportTypeRegistry([OrdersExport(DynamoOrdersReader(aws_client("dynamodb"), settings.orders_table))])


def webhook_secret_provider(settings: Settings) -> Callable[[], str]:
    """The signing secret: given directly (local mode) or read, cached, from Secrets Manager."""
    if settings.webhook_secret:
        secret = settings.webhook_secret
        return lambda: secret
    if settings.webhook_secret_arn:
        arn = settings.webhook_secret_arn

        def from_secrets_manager() -> str:
            from aws_lambda_powertools.utilities.parameters import get_secret

            # Secrets Manager generates the base64 key; the whsec_ prefix is the format's, not ours.
            value = str(get_secret(arn, max_age=300))
            return value if value.startswith(SECRET_PREFIX) else SECRET_PREFIX + value

        return from_secrets_manager

    def missing() -> str:
        raise ExportsError("no webhook secret is configured")

    return missing


def build_dependencies(settings: Settings, metrics: BusinessMetrics) -> Dependencies:
    """Real adapters on the shared boto3 clients."""
    return Dependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        queue=SqsTaskQueue(aws_client("sqs"), settings.queue_url),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=build_registry(settings),
        metrics=metrics,
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        webhooks=PinnedWebhookSender(),
        webhook_secret=webhook_secret_provider(settings),
    )
