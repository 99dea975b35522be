"""Typed results of the exports API.

Each model has the name of an OpenAPI component in ``docs/openapi.json`` and the same JSON Schema
(tests/client/test_models.py compares them, and tests/client/test_openapi_doc.py keeps that file
equal to what the API serves), so a change on either side fails a test instead of a user's script.
Fields the service adds later are ignored by older clients rather than rejected.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field


class TaskStatus(StrEnum):
    """Lifecycle states of an export task."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"


TERMINAL: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED})


class ExportFormat(StrEnum):
    """File formats a task can produce."""

    CSV = "csv"
    CSV_GZ = "csv.gz"
    XLSX = "xlsx"
    PDF = "pdf"
    JSONL = "jsonl"
    JSONL_GZ = "jsonl.gz"
    PARQUET = "parquet"


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True)


class CsvEncoding(StrEnum):
    """The encodings a CSV file is written in (Shift_JIS as Windows-31J)."""

    UTF_8 = "utf-8"
    GB18030 = "gb18030"
    SHIFT_JIS = "shift_jis"
    WINDOWS_1252 = "windows-1252"


class CsvDialect(_Result):
    """How a CSV file is spelled: delimiter, line ending, decimal separator, encoding, and what a
    value the encoding cannot hold does (``fail`` names its column and row; ``replace`` writes ``?``).
    A decimal comma needs another delimiter (the schema states it; the service refuses it)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "if": {"required": ["decimal_separator"], "properties": {"decimal_separator": {"const": ","}}},
            "then": {"required": ["delimiter"], "properties": {"delimiter": {"not": {"const": ","}}}},
        },
    )

    delimiter: Literal[",", ";", "\t", "|"] = ","
    line_ending: Literal["crlf", "lf"] = "crlf"
    decimal_separator: Literal[".", ","] = "."
    encoding: CsvEncoding = CsvEncoding.UTF_8
    unencodable: Literal["fail", "replace"] = "fail"


class ExportAccepted(_Result):
    """The ``202`` answer to a submission."""

    task_id: str
    status: TaskStatus
    created_at: datetime
    estimated_completion_sec: int
    status_url: str
    #: True when an identical export was already active: this is that task.
    deduplicated: bool = False


class ErrorView(_Result):
    """Why a task failed."""

    code: str
    message: str


class CallbackView(_Result):
    """How the callback went: PENDING until delivered or given up."""

    status: str
    attempts: int
    last_error: str | None = None


class SubscriberView(CallbackView):
    """One submitter's callback (the task's own, or of an identical request merged into it)."""

    url: str


class DeliveryStatus(StrEnum):
    """A file delivery to a destination: PENDING until DELIVERED or FAILED; SKIPPED: no file."""

    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class DeliveryError(_Result):
    """Why a delivery failed, in words a customer can act on (``step``: where it failed)."""

    code: str
    message: str
    step: str | None = None


class Delivery(_Result):
    """The task's file delivered to one of its destinations (docs/destinations.md)."""

    destination_id: str
    status: DeliveryStatus = DeliveryStatus.PENDING
    attempts: int = Field(default=0, ge=0)
    remote_path: str | None = None
    delivered_at: datetime | None = None
    error: DeliveryError | None = None
    # The file as the destination holds it (the encrypted file's when the destination encrypts).
    sha256: str | None = None
    size_bytes: int | None = Field(default=None, ge=0)
    # How many times it was retried on request after it FAILED (Client.retry_delivery).
    requested_retries: int = Field(default=0, ge=0)


class DestinationKind(StrEnum):
    """Where files go."""

    S3 = "s3"
    SFTP = "sftp"


class DestinationState(StrEnum):
    """ACTIVE destinations take files; HOST_KEY_UNCONFIRMED waits for its host key's confirmation."""

    ACTIVE = "ACTIVE"
    HOST_KEY_UNCONFIRMED = "HOST_KEY_UNCONFIRMED"


class EncryptionKind(StrEnum):
    """What a file becomes on its way: as it is, OpenPGP, or an AES-256 ZIP."""

    NONE = "none"
    PGP = "pgp"
    ZIP = "zip"


