"""The API function's composition root: its adapters on the shared boto3 clients."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from exports.accepting.admission_rules import Estimates
from exports.accepting.dependencies import ApiDependencies
from exports.audit.composition import compose_audit
from exports.core.aws.clients import aws_client
from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.composition import capacity_pools, lifecycle_events
from exports.core.config.settings import (
    ApiSettings,
)
from exports.export_types.composition import declared_export_types

if TYPE_CHECKING:
    from exports.core.ports import BusinessMetrics


def compose_api(
    metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ, settings_type: type[ApiSettings] = ApiSettings
) -> ApiDependencies:
    """The API function's adapters on the shared boto3 clients; the registry is built on the
    first request that needs an export type (a submit, a retry, the list of types). The schedule
    function builds the same submit path with ``settings_type`` ScheduleSettings."""
    from exports.accepting.dynamodb_admission import DynamoThroughputStats
    from exports.accepting.sqs_queue import SqsTaskQueue
    from exports.core.aws.s3_results import S3ResultStore
    from exports.core.aws.stepfunctions import StepFunctionsLifecycle
    from exports.export_types.registry import ExportTypeRegistry

    settings = settings_type.from_env(environ)
    audit = None
    if settings.audit_table:
        audit = compose_audit(metrics, settings.audit_table, settings.exports_config)
    return ApiDependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        queue=SqsTaskQueue(aws_client("sqs"), settings.queue_urls),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=ExportTypeRegistry.on_first_use(lambda: declared_export_types(settings, environ)),
        metrics=metrics,
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        throughput=DynamoThroughputStats(aws_client("dynamodb"), settings.tasks_table, Estimates.SMOOTHING),
        capacity=capacity_pools(settings.tasks_table),
        audit=audit,
        events=lifecycle_events(settings.event_bus),
    )
