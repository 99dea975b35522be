"""The service's Lambda functions, their environment and the exact permissions each one uses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, cast

from aws_cdk import ArnFormat, Aws, CfnElement, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from exports.core.config.audit import Audit
from exports.core.config.env import Env
from exports.core.config.names import Names
from exports.core.config.push import Push
from exports.core.config.results import Results
from exports.core.config.schedules import Schedules
from exports.core.config.settings import (
    ApiSettings,
    AuditSettings,
    CallbackSettings,
    LifecycleSettings,
    PushSettings,
    RegistrySettings,
    ScheduleSettings,
    WorkerSettings,
)
from exports.core.config.tables import SchedulesTable, TaskTable
from exports.core.config.worker import Worker, XlsxLimits
from exports.sources.kind import InvokeGrant
from exports.sources.registry import reader_distributions
from infra.events import LifecycleEventBus
from infra.function_factory import FunctionSpec, ServiceFunction
from infra.nag import acknowledge
from infra.networking import DeliveryNetwork, place_in_vpc
from infra.packaging import PDF_FONT_FILES
from infra.queues import TaskQueues
from infra.schedules import ScheduledExports
from infra.secrets import WebhookSecret
from infra.settings import AdmissionLimits, StageSettings, WorkerVpc
from infra.sizing import Sizing
from infra.sources import DeclaredSources
from infra.storage import ResultsStorage
from infra.tables import Tables

COLON: Final = ArnFormat.COLON_RESOURCE_NAME
SLASH: Final = ArnFormat.SLASH_RESOURCE_NAME
# Runtime dependencies by function: each package carries only what its code imports
# (tests/infra/test_infra_bundling.py imports every handler and compares).
# urllib3 at the version pyproject pins: botocore uses it, and so does the callback sender, directly
# (every handler imports it through the composition root).
_BASE: Final = ("aws-lambda-powertools", "boto3", "pydantic", "urllib3")
# What functions that write tasks add: the module of every task write (exports/core/task_writes.py)
# retries state changes with it.
_RETRIES: Final = "tenacity"
# What functions that build the export-type registry add: declared string patterns run on RE2
# (exports/declared/parameters.py), imported when the registry is built, not at cold start.
_PATTERNS: Final = "google-re2"

# Destinations' host keys and probes: asyncssh (and its cryptography, which makes the key pairs).
_DESTINATIONS: Final = "asyncssh"
# Encryption at delivery (the callback function's): OpenPGP (Sequoia) and AES-256 ZIP.
_ENCRYPTION: Final = ("pysequoia", "pyzipper")
API: Final = FunctionSpec(
    name="submit",
    description="exports HTTP API: submit, read, list and download exports",
    memory_mb=Sizing.API_MEMORY_MB,
    timeout_sec=Sizing.API_TIMEOUT_SEC,
    # python-ulid makes task and schedule ids, which only submits (here and in the schedule
    # function, which ships the same) create.
    distributions=(*_BASE, "python-ulid", _RETRIES, _PATTERNS, "cronsim", "tzdata", _DESTINATIONS),
    runtime_settings=ApiSettings,
    # Every request waits for its cold start: restored from a snapshot (docs/performance.md).
    snap_start=True,
)
WORKER: Final = FunctionSpec(
    name="worker",
    description="exports worker: runs queued export tasks and streams the files to S3",
    memory_mb=Sizing.WORKER_MEMORY_MB,
    timeout_sec=Worker.FUNCTION_TIMEOUT_SEC,
    # openpyxl (which writes through lxml when it is there) is imported on the XLSX path only;
    # task ids are only recognised here, never made, so no python-ulid.
    # The registered source kinds' drivers (reader_distributions: each kind names its own); the
    # API builds the same registry without importing them. ISA-L deflates XLSX entries, zlib-ng
    # csv.gz; orjson serialises JSON Lines rows; fontTools subsets the PDF font (PDF path only);
    # pyarrow writes Parquet, imported on that path only (its size: docs/performance.md,
    # "Package sizes").
    distributions=(
        *_BASE,
        _RETRIES,
        _PATTERNS,
        "openpyxl",
        "lxml",
        *reader_distributions(),
        "zlib-ng",
        "isal",
        "orjson",
        "fonttools",
        "pyarrow",
        "tzdata",
    ),
    runtime_settings=WorkerSettings,
    # openpyxl keeps each sheet of a workbook in /tmp until it is saved.
    ephemeral_storage_mib=XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB,
    # The only function that writes PDF: the font goes into no other package.
    shared_data=(PDF_FONT_FILES,),
)
LIFECYCLE: Final = FunctionSpec(
    name="lifecycle",
    description="exports lifecycle: stores a task's workflow token, times tasks out at their deadline",
    memory_mb=Sizing.LIFECYCLE_MEMORY_MB,
    timeout_sec=Sizing.LIFECYCLE_TIMEOUT_SEC,
    distributions=(*_BASE, _RETRIES),
    runtime_settings=LifecycleSettings,
    reserved_concurrency=Sizing.LIFECYCLE_RESERVED_CONCURRENCY,
)
CALLBACK: Final = FunctionSpec(
    name="callback",
    description="exports callback: sends an ended task's signed callbacks and delivers its file to destinations",
    memory_mb=Sizing.CALLBACK_MEMORY_MB,
    timeout_sec=Sizing.CALLBACK_TIMEOUT_SEC,
    # The payload's download link goes through the same query code as the API (task id checks);
    # the callback states are written by the module of every task write; SFTP deliveries use asyncssh.
    distributions=(*_BASE, _RETRIES, "tzdata", _DESTINATIONS, *_ENCRYPTION),
    runtime_settings=CallbackSettings,
    reserved_concurrency=Sizing.CALLBACK_RESERVED_CONCURRENCY,
)
# The push channel (docs/push.md): the WebSocket API's routes, and the tasks stream's consumer. Both
# check a task's tenancy-bound values with the registry; $connect verifies JWTs with PyJWT.
STREAM: Final = FunctionSpec(
    name="stream",
    description="exports push channel: the WebSocket API's $connect, $disconnect and client messages",
    memory_mb=Sizing.PUSH_MEMORY_MB,
    timeout_sec=Sizing.PUSH_ROUTE_TIMEOUT_SEC,
    distributions=(*_BASE, _PATTERNS, "pyjwt"),
    runtime_settings=PushSettings,
    # A browser's WebSocket open waits for $connect's cold start: restored from a snapshot.
    snap_start=True,
)
PUSH: Final = FunctionSpec(
    name="push",
    description="exports push function: task writes from the tasks stream to the WebSocket connections",
    memory_mb=Sizing.PUSH_MEMORY_MB,
    timeout_sec=Push.FUNCTION_TIMEOUT_SEC,
    distributions=(*_BASE, _PATTERNS),
    runtime_settings=PushSettings,
)
# Scheduled exports (docs/schedules.md): EventBridge Scheduler invokes it at each firing, and it
# submits the run as the API's submit path does (the same settings, registry and admission).
SCHEDULE: Final = FunctionSpec(
    name="schedule",
    description="exports schedule function: submits the export task of one firing of a schedule",
    memory_mb=Sizing.SCHEDULE_MEMORY_MB,
    timeout_sec=Schedules.FUNCTION_TIMEOUT_SEC,
    # The API's, without asyncssh: only the destination routes (host keys, probes) use it.
    distributions=tuple(name for name in API.distributions if name != _DESTINATIONS),
    runtime_settings=ScheduleSettings,
    reserved_concurrency=Sizing.SCHEDULE_RESERVED_CONCURRENCY,
)
# The audit trail (docs/audit.md): the tasks stream's second consumer, appending each export's
# records and usage to the audit table; it reads the declaration's [tenants] (retention).
AUDIT: Final = FunctionSpec(
    name="audit",
    description="exports audit function: task writes from the tasks stream to the audit trail and usage",
    memory_mb=Sizing.AUDIT_MEMORY_MB,
    timeout_sec=Audit.FUNCTION_TIMEOUT_SEC,
    distributions=_BASE,
    runtime_settings=AuditSettings,
)
SPECS: Final = (API, WORKER, LIFECYCLE, CALLBACK, STREAM, PUSH, SCHEDULE, AUDIT)


def env_number(value: float) -> str:
    """A number as an environment value: ``20`` rather than ``20.0`` when it is whole."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def api_limits(limits: AdmissionLimits) -> dict[str, str]:
    """The admission limits the API applies at submit: the per-user quota and the backlog."""
    return {
        Env.MAX_ACTIVE_TASKS_PER_USER: env_number(limits.max_active_tasks_per_user),
        Env.MAX_BACKLOG: env_number(limits.max_backlog),
    }