class SftpAuth(StrEnum):
    """How the service logs in to an SFTP server."""

    KEY = "key"
    PASSWORD = "password"


class ServerSideEncryption(StrEnum):
    """How S3 encrypts the object at rest."""

    SSE_S3 = "AES256"
    SSE_KMS = "aws:kms"


class ProblemStep(StrEnum):
    """The step of a connection that failed."""

    ADDRESS = "ADDRESS"
    DNS = "DNS"
    TCP = "TCP"
    HOST_KEY = "HOST_KEY"
    AUTH = "AUTH"
    PERMISSION = "PERMISSION"
    PATH = "PATH"


_FINGERPRINT = r"^SHA256:[A-Za-z0-9+/]{43}$"


class _Closed(_Result):
    model_config = ConfigDict(frozen=True, extra="forbid")


class UseRule(_Closed):
    """Who of the tenant may name the destination on an export (groups, scopes)."""

    groups: list[Annotated[str, Field(min_length=1, max_length=128)]] = []
    scopes: list[Annotated[str, Field(min_length=1, max_length=256)]] = []


class Encryption(_Closed):
    """What a file becomes before delivery (``pgp``: to ``pgp_public_key``)."""

    kind: EncryptionKind = EncryptionKind.NONE
    pgp_public_key: Annotated[str, Field(max_length=32768)] | None = None


class S3Target(_Closed):
    """A bucket of the customer's, written through their role with this ``external_id``."""

    bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    prefix: str = Field(default="", max_length=512)
    region: str = Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$")
    # Stated, not enforced: the service checks it (Rust's regex engine would compile \w{1,576} too large).
    role_arn: str = Field(
        json_schema_extra={"pattern": r"^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/[\w+=,.@/-]{1,576}$"}
    )
    server_side_encryption: ServerSideEncryption = ServerSideEncryption.SSE_S3
    kms_key_arn: str | None = None
    kind: Literal["s3"] = "s3"
    external_id: str = Field(pattern=r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$")


class SftpTargetView(_Closed):
    """The customer's SFTP server, its pinned host key (or the one to confirm) and the
    fingerprint of the service's public key."""

    host: str
    port: int = Field(default=22, ge=1, le=65535)
    username: str = Field(min_length=1, max_length=128)
    path: str = Field(default=".", min_length=1, max_length=1024)
    auth: SftpAuth = SftpAuth.KEY
    kind: Literal["sftp"] = "sftp"
    host_key_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT)] | None = None
    offered_host_key_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT)] | None = None
    public_key_fingerprint: Annotated[str, Field(pattern=_FINGERPRINT)] | None = None


class DestinationView(_Result):
    """One of the tenant's delivery destinations (docs/destinations.md); never a secret."""

    destination_id: str
    name: str
    kind: DestinationKind
    state: DestinationState
    target: Annotated[S3Target | SftpTargetView, Field(discriminator="kind")]
    encryption: Encryption
    use: UseRule | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime
    #: S3: the trust policy of the customer's role and the permissions it needs, to paste.
    trust_policy: dict[str, Any] | None = None
    permissions_policy: dict[str, Any] | None = None
    #: SFTP key authentication: the line for authorized_keys, in the creation's answer only.
    public_key: str | None = None


class DestinationList(_Result):
    """A page of the tenant's destinations, newest first."""

    items: list[DestinationView]
    next_token: str | None = None


class VerificationView(_Result):
    """What verify found: ``ok``, or the step that failed and what to do (``message``)."""

    ok: bool
    checked_at: datetime
    failed_step: ProblemStep | None = None
    message: str | None = None


