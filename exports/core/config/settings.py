"""Typed settings of each function, parsed from the environment at the edge (never at import).

Each function has its own class with only the fields it uses, read from only its own variables
(names in :class:`exports.core.config.env.Env`). A class says which variable each field comes from
(:attr:`FunctionSettings.REQUIRED`, :attr:`FunctionSettings.OPTIONAL`); ``from_env`` reads
exactly those, and the CDK app gives each function exactly those (``infra/functions.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from exports.core.config.env import Env
from exports.core.config.fan_out import FanOut
from exports.core.config.limits import Admission, HotKey
from exports.core.config.names import Names
from exports.core.config.results import Results
from exports.core.config.schedules import Schedules
from exports.core.config.worker import Worker


class XlsxEngine:
    """The code that writes XLSX files, chosen with ``Env.XLSX_ENGINE``
    (:attr:`WorkerSettings.xlsx_engine`)."""

    # exports/running/writers/xlsx_engine: the workbook streamed into the upload, no temporary file.
    STREAM: Final = "stream"
    # exports/running/writers/xlsx_writer.py: openpyxl's write-only workbook (the reference).
    OPENPYXL: Final = "openpyxl"
    DEFAULT: Final = STREAM


# The variables whose value is a JSON object.
_JSON_VARIABLES = frozenset({Env.TASK_QUEUE_URLS, Env.SOURCE_OVERRIDES})


class MissingVariable(LookupError):
    """A variable a function's settings require is not set."""

    def __init__(self, settings: str, variables: list[str]) -> None:
        self.variables = variables
        super().__init__(f"{settings} needs the environment variable(s) {', '.join(variables)}, which are not set")


class FunctionSettings(BaseModel):
    """What every function reads: the tasks table."""

    # Built on first use, like every model of the project: a cold start pays only for the models
    # its request path validates (docs/performance.md, "Cold starts").
    model_config = ConfigDict(frozen=True, defer_build=True)

    # Field -> the variable it is read from. A required variable missing fails ``from_env``
    # (:class:`MissingVariable`); an optional one leaves the field's default. Each class lists
    # its base's and its own.
    REQUIRED: ClassVar[Mapping[str, str]] = {"tasks_table": Env.TASKS_TABLE}
    OPTIONAL: ClassVar[Mapping[str, str]] = {}

    tasks_table: str

    @classmethod
    def variables(cls) -> frozenset[str]:
        """Every variable these settings read, required or not."""
        return frozenset({*cls.REQUIRED.values(), *cls.OPTIONAL.values()})

    @classmethod
    def missing_variables(cls, environ: Mapping[str, str]) -> list[str]:
        """The required variables ``environ`` does not set, in declaration order."""
        return [variable for variable in cls.REQUIRED.values() if variable not in environ]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """Settings from the variables the CDK app (or local mode) sets; other variables are
        ignored. :class:`MissingVariable` names the required ones that are not set."""
        missing = cls.missing_variables(environ)
        if missing:
            raise MissingVariable(cls.__name__, missing)
        values = {
            field: json.loads(environ[variable]) if variable in _JSON_VARIABLES else environ[variable]
            for field, variable in {**cls.REQUIRED, **cls.OPTIONAL}.items()
            if variable in environ
        }
        return cls.model_validate(values)


class TaskEndSettings(FunctionSettings):
    """What a function that ends tasks (all but the callback) reads besides: how long ended
    tasks and their files are kept."""

    OPTIONAL: ClassVar[Mapping[str, str]] = {**FunctionSettings.OPTIONAL, "retention_hours": Env.RETENTION_HOURS}

    retention_hours: int = Field(
        default=Results.RETENTION_HOURS_DEFAULT, ge=Results.RETENTION_HOURS_MIN, le=Results.RETENTION_HOURS_MAX
    )

    @property
    def retention(self) -> timedelta:
        """How long records and files are kept after a task ends."""
        return timedelta(hours=self.retention_hours)


class RegistrySettings(TaskEndSettings):
    """What a function that builds the export-type registry (the API, the worker) reads besides:
    the declaration file and the deployment's source overrides. (Tables a declared type names by
    variable, ``table_env``, are read from the environment when the registry is built.)"""

    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **TaskEndSettings.OPTIONAL,
        "exports_config": Env.EXPORTS_CONFIG,
        "source_overrides": Env.SOURCE_OVERRIDES,
    }

    # The declaration file of sources and export types; None: the one the repository ships.
    exports_config: str | None = None
    # Keys of declared sources replaced by the deployment (Env.SOURCE_OVERRIDES).
    source_overrides: dict[str, dict[str, object]] = Field(default_factory=dict)