def worker_limits(limits: AdmissionLimits) -> dict[str, str]:
    """The admission limits the worker applies: the hot-key token bucket."""
    return {
        Env.HOT_KEY_RATE_PER_MINUTE: env_number(limits.hot_key_rate_per_minute),
        Env.HOT_KEY_BURST: env_number(limits.hot_key_burst),
    }


# Read, write and delete single items of the tasks table (the API and the worker).
TASK_ITEM_ACTIONS: Final = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
# The schedules table's items (a schedule, its firings' records; transactions and condition
# checks are authorized per item by these actions too).
SCHEDULE_ITEM_ACTIONS: Final = [*TASK_ITEM_ACTIONS, "dynamodb:ConditionCheckItem"]
# A destination's secret: created, replaced, read (verify), deleted with its destination.
DESTINATION_SECRET_ACTIONS: Final = [
    "secretsmanager:CreateSecret",
    "secretsmanager:PutSecretValue",
    "secretsmanager:GetSecretValue",
    "secretsmanager:DeleteSecret",
    "secretsmanager:TagResource",
]


@dataclass(frozen=True)
class ResourceArns:
    """What the functions are granted on, as IAM resources (tokens until deployed)."""

    tasks_table: str
    tasks_by_user: str
    schedules_table: str
    schedules_by_user: str
    task_queues: list[str]
    results: str
    bucket: str
    lifecycle: str
    fan_out: str
    redelivery: str
    webhook_secret: str