class TaskView(_Result):
    """A task as its owner sees it."""

    task_id: str
    export_type: str
    format: ExportFormat
    filters: dict[str, Any]
    timezone: str = Field(default="Etc/UTC", description="The IANA zone the file's date-times are written in.")
    csv_dialect: CsvDialect = Field(default=CsvDialect(), description="How a CSV file is spelled.")
    locale: str | None = Field(default=None, description="The language of the file's headers (zh-CN, de, ...).")
    priority: int
    status: TaskStatus
    progress: int
    rows_written: int
    partitions: int | None = Field(
        default=None, description="Into how many partitions the export was split (written at once); none: one worker."
    )
    attempt: int
    retry_count: int
    max_retries: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime
    deadline: datetime
    error: ErrorView | None = None
    file_name: str | None = None
    size_bytes: int | None = None
    rows: int | None = None
    sha256: str | None = None
    download_url: str | None = None
    download_expires_at: datetime | None = None
    retry_of: str | None = None
    callback: CallbackView | None = None
    callbacks: list[SubscriberView] = []
    callback_seq: int = 0
    #: Each destination's delivery of the file, once COMPLETED.
    deliveries: list[Delivery] = []
    #: The schedule that started this task, and the firing time it ran for (None: an ordinary task).
    schedule_id: str | None = None
    scheduled_for: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        """Whether the task has ended (it will not change any more)."""
        return self.status in TERMINAL


class ScheduleState(StrEnum):
    """Whether a schedule fires."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"


class WhenEmpty(StrEnum):
    """What a schedule's run of 0 rows does: sent as any other, or skipped (no file, no mail)."""

    SEND = "send"
    SKIP = "skip"


class FeedRunView(_Result):
    """A feed's run in flight: its task (once made) and the span it covers (from included, to
    excluded)."""

    task_id: str | None
    scheduled_for: datetime
    window_from: datetime
    window_to: datetime


class Every(_Result):
    """A fixed interval: exactly one of ``minutes``, ``hours`` or ``days`` (a day is 24 hours)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    minutes: int | None = Field(default=None, ge=1, le=1_000_000)
    hours: int | None = Field(default=None, ge=1, le=100_000)
    days: int | None = Field(default=None, ge=1, le=10_000)


class EveryMinutes(_Result):
    """A schedule's interval in minutes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The service's document states its default shortest interval (15 minutes) as the minimum; a
    # deployment may allow less, so only 1 is checked here.
    minutes: int = Field(ge=1, le=1_000_000, json_schema_extra={"minimum": 15})


class EveryHours(_Result):
    """A schedule's interval in hours."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hours: int = Field(ge=1, le=100_000)


class EveryDays(_Result):
    """A schedule's interval in days (a day is 24 hours)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    days: int = Field(ge=1, le=10_000)


# A schedule's interval as the API answers it: one unit.
EveryView = Annotated[EveryMinutes | EveryHours | EveryDays, Field(description="Exactly one of minutes, hours, days.")]


class PausedReasonView(_Result):
    """Why a schedule is paused: ``PAUSED_BY_USER``, ``TOO_MANY_FAILURES``, ``EXPORT_TYPE_GONE``,
    ``ACCESS_REVOKED``, ``FILTERS_INVALID``, ..."""

    code: str
    message: str


class NextRun(_Result):
    """One coming firing, as an instant (UTC) and as the schedule's local wall time."""

    utc: datetime
    local: datetime


class LastRunView(_Result):
    """The latest run that ended: its task (if one was made), its firing time and its status."""

    task_id: str | None
    scheduled_for: datetime
    status: str
    finished_at: datetime | None = None


class ScheduleView(_Result):
    """A recurring export as its owner sees it."""

    schedule_id: str
    name: str | None
    export_type: str
    format: str
    filters: dict[str, Any]
    priority: int
    timeout_sec: int
    callback_url: str | None
    csv_bom: bool
    csv_formula_guard: bool
    csv_dialect: CsvDialect = CsvDialect()
    locale: str | None = None
    #: Where each run's file is delivered, and under which path.
    destinations: list[str] = []
    path_template: str | None = None
    cron: str | None
    every: EveryView | None
    timezone: str
    start_at: datetime | None
    end_at: datetime | None
    recipients: list[str]
    state: ScheduleState
    paused_reason: PausedReasonView | None
    #: The next firings; none while paused or once ended.
    next_runs: list[NextRun]
    last_run: LastRunView | None
    consecutive_failures: int
    #: What a run of 0 rows does.
    when_empty: WhenEmpty
    #: A feed's: where its next run starts (none before its first COMPLETED run).
    watermark: datetime | None
    #: A feed's run in flight.
    feed_run: FeedRunView | None
    #: The newest COMPLETED run with a file (:meth:`ExportsClient.download_latest`).
    latest_task_id: str | None
    #: Whether a secret permalink to the latest file is on.
    permalink: bool
    created_at: datetime
    updated_at: datetime