class TaskFlowSettings(RegistrySettings):
    """What the two functions that queue tasks and tell the lifecycle workflow of them (the API,
    the worker) read besides: the lanes' queues, the results bucket, the workflow."""

    REQUIRED: ClassVar[Mapping[str, str]] = {
        **RegistrySettings.REQUIRED,
        "queue_urls": Env.TASK_QUEUE_URLS,
        "results_bucket": Env.RESULTS_BUCKET,
        "state_machine_arn": Env.LIFECYCLE_STATE_MACHINE_ARN,
    }

    queue_urls: dict[str, str]
    results_bucket: str
    state_machine_arn: str


# Scheduled exports' variables (docs/schedules.md), read by the API and the schedule function.
_SCHEDULE_VARIABLES: Final[Mapping[str, str]] = {
    "schedules_table": Env.SCHEDULES_TABLE,
    "schedule_group": Env.SCHEDULE_GROUP,
    "schedule_target_arn": Env.SCHEDULE_TARGET_ARN,
    "scheduler_role_arn": Env.SCHEDULER_ROLE_ARN,
    "schedule_dlq_arn": Env.SCHEDULE_DLQ_ARN,
    "max_schedules_per_user": Env.MAX_SCHEDULES_PER_USER,
    "min_schedule_interval_min": Env.MIN_SCHEDULE_INTERVAL_MIN,
}
# The mail of scheduled runs: the API checks recipients against it, the callback function sends.
_MAIL_VARIABLES: Final[Mapping[str, str]] = {
    "mail_sender": Env.MAIL_SENDER,
    "mail_allowed_domains": Env.MAIL_ALLOWED_DOMAINS,
}


def mail_domains(value: str | None) -> frozenset[str]:
    """The domains of ``EXPORTS_MAIL_ALLOWED_DOMAINS`` (comma-separated), lower case."""
    return frozenset(part.strip().lower() for part in (value or "").split(",") if part.strip())


class ApiSettings(TaskFlowSettings):
    """The API function's: admission limits at submit, download links, and whether callbacks
    may go to loopback addresses."""

    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **TaskFlowSettings.OPTIONAL,
        "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
        "allow_local_callbacks": Env.ALLOW_LOCAL_CALLBACKS,
        "max_active_tasks_per_user": Env.MAX_ACTIVE_TASKS_PER_USER,
        "max_backlog": Env.MAX_BACKLOG,
        "connections_table": Env.CONNECTIONS_TABLE,
        "websocket_url": Env.WEBSOCKET_URL,
        **_SCHEDULE_VARIABLES,
        **_MAIL_VARIABLES,
        "audit_table": Env.AUDIT_TABLE,
        "event_bus": Env.EVENT_BUS,
        "destinations_table": Env.DESTINATIONS_TABLE,
        "destination_principal_arn": Env.DESTINATION_PRINCIPAL_ARN,
        "redelivery_state_machine_arn": Env.REDELIVERY_STATE_MACHINE_ARN,
    }

    # Delivery destinations (docs/destinations.md): their table, and the role customers' S3 roles
    # trust (unset: S3 destinations are refused, SFTP ones work).
    destinations_table: str = Names.DESTINATIONS_TABLE
    destination_principal_arn: str | None = None
    # The workflow that tries a FAILED delivery again on request (unset: such requests are a 503).
    redelivery_state_machine_arn: str | None = None
    download_url_ttl_sec: int = Field(default=Results.DOWNLOAD_URL_TTL_SEC, ge=60, le=3600)
    allow_local_callbacks: bool = False
    # The bus of lifecycle events (docs/events.md); unset: none are published.
    event_bus: str | None = None
    max_active_tasks_per_user: int = Field(default=Admission.MAX_ACTIVE_TASKS_PER_USER, ge=1)
    max_backlog: int = Field(default=Admission.MAX_BACKLOG, ge=1)
    # The push channel's stream tickets (docs/push.md): where they are kept and the ws(s) URL they
    # open; either unset: no push channel, POST /v1/stream-tickets answers 404.
    connections_table: str | None = None
    websocket_url: str | None = None
    # Scheduled exports: the schedules table, the Scheduler group, target, role and DLQ (unset on
    # a deployment without Scheduler: schedules are stored and fired by local mode's loop only).
    schedules_table: str = Names.SCHEDULES_TABLE
    schedule_group: str = Names.SCHEDULE_GROUP
    schedule_target_arn: str | None = None
    scheduler_role_arn: str | None = None
    schedule_dlq_arn: str | None = None
    max_schedules_per_user: int = Field(default=Schedules.MAX_PER_USER_DEFAULT, ge=1)
    min_schedule_interval_min: int = Field(default=Schedules.MIN_INTERVAL_MIN_DEFAULT, ge=1)
    # The verified SES sender of run mail (unset: no mail, schedules with recipients are refused)
    # and the domains recipients may have (comma-separated; unset: none, only the owner's own
    # verified address).
    mail_sender: str | None = None
    mail_allowed_domains: str | None = None
    # The audit trail (docs/audit.md): links, downloads and schedule changes are recorded there,
    # GET /v1/audit reads it, a tenant's rows per day are counted from it (unset: none of that).
    audit_table: str | None = None

    @property
    def allowed_mail_domains(self) -> frozenset[str]:
        """The domains recipients may belong to, lower case; empty: none (the owner's own verified
        address only)."""
        return mail_domains(self.mail_allowed_domains)


