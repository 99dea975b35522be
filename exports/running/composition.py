"""The worker function's composition root: its adapters on the shared boto3 clients."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from exports.accepting.admission_rules import Estimates
from exports.core.aws.clients import aws_client
from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.composition import capacity_pools
from exports.core.config.settings import (
    WorkerSettings,
)
from exports.export_types.composition import build_registry
from exports.running.dependencies import WorkerDependencies

if TYPE_CHECKING:
    from exports.core.ports import BusinessMetrics


def compose_worker(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> WorkerDependencies:
    """The worker's adapters on the shared boto3 clients; every task it runs needs its export
    type, so the registry is built at once."""
    from exports.accepting.dynamodb_admission import DynamoHotKeyLimiter, DynamoThroughputStats
    from exports.accepting.sqs_queue import SqsTaskQueue
    from exports.core.aws.eventbridge_events import EventBridgeEvents
    from exports.core.aws.s3_results import S3ResultStore
    from exports.core.aws.stepfunctions import StepFunctionsFanOut, StepFunctionsLifecycle
    from exports.running.dynamodb_source_slots import DynamoSourceSlots

    settings = WorkerSettings.from_env(environ)
    return WorkerDependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        queue=SqsTaskQueue(aws_client("sqs"), settings.queue_urls),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=build_registry(settings, environ),
        metrics=metrics,
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        limiter=DynamoHotKeyLimiter(
            aws_client("dynamodb"), settings.tasks_table, settings.hot_key_rate_per_minute, settings.hot_key_burst
        ),
        throughput=DynamoThroughputStats(aws_client("dynamodb"), settings.tasks_table, Estimates.SMOOTHING),
        slots=DynamoSourceSlots(aws_client("dynamodb"), settings.tasks_table),
        fan_out=StepFunctionsFanOut(aws_client("stepfunctions"), settings.fan_out_state_machine_arn),
        capacity=capacity_pools(settings.tasks_table),
        events=EventBridgeEvents(aws_client("events"), settings.event_bus),
    )
