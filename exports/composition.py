"""Building the real adapters from the environment: one composition root per function.

Each handler's cached ``dependencies()`` calls its own root (``compose_api``, ``compose_worker``,
``compose_callback``, ``compose_lifecycle``), which reads that function's settings and builds
only the adapters that function uses, on the shared boto3 clients. Each root imports its own
adapters: every handler imports this module, and a function that does not build an adapter does
not import it either (the lifecycle function never loads the queue, the limiter, the declared
types' builder or the PostgreSQL adapters; tests/unit/test_cold_start.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_tasks import DynamoTaskRepository
from exports.config.limits import Admission
from exports.config.settings import ApiSettings, CallbackSettings, LifecycleSettings, RegistrySettings, WorkerSettings
from exports.domain.admission import Estimates
from exports.domain.errors import ExportsError
from exports.services.dependencies import (
    ApiDependencies,
    CallbackDependencies,
    LifecycleDependencies,
    WorkerDependencies,
    utc_now,
)

if TYPE_CHECKING:
    from exports.audit.service import AuditDependencies
    from exports.declared.build import BuiltTypes
    from exports.destinations.service import DestinationDependencies
    from exports.export_types.base import AnyExportType
    from exports.export_types.registry import ExportTypeRegistry
    from exports.ports import BusinessMetrics, CapacityPools, LifecycleEvents
    from exports.schedules.dependencies import ScheduleDependencies


class PowertoolsMetrics:
    """:class:`exports.ports.BusinessMetrics` on a Powertools ``Metrics`` (EMF) instance."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def add(
        self, name: str, value: float = 1, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        """Add a data point to the metrics flushed at the end of the invocation; one with its
        own ``dimensions`` is written at once as a metric of its own (EMF gives every metric of
        a record the same dimensions)."""
        if not dimensions:
            self._metrics.add_metric(name=name, unit=unit, value=value)
            return
        from aws_lambda_powertools import single_metric
        from aws_lambda_powertools.metrics import MetricUnit

        metric = single_metric(
            name=name,
            unit=MetricUnit(unit),
            value=value,
            namespace=self._metrics.namespace,
            default_dimensions=dict(dimensions),
        )
        with metric:  # written out as the block ends
            pass


