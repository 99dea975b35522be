"""Building the real adapters from settings: the composition root every handler uses."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_admission import DynamoHotKeyLimiter, DynamoThroughputStats
from exports.adapters.dynamodb_customers import DynamoCustomersReader
from exports.adapters.dynamodb_orders import DynamoOrdersReader
from exports.adapters.dynamodb_tasks import DynamoTaskRepository
from exports.adapters.s3_results import S3ResultStore
from exports.adapters.sqs_queue import SqsTaskQueue
from exports.adapters.stepfunctions import StepFunctionsLifecycle
from exports.adapters.webhook_http import PinnedWebhookSender
from exports.config import Estimates
from exports.domain.errors import ExportsError
from exports.export_types.customers import CustomersExport
from exports.export_types.orders import OrdersExport
from exports.export_types.registry import ExportTypeRegistry
from exports.export_types.sales_report import SalesReportExport
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
    dynamodb = aws_client("dynamodb")
    orders = DynamoOrdersReader(dynamodb, settings.orders_table)
    customers = DynamoCustomersReader(dynamodb, settings.customers_table)
    return ExportTypeRegistry([OrdersExport(orders), CustomersExport(customers), SalesReportExport(orders)])


def webhook_secret_provider(settings: Settings) -> Callable[[], str]:
    """The signing secret: given directly (local mode) or read, cached, from Secrets Manager."""
    if settings.webhook_secret:
        secret = settings.webhook_secret
        return lambda: secret
    if settings.webhook_secret_arn:
        arn = settings.webhook_secret_arn

        providers: list[Any] = []

        def from_secrets_manager() -> str:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            # On the shared Session's client (Powertools' get_secret would build a Session of its
            # own); the provider keeps the value for max_age seconds.
            if not providers:
                providers.append(SecretsProvider(boto3_client=aws_client("secretsmanager")))
            # Secrets Manager generates the base64 key; the whsec_ prefix is the format's, not ours.
            value = str(providers[0].get(arn, max_age=300))
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
        queue=SqsTaskQueue(aws_client("sqs"), settings.queue_urls),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=build_registry(settings),
        metrics=metrics,
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        webhooks=PinnedWebhookSender(),
        webhook_secret=webhook_secret_provider(settings),
        limiter=DynamoHotKeyLimiter(
            aws_client("dynamodb"), settings.tasks_table, settings.hot_key_rate_per_minute, settings.hot_key_burst
        ),
        throughput=DynamoThroughputStats(aws_client("dynamodb"), settings.tasks_table, Estimates.SMOOTHING),
    )


def dependencies_from_environment(metrics: Any) -> Dependencies:
    """What every handler's cached ``dependencies()`` builds: settings from the environment the
    CDK app (or local mode) sets, adapters on the shared clients, metrics on Powertools."""
    return build_dependencies(Settings.from_env(os.environ), PowertoolsMetrics(metrics))