class ServiceFunctions(Construct):
    """The API function, the queue worker, and the two functions of the lifecycle workflow.

    The lifecycle state machine invokes the lifecycle and callback functions, and the API, the
    worker and the lifecycle function call it (start an execution, hand a task's outcome to it):
    they know it by ``lifecycle_state_machine_arn``, an ARN built from its fixed name, so neither
    side of that circle refers to the other's resource.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        tables: Tables,
        queues: TaskQueues,
        storage: ResultsStorage,
        webhook_secret: WebhookSecret,
        lifecycle_state_machine_arn: str,
        fan_out_state_machine_arn: str,
        redelivery_state_machine_arn: str,
        sources: DeclaredSources,
        scheduling: ScheduledExports,
        event_bus: LifecycleEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        # Every variable the stack has a value for; each function gets the ones its settings read
        # (FunctionSpec.own_environment), so no function carries another's.
        available = {
            Env.TASKS_TABLE: tables.tasks.table_name,
            Env.CONNECTIONS_TABLE: tables.connections.table_name,
            Env.TASK_QUEUE_URLS: queues.urls_json(),
            Env.RESULTS_BUCKET: storage.bucket.bucket_name,
            Env.DOWNLOAD_URL_TTL_SEC: str(Results.DOWNLOAD_URL_TTL_SEC),
            Env.RETENTION_HOURS: str(settings.results_retention_hours),
            Env.LIFECYCLE_STATE_MACHINE_ARN: lifecycle_state_machine_arn,
            **api_limits(settings.admission),
            **worker_limits(settings.admission),
            Env.FAN_OUT_STATE_MACHINE_ARN: fan_out_state_machine_arn,
            Env.REDELIVERY_STATE_MACHINE_ARN: redelivery_state_machine_arn,
            Env.MAX_PARTITIONS: str(settings.max_partitions),
            Env.PARTITION_ROWS: str(settings.partition_rows),
            Env.WEBHOOK_SECRET_ARN: webhook_secret.secret_arn,
            **sources.environment(),
            Env.SCHEDULES_TABLE: tables.schedules.table_name,
            **scheduling.environment(),
            Env.AUDIT_TABLE: tables.audit.table_name,
            Env.WORKER_MEMORY_MB: str(Sizing.worker_memory_mb(settings.max_partitions)),
            Env.EVENT_BUS: event_bus.bus.event_bus_name,
            Env.DESTINATIONS_TABLE: tables.destinations.table_name,
            # Customers' S3 roles trust this account with their destination's ExternalId (the
            # form Stripe Data Pipeline and others use); only functions granted sts:AssumeRole act.
            Env.DESTINATION_PRINCIPAL_ARN: f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:root",
        }
        # The stack's own tables that declared types name by variable (table_env): the functions
        # that build the registry get those variables, no settings read them.
        declared_tables = {
            variable: table for variable, table in tables.by_variable().items() if variable in sources.table_variables()
        }
        registry_environment = {variable: table.table_name for variable, table in declared_tables.items()}
        packaged = sources.packaged_files()

        def service_function(
            construct_id: str, spec: FunctionSpec, function_name: str | None = None
        ) -> ServiceFunction:
            builds_registry = issubclass(spec.runtime_settings, RegistrySettings)
            # The declaration (and its CA bundles) where the registry is built; the declaration
            # alone where only its [tenants] is read (the callback function's audit records).
            reads_declaration = Env.EXPORTS_CONFIG in spec.runtime_settings.variables()
            return ServiceFunction(
                self,
                construct_id,
                spec=spec,
                settings=settings,
                environment={**spec.own_environment(available), **(registry_environment if builds_registry else {})},
                extra_files=packaged if builds_registry else (sources.declaration_file(),) if reads_declaration else (),
                function_name=function_name,
            )

        # Every variable the stack has a value for (each function takes what its settings read).
        self.environment: dict[str, str] = available
        self.api = service_function("Api", API)
        # Sized for the stage's largest split export (the assembler holds every segment's ends).
        self.worker = service_function(
            "Worker", replace(WORKER, memory_mb=Sizing.worker_memory_mb(settings.max_partitions))
        )
        self.lifecycle = service_function("Lifecycle", LIFECYCLE)
        self.callback = service_function("Callback", CALLBACK)
        # Their WebSocket endpoints, JWT issuer and permissions: infra/push.py.
        self.stream = service_function("Stream", STREAM)
        self.push = service_function("Push", PUSH)
        # Named, so that its ARN (the schedules' target, Env.SCHEDULE_TARGET_ARN) is known to the
        # functions that create or update schedules, itself included, without a reference to it.
        self.schedule = service_function("Schedule", SCHEDULE, scheduling.target_name)
        # Its stream mapping and the audit table's grants: infra/audit.py.
        self.audit = service_function("Audit", AUDIT)
        # The tasks table also holds the admission items (quota counters, dedup markers, hot-key
        # token buckets, throughput statistics, Idempotency-Key records). TransactWriteItems is
        # authorized per item by the action of each item (PutItem, UpdateItem).
        arns = ResourceArns(
            tasks_table=tables.tasks.table_arn,
            tasks_by_user=Tables.index_arn(tables.tasks, TaskTable.USER_INDEX),
            schedules_table=tables.schedules.table_arn,
            schedules_by_user=Tables.index_arn(tables.schedules, SchedulesTable.USER_INDEX),
            task_queues=[queue.queue_arn for queue in queues.task_queues],
            results=storage.results_objects_arn(),
            bucket=storage.bucket.bucket_arn,
            lifecycle=lifecycle_state_machine_arn,
            fan_out=fan_out_state_machine_arn,
            redelivery=redelivery_state_machine_arn,
            webhook_secret=webhook_secret.secret_arn,
        )
        self._grant_api(arns)
        self._grant_destinations(tables.destinations.table_arn)
        self._grant_scheduling(arns, scheduling)
        self._grant_worker(
            arns,
            queues,
            [(declared_tables[name], index) for name, index in sources.table_indexes() if name in declared_tables],
        )
        self._reach_declared_sources(sources, settings)
        self._grant_lifecycle(arns)
        self._grant_callback(arns)
        # A fixed egress address for customers' allowlists
        # (docs/destinations.md#egress-where-our-connections-come-from).
        self.delivery_network = (
            DeliveryNetwork(self, "DeliveryNetwork", function=self.callback, vpc=settings.delivery_vpc)
            if settings.delivery_vpc is not None
            else None
        )
        # Lifecycle events (docs/events.md): created (API, schedule function), completed and failed
        # (worker), delivered and schedule paused (callback; paused also by the schedule function).
        for function in (self.api, self.worker, self.callback, self.schedule):
            event_bus.allow_publishing(function)

        # cdk-nag names a wildcard resource after the bucket's logical id.
        bucket_id = Stack.of(self).get_logical_id(cast(CfnElement, storage.bucket.node.default_child))
        for function in (self.api, self.worker, self.callback, self.stream, self.push):
            acknowledge(
                function.role,
                f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{Results.KEY_PREFIX}/*]",
                f"Result files have keys per task and attempt under {Results.KEY_PREFIX}/; "
                "the grant covers that prefix only.",
            )

    def _grant_api(self, arns: ResourceArns) -> None:
        """API: create a task in one transaction with its quota count and dedup marker (Put +
        Update), read tasks and statistics, end a cancelled or unqueueable task (UpdateItem,
        DeleteItem of its dedup marker), keep Idempotency-Key records (Put, Get, Update,
        Delete), list a user's tasks; queue new tasks on their lane and read the lanes' depths
        (backpressure, estimates); sign download links (a presigned GET carries the permissions
        of the role that signed it); start each task's lifecycle execution, and hand a cancelled
        task's outcome to it; start the redelivery execution of a delivery retried on request."""
        self.api.allow(TASK_ITEM_ACTIONS, [arns.tasks_table])
        self.api.allow(["dynamodb:Query"], [arns.tasks_by_user])
        self.api.allow(["sqs:SendMessage", "sqs:GetQueueAttributes"], arns.task_queues)
        self.api.allow(["s3:GetObject"], [arns.results])
        self.api.allow(["states:StartExecution", "states:SendTaskSuccess"], [arns.lifecycle])
        # A FAILED delivery retried on request (docs/destinations.md): its round's execution.
        self.api.allow(["states:StartExecution"], [arns.redelivery])

    def _grant_destinations(self, table_arn: str) -> None:
        """Delivery destinations (docs/destinations.md). The API keeps them (items and each
        tenant's count, in transactions; a tenant's partition by Query), their secrets under one
        name prefix, and verifies them: an S3 destination through the customer's role, which
        tenants create at any time, so no deploy can list their ARNs. The grant is as narrow as
        that allows: roles of *other* accounts only (never one of ours), and only with an
        ExternalId, which every destination has and the service alone generates. The callback
        function delivers the files with the same narrow grant and read access only."""
        self.api.allow([*SCHEDULE_ITEM_ACTIONS, "dynamodb:Query"], [table_arn])
        prefix = Names.DESTINATION_SECRET_PREFIX
        secrets = f"arn:{Aws.PARTITION}:secretsmanager:{Aws.REGION}:{Aws.ACCOUNT_ID}:secret:{prefix}*"
        self.api.allow(DESTINATION_SECRET_ACTIONS, [secrets])
        # The callback function delivers the files (the workflow's DeliverFiles): it reads a
        # destination and its secret, nothing more, and assumes the same roles the same way.
        self.callback.allow(["dynamodb:GetItem"], [table_arn])
        self.callback.allow(["secretsmanager:GetSecretValue"], [secrets])
        for function in (self.api, self.callback):
            function.allow(
                ["sts:AssumeRole"],
                [f"arn:{Aws.PARTITION}:iam::*:role/*"],
                {
                    "StringNotEquals": {"aws:ResourceAccount": Aws.ACCOUNT_ID},
                    "Null": {"sts:ExternalId": "false"},
                },
            )
            acknowledge(
                function.role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:"
                f"secret:{Names.DESTINATION_SECRET_PREFIX}*]",
                "One secret per destination, created at runtime under this prefix; nothing else of the account's.",
            )
            acknowledge(
                function.role,
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::*:role/*]",
                "Customers' roles are created by tenants at any time; only other accounts' roles, only with an"
                " ExternalId.",
            )

    def _grant_scheduling(self, arns: ResourceArns, scheduling: ScheduledExports) -> None:
        """Scheduled exports (docs/schedules.md). The API keeps schedules (items, a user's list, the
        Scheduler schedule of each; ``POST /v1/schedules/{id}/run`` is a submit). The schedule
        function submits each firing as the API's submit path does after recording the firing on
        the schedule, and disables the Scheduler schedule of one that pauses. The callback function
        records a run's end on its schedule and mails the recipients."""
        for function in (self.api, self.schedule):
            function.allow(SCHEDULE_ITEM_ACTIONS, [arns.schedules_table])
        self.api.allow(["dynamodb:Query"], [arns.schedules_by_user])
        scheduling.allow_managing(self.api)
        self.schedule.allow(TASK_ITEM_ACTIONS, [arns.tasks_table])
        self.schedule.allow(["sqs:SendMessage", "sqs:GetQueueAttributes"], arns.task_queues)
        # ... start the run's lifecycle execution; end a run it could not queue (the submit path's
        # end_task tells the workflow).
        self.schedule.allow(["states:StartExecution", "states:SendTaskSuccess"], [arns.lifecycle])
        scheduling.allow_pausing(self.schedule)
        scheduling.deliver_to(self.schedule)
        self.callback.allow(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"], [arns.schedules_table])
        scheduling.allow_mail(self.callback)

    def _grant_worker(
        self, arns: ResourceArns, queues: TaskQueues, source_indexes: list[tuple[dynamodb.TableV2, str | None]]
    ) -> None:
        """Worker: claim, update and end tasks (the end also releases the quota count and deletes
        the dedup marker), take hot-key tokens and record throughput (GetItem, conditional
        PutItem), query the stack's tables the declared types read (by the index they name),
        re-queue retries, deferred tasks and hand-overs of long exports on any lane with a delay.
        One event source per lane, each with the lane's share of the worker concurrency."""
        self.worker.allow(TASK_ITEM_ACTIONS, [arns.tasks_table])
        if source_indexes:
            self.worker.allow(
                ["dynamodb:Query"],
                list(
                    dict.fromkeys(
                        Tables.index_arn(table, index) if index else table.table_arn for table, index in source_indexes
                    )
                ),
            )
        self.worker.allow(["sqs:SendMessage"], arns.task_queues)
        # ... start the fan-out execution of an export it splits.
        self.worker.allow(["states:StartExecution"], [arns.fan_out])
        # ... S3, as exports/core/aws/s3_results.py calls it: upload results in parts
        # (s3:PutObject covers create, upload part and complete) or abort them; write, read and
        # delete the checkpoint of a long export (results/<task>/checkpoint.bin: PutObject,
        # GetObject, DeleteObject); tag the finished object with rows, bytes and sha256; delete a
        # file it could not record.
        self.worker.allow(
            ["s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
            [arns.results],
        )
        # Every CSV export first looks for its checkpoint, by listing its key (S3ResultStore.
        # read_checkpoint): only under the results prefix.
        self.worker.allow(
            ["s3:ListBucket"],
            [arns.bucket],
            conditions={"StringLike": {"s3:prefix": [f"{Results.KEY_PREFIX}/*"]}},
        )
        self.worker.allow(["states:SendTaskSuccess"], [arns.lifecycle])
        for lane in queues.lanes:
            self.worker.function.add_event_source(
                event_sources.SqsEventSource(
                    lane.queue,
                    batch_size=Worker.BATCH_SIZE,
                    report_batch_item_failures=True,
                    max_concurrency=lane.lane.max_concurrency,
                )
            )

    def _grant_lifecycle(self, arns: ResourceArns) -> None:
        """Lifecycle: store the workflow's token on the task (UpdateItem returning the task), time
        the task out (GetItem, an UpdateItem transaction that also releases the quota count,
        DeleteItem of the dedup marker) and hand the outcome to the workflow."""
        self.lifecycle.allow(["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"], [arns.tasks_table])
        self.lifecycle.allow(["states:SendTaskSuccess"], [arns.lifecycle])

    def _grant_callback(self, arns: ResourceArns) -> None:
        """Callback: read the ended task and record the attempt (it never ends a task, so it
        deletes nothing), sign a fresh download link, read the signing key. Its POST goes out
        over HTTPS from the Lambda service network, or from the delivery VPC's NAT gateway when
        ``delivery_vpc`` places it there."""
        self.callback.allow(["dynamodb:GetItem", "dynamodb:UpdateItem"], [arns.tasks_table])
        self.callback.allow(["s3:GetObject"], [arns.results])
        self.callback.allow(["secretsmanager:GetSecretValue"], [arns.webhook_secret])

    def _reach_declared_sources(self, sources: DeclaredSources, settings: StageSettings) -> None:
        """Worker: read the named sources' secrets, connect as their RDS IAM users, query the
        user's own tables (and their indexes) by key; in the VPC given, if any."""
        stack = Stack.of(self)
        if arns := sources.secret_arns():
            self.worker.allow(["secretsmanager:GetSecretValue"], arns)
        # In the source's region when it names one (the token is signed for that region too).
        users = [
            stack.format_arn(
                service="rds-db", region=region, resource="dbuser", resource_name=f"{rid}/{user}", arn_format=COLON
            )
            for rid, user, region in sources.iam_users()
        ]
        if users:
            self.worker.allow(["rds-db:connect"], users)
        self._invoke_declared_services(sources)
        tables = sources.user_tables()
        if tables:
            arns = [stack.format_arn(service="dynamodb", resource="table", resource_name=name) for name in tables]
            self.worker.allow(["dynamodb:Query"], [*arns, *(f"{arn}/index/*" for arn in arns)])
            for name in tables:
                acknowledge(
                    self.worker.role,
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/{name}/index/*]",
                    "Declared DynamoDB types may query any index of the tables the declaration names.",
                )
        if settings.worker_vpc is not None:
            self._in_vpc(settings.worker_vpc)

    def _invoke_declared_services(self, sources: DeclaredSources) -> None:
        """Worker: call the APIs and function URLs of SigV4 sources, one statement per set of
        actions and conditions; a wildcard in a granted path (a placeholder's value, a custom
        domain's unknown base path) is acknowledged with its reason."""
        stack = Stack.of(self)
        by_terms: dict[tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]], list[str]] = {}
        for grant in sources.invoke_grants():
            arn = stack.format_arn(
                service=grant.service,
                region=grant.region,
                account=grant.account,
                resource=grant.resource,
                resource_name=grant.resource_name,
                arn_format=SLASH if grant.separator == "/" else COLON,
            )
            by_terms.setdefault((grant.actions, grant.conditions), []).append(arn)
            if "*" in grant.resource_name:
                acknowledge(
                    self.worker.role,
                    f"AwsSolutions-IAM5[Resource::{_nag_arn(grant)}]",
                    "A declared SigV4 source's API is invoked on the paths its types ask for: a * is a value the "
                    "request fills in (a parameter, a caller value) or the base path of a custom domain.",
                )
        for (actions, conditions), arns in by_terms.items():
            terms: dict[str, dict[str, str]] = {}
            for operator, key, value in conditions:
                terms.setdefault(operator, {})[key] = value
            self.worker.allow(list(actions), arns, terms or None)

    def _in_vpc(self, vpc: WorkerVpc) -> None:
        """The worker in the given subnets and security groups (a database in a VPC); the other
        functions stay out unless ``delivery_vpc`` places the callback function too."""
        place_in_vpc(self, "WorkerVpcNetworking", self.worker, vpc.subnet_ids, vpc.security_group_ids)

    @property
    def all(self) -> tuple[ServiceFunction, ...]:
        """Every function of the service."""
        return (
            self.api,
            self.worker,
            self.lifecycle,
            self.callback,
            self.stream,
            self.push,
            self.schedule,
            self.audit,
        )


def _nag_arn(grant: InvokeGrant) -> str:
    """The grant's ARN as cdk-nag writes it in a finding (the stack's values as pseudo parameters)."""
    region = grant.region or "<AWS::Region>"
    account = grant.account or "<AWS::AccountId>"
    resource = f"{grant.resource}{grant.separator}{grant.resource_name}"
    return f"arn:<AWS::Partition>:{grant.service}:{region}:{account}:{resource}"