def declared_export_types(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> list[AnyExportType]:
    """The export types of this deployment: the declaration file's, wired to their sources."""
    return built_export_types(settings, environ).types


def built_export_types(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> BuiltTypes:
    """The declaration file's export types wired to their sources (each source kind builds its
    readers on the shared clients), and those left out (a source this deployment gives no
    connection) with the reason."""
    from exports.declared.build import build_export_types
    from exports.declared.loader import default_path, load_declarations
    from exports.sources.kind import SourceReaders

    declarations = load_declarations(settings.exports_config or default_path(), settings.source_overrides)
    readers = SourceReaders(client=aws_client, environ=environ, settings=settings)
    return build_export_types(declarations, readers)


def build_registry(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> ExportTypeRegistry:
    """The registry of the declared export types, built now."""
    from exports.export_types.registry import ExportTypeRegistry

    return ExportTypeRegistry(declared_export_types(settings, environ))


def webhook_secret_provider(settings: CallbackSettings) -> Callable[[], str]:
    """The signing secret: given directly (local mode) or read, cached, from Secrets Manager."""
    from exports.webhooks.signing import SECRET_PREFIX

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


def lifecycle_events(bus: str | None) -> LifecycleEvents | None:
    """The lifecycle events' publisher on ``bus`` (None: the deployment names no bus)."""
    if not bus:
        return None
    from exports.adapters.eventbridge_events import EventBridgeEvents

    return EventBridgeEvents(aws_client("events"), bus)


def compose_api(
    metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ, settings_type: type[ApiSettings] = ApiSettings
) -> ApiDependencies:
    """The API function's adapters on the shared boto3 clients; the registry is built on the
    first request that needs an export type (a submit, a retry, the list of types). The schedule
    function builds the same submit path with ``settings_type`` ScheduleSettings."""
    from exports.adapters.dynamodb_admission import DynamoThroughputStats
    from exports.adapters.s3_results import S3ResultStore
    from exports.adapters.sqs_queue import SqsTaskQueue
    from exports.adapters.stepfunctions import StepFunctionsLifecycle
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


def capacity_pools(tasks_table: str) -> CapacityPools:
    """The capacity pools (admission by deadline) in the tasks table, their drain cached as
    long as :attr:`Admission.DRAIN_CACHE_SEC` allows."""
    from exports.adapters.dynamodb_capacity import DynamoCapacityPools

    return DynamoCapacityPools(
        aws_client("dynamodb"), tasks_table, Admission.DRAIN_SMOOTHING, Admission.DRAIN_CACHE_SEC
    )


def compose_audit(metrics: BusinessMetrics, table: str, exports_config: str | None) -> AuditDependencies:
    """The audit trail on its table, with the declaration's ``[tenants]`` (docs/audit.md)."""
    from exports.adapters.dynamodb_audit import DynamoAuditLog
    from exports.audit.service import AuditDependencies
    from exports.audit.tenancy import load_tenancy

    return AuditDependencies(
        log=DynamoAuditLog(aws_client("dynamodb"), table),
        tenancy=load_tenancy(exports_config),
        metrics=metrics,
        clock=utc_now,
    )


def compose_audit_function(
    metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ
) -> tuple[AuditDependencies, int]:
    """The audit function's trail, and the worker's memory its usage is measured by."""
    from exports.config.settings import AuditSettings

    settings = AuditSettings.from_env(environ)
    return compose_audit(metrics, settings.audit_table, settings.exports_config), settings.worker_memory_mb


def compose_worker(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> WorkerDependencies:
    """The worker's adapters on the shared boto3 clients; every task it runs needs its export
    type, so the registry is built at once."""
    from exports.adapters.dynamodb_admission import DynamoHotKeyLimiter, DynamoThroughputStats
    from exports.adapters.dynamodb_source_slots import DynamoSourceSlots
    from exports.adapters.eventbridge_events import EventBridgeEvents
    from exports.adapters.s3_results import S3ResultStore
    from exports.adapters.sqs_queue import SqsTaskQueue
    from exports.adapters.stepfunctions import StepFunctionsFanOut, StepFunctionsLifecycle

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


def compose_callback(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> CallbackDependencies:
    """The callback function's adapters: no registry, no queue, no limiter; the signing secret
    is read from Secrets Manager on the first delivery. A scheduled run's end is recorded on the
    schedules table, and mailed through SES when a sender is configured; its pause and mail in
    the audit trail when the deployment keeps one."""
    from exports.adapters.dynamodb_schedules import DynamoScheduleStore
    from exports.adapters.s3_results import S3ResultStore
    from exports.adapters.webhook_http import PinnedWebhookSender
    from exports.schedules.run_end import RunEndDependencies

    settings = CallbackSettings.from_env(environ)
    results = S3ResultStore(aws_client("s3"), settings.results_bucket)
    mailer = None
    if settings.mail_sender:
        from exports.adapters.ses_mailer import SesMailer

        mailer = SesMailer(aws_client("sesv2"))
    run_end = RunEndDependencies(
        schedules=DynamoScheduleStore(aws_client("dynamodb"), settings.schedules_table),
        mailer=mailer,
        sender=settings.mail_sender,
        allowed_domains=settings.allowed_mail_domains,
        results=results,
        clock=utc_now,
        # The pause after failures in a row and the run's mail, in the audit trail.
        audit=compose_audit(metrics, settings.audit_table, settings.exports_config) if settings.audit_table else None,
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


def compose_schedules(api: ApiDependencies) -> ScheduleDependencies:
    """The schedules' adapters beside the submit path's ``api`` (the API function's, the
    schedule function's): the schedules table and, when the deployment names its target and
    role, EventBridge Scheduler."""
    from exports.adapters.dynamodb_schedules import DynamoScheduleStore
    from exports.schedules.dependencies import ScheduleDependencies

    settings = api.settings
    timer = None
    if settings.schedule_target_arn and settings.scheduler_role_arn:
        from exports.adapters.eventbridge_scheduler import EventBridgeScheduleTimer

        timer = EventBridgeScheduleTimer(
            aws_client("scheduler"),
            settings.schedule_group,
            settings.schedule_target_arn,
            settings.scheduler_role_arn,
            settings.schedule_dlq_arn,
        )
    return ScheduleDependencies(
        api=api, schedules=DynamoScheduleStore(aws_client("dynamodb"), settings.schedules_table), timer=timer
    )


def compose_destinations(api: ApiDependencies) -> DestinationDependencies:
    """The destinations' adapters beside the API's (docs/destinations.md): their table, their
    secrets in Secrets Manager, the SFTP client behind the webhooks' SSRF guard, the customers'
    S3 through STS, and the declaration's rules of who manages and uses them."""
    from exports.adapters.dynamodb_destinations import DynamoDestinationStore
    from exports.adapters.s3_destination import S3Destinations
    from exports.adapters.secrets_manager import SecretsManagerVault
    from exports.adapters.sftp_destination import SftpConnector
    from exports.config.destinations import Destinations
    from exports.destinations.declaration import load_destination_access
    from exports.destinations.model import DestinationKind
    from exports.destinations.service import DestinationDependencies

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


def compose_lifecycle(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> LifecycleDependencies:
    """The lifecycle function's adapters: the tasks table and the lifecycle workflow."""
    from exports.adapters.stepfunctions import StepFunctionsLifecycle

    settings = LifecycleSettings.from_env(environ)
    return LifecycleDependencies(
        settings=settings,
        tasks=DynamoTaskRepository(aws_client("dynamodb"), settings.tasks_table),
        lifecycle=StepFunctionsLifecycle(aws_client("stepfunctions"), settings.state_machine_arn),
        metrics=metrics,
        capacity=capacity_pools(settings.tasks_table),
    )