class ScheduleSettings(ApiSettings):
    """The schedule function's (the Lambda EventBridge Scheduler invokes): the submit path's
    settings, as the API function's, and the schedules'."""


class WorkerSettings(TaskFlowSettings):
    """The worker's: leases and progress, the XLSX engine, the hot-key limit, and splitting
    large exports (docs/fan-out.md)."""

    REQUIRED: ClassVar[Mapping[str, str]] = {
        **TaskFlowSettings.REQUIRED,
        "fan_out_state_machine_arn": Env.FAN_OUT_STATE_MACHINE_ARN,
        "event_bus": Env.EVENT_BUS,
    }
    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **TaskFlowSettings.OPTIONAL,
        "hot_key_rate_per_minute": Env.HOT_KEY_RATE_PER_MINUTE,
        "hot_key_burst": Env.HOT_KEY_BURST,
        "xlsx_engine": Env.XLSX_ENGINE,
        "progress_interval_sec": Env.PROGRESS_INTERVAL_SEC,
        "max_partitions": Env.MAX_PARTITIONS,
        "partition_rows": Env.PARTITION_ROWS,
    }

    lease_sec: int = Worker.LEASE_SEC
    # The bus of lifecycle events (docs/events.md): completed and failed exports.
    event_bus: str
    progress_interval_sec: float = Field(default=Worker.PROGRESS_INTERVAL_SEC, gt=0)
    upload_part_bytes: int = Worker.UPLOAD_PART_BYTES
    hot_key_rate_per_minute: float = Field(default=HotKey.RATE_PER_MINUTE, gt=0)
    hot_key_burst: int = Field(default=HotKey.BURST, ge=1)
    xlsx_engine: Literal["stream", "openpyxl"] = XlsxEngine.DEFAULT
    # The workflow that runs a split export's partitions, the rows per partition and the most
    # partitions per export (1: never split).
    fan_out_state_machine_arn: str
    partition_rows: int = Field(default=FanOut.PARTITION_ROWS, ge=1)
    max_partitions: int = Field(default=FanOut.MAX_PARTITIONS_DEFAULT, ge=1, le=FanOut.MAX_PARTITIONS_LIMIT)

    @property
    def lease(self) -> timedelta:
        """How long a claim lasts without a progress write."""
        return timedelta(seconds=self.lease_sec)


