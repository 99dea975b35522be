"""Building the real adapters from settings: the composition root every handler uses."""

from __future__ import annotations

from typing import Any

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_orders import DynamoOrdersReader
from exports.adapters.dynamodb_tasks import DynamoTaskRepository
from exports.adapters.s3_results import S3ResultStore
from exports.adapters.sqs_queue import SqsTaskQueue
from exports.export_types.orders import OrdersExport
from exports.export_types.registry import ExportTypeRegistry
from exports.ports import BusinessMetrics
from exports.services.dependencies import Dependencies
from exports.settings import Settings


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


def build_dependencies(settings: Settings, metrics: BusinessMetrics) -> Dependencies:
    """Real adapters on the shared boto3 clients."""
    return Dependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        queue=SqsTaskQueue(aws_client("sqs"), settings.queue_url),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=build_registry(settings),
        metrics=metrics,
    )
