"""The callback and lifecycle functions' composition roots: their adapters on the shared boto3 clients."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from exports.audit.composition import compose_audit
from exports.core.aws.clients import aws_client
from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.clock import utc_now
from exports.core.composition import capacity_pools, lifecycle_events
from exports.core.config.settings import (
    CallbackSettings,
    LifecycleSettings,
)
from exports.finishing.dependencies import CallbackDependencies, LifecycleDependencies
from exports.finishing.webhooks.secret import webhook_secret_provider

if TYPE_CHECKING:
    from exports.core.ports import BusinessMetrics


def compose_callback(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> CallbackDependencies:
    """The callback function's adapters: no registry, no queue, no limiter; the signing secret
    is read from Secrets Manager on the first delivery. A scheduled run's end is recorded on the
    schedules table, and mailed through SES when a sender is configured, naming its
    destinations; its pause and mail in the audit trail when the deployment keeps one."""
    from exports.core.aws.s3_results import S3ResultStore
    from exports.finishing.destinations.dynamodb_destinations import DynamoDestinationStore
    from exports.finishing.schedule_run_end import RunEndDependencies
    from exports.finishing.webhooks.http import PinnedWebhookSender
    from exports.schedules.dynamodb_schedules import DynamoScheduleStore

    settings = CallbackSettings.from_env(environ)
    results = S3ResultStore(aws_client("s3"), settings.results_bucket)
    mailer = None
    if settings.mail_sender:
        from exports.finishing.ses_mailer import SesMailer

        mailer = SesMailer(aws_client("sesv2"))
    run_end = RunEndDependencies(
        schedules=DynamoScheduleStore(aws_client("dynamodb"), settings.schedules_table),
        mailer=mailer,
        sender=settings.mail_sender,
        allowed_domains=settings.allowed_mail_domains,
        results=results,
        attachment_max_bytes=settings.mail_attachment_max_bytes,
        clock=utc_now,
        # The pause after failures in a row and the run's mail, in the audit trail.
        audit=compose_audit(metrics, settings.audit_table, settings.exports_config) if settings.audit_table else None,
        # The run's mail names its destinations by their names (the function may read them).
        destinations=DynamoDestinationStore(aws_client("dynamodb"), settings.destinations_table),
    )
    return CallbackDependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        results=results,
        metrics=metrics,
        webhooks=PinnedWebhookSender(),
        webhook_secret=webhook_secret_provider(settings),
        run_end=run_end,
        events=lifecycle_events(settings.event_bus),
    )


def compose_lifecycle(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> LifecycleDependencies:
    """The lifecycle function's adapters: the tasks table and the lifecycle workflow."""
    from exports.core.aws.stepfunctions import StepFunctionsLifecycle

    settings = LifecycleSettings.from_env(environ)
    return LifecycleDependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        metrics=metrics,
        capacity=capacity_pools(settings.tasks_table),
    )