class CallbackSettings(FunctionSettings):
    """The callback function's: the results bucket (the payload's download link) and the
    signing secret, given directly (local mode) or by its Secrets Manager ARN; a scheduled run's
    end: the schedules table, the mail, and the audit trail with the declaration's ``[tenants]``."""

    REQUIRED: ClassVar[Mapping[str, str]] = {**FunctionSettings.REQUIRED, "results_bucket": Env.RESULTS_BUCKET}
    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **FunctionSettings.OPTIONAL,
        "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
        "webhook_secret": Env.WEBHOOK_SECRET,
        "webhook_secret_arn": Env.WEBHOOK_SECRET_ARN,
        "allow_local_callbacks": Env.ALLOW_LOCAL_CALLBACKS,
        "schedules_table": Env.SCHEDULES_TABLE,
        **_MAIL_VARIABLES,
        "mail_attachment_max_bytes": Env.MAIL_ATTACHMENT_MAX_BYTES,
        "event_bus": Env.EVENT_BUS,
        "audit_table": Env.AUDIT_TABLE,
        "exports_config": Env.EXPORTS_CONFIG,
        "destinations_table": Env.DESTINATIONS_TABLE,
    }

    results_bucket: str
    # The bus of lifecycle events (docs/events.md); unset: none are published.
    event_bus: str | None = None
    download_url_ttl_sec: int = Field(default=Results.DOWNLOAD_URL_TTL_SEC, ge=60, le=3600)
    webhook_secret: str | None = None
    webhook_secret_arn: str | None = None
    allow_local_callbacks: bool = False
    # A scheduled run's end: its schedule's outcome and mail (docs/schedules.md).
    schedules_table: str = Names.SCHEDULES_TABLE
    # The destinations a task's file is delivered to (docs/destinations.md).
    destinations_table: str = Names.DESTINATIONS_TABLE
    mail_sender: str | None = None
    mail_allowed_domains: str | None = None
    mail_attachment_max_bytes: int = Field(
        default=Schedules.MAIL_ATTACHMENT_DEFAULT_BYTES, ge=0, le=Schedules.MAIL_ATTACHMENT_MAX_BYTES
    )
    # The audit trail (docs/audit.md): a run's mail and the pause after failures in a row are
    # recorded there (unset: not recorded), in the tenant and for the retention the declaration
    # file's [tenants] says (None: the file the package ships).
    audit_table: str | None = None
    exports_config: str | None = None

    @property
    def allowed_mail_domains(self) -> frozenset[str]:
        """The domains recipients may belong to, lower case; empty: none (the owner's own verified
        address only)."""
        return mail_domains(self.mail_allowed_domains)


class LifecycleSettings(TaskEndSettings):
    """The lifecycle function's: the workflow it hands a task's outcome to."""

    REQUIRED: ClassVar[Mapping[str, str]] = {
        **TaskEndSettings.REQUIRED,
        "state_machine_arn": Env.LIFECYCLE_STATE_MACHINE_ARN,
    }

    state_machine_arn: str


class AuditSettings(RegistrySettings):
    """The audit function's (docs/audit.md): the audit table, the declaration file (its
    ``[tenants]``: retention per tenant) and the worker's memory (CPU-seconds-equivalent)."""

    REQUIRED: ClassVar[Mapping[str, str]] = {**RegistrySettings.REQUIRED, "audit_table": Env.AUDIT_TABLE}
    OPTIONAL: ClassVar[Mapping[str, str]] = {**RegistrySettings.OPTIONAL, "worker_memory_mb": Env.WORKER_MEMORY_MB}

    audit_table: str
    worker_memory_mb: int = Field(default=Worker.MEMORY_MB_DEFAULT, ge=128, le=10240)


class PushSettings(RegistrySettings):
    """The connections table, the results bucket (completed events carry a download link), the
    WebSocket API's management endpoint, and the JWT issuer and audience ``bearer.`` is checked
    against. The registry's settings too: tenancy-bound values are bound as at submit."""

    REQUIRED: ClassVar[Mapping[str, str]] = {
        **RegistrySettings.REQUIRED,
        "connections_table": Env.CONNECTIONS_TABLE,
        "results_bucket": Env.RESULTS_BUCKET,
    }
    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **RegistrySettings.OPTIONAL,
        "websocket_endpoint": Env.WEBSOCKET_ENDPOINT,
        "jwt_issuer": Env.JWT_ISSUER,
        "jwt_audience": Env.JWT_AUDIENCE,
        "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
        "audit_table": Env.AUDIT_TABLE,
    }

    connections_table: str
    results_bucket: str
    # The audit trail (docs/audit.md): each download link a completed event carries is recorded
    # there before it is sent (unset: not recorded).
    audit_table: str | None = None
    # Read by boto3 itself (the management API client's endpoint); here so the function gets it.
    websocket_endpoint: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    download_url_ttl_sec: int = Field(default=Results.DOWNLOAD_URL_TTL_SEC, ge=60, le=3600)