class Permalink(_Result):
    """A schedule's secret permalink, shown once: its URL gives the latest file without a token."""

    url: str
    key: str


class ScheduleList(_Result):
    """A page of the caller's schedules, newest first."""

    items: list[ScheduleView]
    next_token: str | None = None


class MailMessage(_Result):
    """One message the local deployment's embedded SES received."""

    id: str
    sent_at: datetime
    from_: str = Field(alias="from")
    to: list[str]
    subject: str
    text: str


class Mailbox(_Result):
    """What local mode's embedded SES received, newest first (``GET /local/mailbox``)."""

    items: list[MailMessage]


class AuditPage(_Result):
    """A page of your tenant's audit records (``GET /v1/audit``), as stored: each a JSON object
    with ``tenant``, ``day``, ``seq``, ``action``, ``actor``, ``subject``, ``detail``,
    ``prev_hash`` and ``hash`` (docs/audit.md); :func:`exports_client.audit.verify` checks them."""

    items: list[dict[str, Any]]
    next_token: str | None = None


class UsageDay(_Result):
    """Your tenant's usage on one day."""

    day: date
    exports: int
    rows: int
    bytes: int
    cpu_seconds: float


class UsageList(_Result):
    """Your tenant's usage per day (``GET /v1/audit/usage``)."""

    tenant: str
    items: list[UsageDay]


class StreamTicketView(_Result):
    """A single-use ticket for the push channel (docs/push.md) and the channel's URL."""

    ticket: str
    url: str
    expires_in: int


class TaskList(_Result):
    """A page of the caller's tasks, newest first."""

    items: list[TaskView]
    next_token: str | None = None


class ExportTypeView(_Result):
    """One export type: its formats, the JSON Schema of its filters and its locales."""

    name: str
    description: str
    formats: list[ExportFormat]
    filters_schema: dict[str, Any]
    default_locale: str = Field(description="The locale of a task that asks for none (`locale` left out).")
    locales: list[str] = Field(
        description="The locales the type has words in (headers, title, PDF footer): its default first. A request"
        " may give any locale tag; one not listed falls back to a shorter tag, then to the default."
    )


class CallerView(_Result):
    """Who the token says is asking, and what the export types bind from it."""

    user_id: str
    bound: dict[str, Any] = Field(default_factory=dict)


class ExportTypeList(_Result):
    """Everything this deployment can export."""

    items: list[ExportTypeView]


class FieldProblem(_Result):
    """One invalid field of a request."""

    field: str | None = None
    message: str


class RefusalEstimate(_Result):
    """What a capacity refusal (``WOULD_TIME_OUT``) was estimated on: seconds until the export
    would have started and been done, against the ``timeout_sec`` it asked for."""

    estimated_start_sec: int
    estimated_completion_sec: int
    timeout_sec: int


class ErrorDetail(_Result):
    """What went wrong: a stable code, a message and, for bad input, the field; ``errors`` lists
    every invalid field when there are several (the first is ``field`` and ``message``); a
    capacity refusal carries its ``estimate``."""

    code: str
    message: str
    field: str | None = None
    errors: list[FieldProblem] | None = None
    estimate: RefusalEstimate | None = None


class ErrorBody(_Result):
    """Every error answer of the API has this shape."""

    error: ErrorDetail


class WebhookEvent(_Result):
    """A verified callback, in the Standard Webhooks shape: ``type`` (``export.completed``,
    ``export.failed``, ``export.timed_out``, ``export.cancelled``), ``timestamp`` and ``data``,
    the task as ``GET /v1/exports/{id}`` shows it (with a fresh ``download_url`` and its
    ``download_expires_at`` for COMPLETED). Keep the event with the highest
    ``data.callback_seq`` per task."""

    type: str
    timestamp: datetime
    data: TaskView
