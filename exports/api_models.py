"""The HTTP API's request and response bodies (OpenAPI is generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from exports.config.limits import Limits
from exports.destinations.delivery import (
    DESTINATION_ID_PATTERN,
    MAX_DESTINATIONS,
    PATH_TEMPLATE_MAX_LENGTH,
    Delivery,
    check_template,
)
from exports.domain.csv_dialect import DEFAULT_DIALECT, CsvDialect, CsvEncoding
from exports.domain.locales import ACCEPTED as ACCEPTED_LOCALES
from exports.domain.locales import LOCALE_PATTERN, canonical_locale
from exports.domain.spec import ExportSpec
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat, Task
from exports.domain.zones import ACCEPTED, UTC_ZONE, canonical_zone, is_utc
from exports.export_types.base import AnyExportType

# Marks a field of a zone name: the OpenAPI document refers it to its list of the zones
# (exports.http.openapi.ZONE_SCHEMA), so a schema-valid zone is one the service takes.
ZONE_MARK: Final = "x-time-zone"


# csv_bom is for UTF-8 files (ExportRequest._bom_in_utf8), as the document states it: with
# ``csv_bom: true`` the dialect's encoding, when given, is UTF-8. A body that breaks it is
# invalid by the schema, not a schema-valid body refused.
BOM_IN_UTF8: Final[dict[str, JsonValue]] = {
    "if": {"required": ["csv_bom"], "properties": {"csv_bom": {"const": True}}},
    "then": {"properties": {"csv_dialect": {"properties": {"encoding": {"const": "utf-8"}}}}},
}


class ExportRequest(BaseModel):
    """``POST /v1/exports``: what to export and how."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=BOM_IN_UTF8)

    export_type: str = Field(strict=True, min_length=1, max_length=64, description="A name from GET /v1/export-types.")
    format: ExportFormat = Field(default=ExportFormat.CSV, description="File format.")
    filters: dict[str, Any] = Field(default_factory=dict, description="Filters of the export type.")
    # Strict: ``true`` is not a priority and ``"60"`` is not a number of seconds.
    priority: int = Field(
        default=Limits.PRIORITY_DEFAULT,
        strict=True,
        ge=Limits.PRIORITY_HIGHEST,
        le=Limits.PRIORITY_LOWEST,
        description="1 is the highest, 10 the lowest.",
    )
    timeout_sec: int = Field(
        default=Limits.TIMEOUT_SEC_DEFAULT,
        strict=True,
        ge=Limits.TIMEOUT_SEC_MIN,
        le=Limits.TIMEOUT_SEC_MAX,
        description="The task times out this long after submission.",
    )
    callback_url: AnyHttpUrl | None = Field(
        default=None, max_length=2048, description="Called when the task ends (see the docs)."
    )
    csv_bom: bool = Field(default=False, strict=True, description="Start CSV files with a UTF-8 BOM (for Excel).")
    csv_formula_guard: bool = Field(
        default=True,
        strict=True,
        description=(
            "CSV and csv.gz only. True (default): a text value starting with =, +, -, @, a tab or a"
            " carriage return is written with a leading apostrophe, so a spreadsheet shows it as"
            " text instead of running it as a formula (OWASP CSV injection). False: every value is"
            " written exactly as it is (e.g. phone numbers such as +86 722 1590); only for files"
            " that no spreadsheet will open, or whose text you trust. XLSX never changes text."
        ),
    )
    timezone: str = Field(
        default=UTC_ZONE,
        strict=True,
        min_length=1,
        max_length=64,
        description=(
            f"The zone the file's date-times from instants (timestamptz) are written in: {ACCEPTED}."
            " CSV, JSON Lines and PDF write them in ISO 8601 with the zone's offset at that instant,"
            " XLSX as the zone's wall time (the header names the zone), Parquet as UTC instants typed"
            " with the zone. The aliases of UTC (UTC, Etc/UTC, Zulu, ...) are the default: date-times"
            " in UTC without an offset, as always. Dates and timestamps without time zone are unchanged."
        ),
        examples=["Europe/Berlin", "America/New_York", "Asia/Kathmandu", UTC_ZONE],
        json_schema_extra={ZONE_MARK: True},
    )
    csv_dialect: CsvDialect = Field(
        default=DEFAULT_DIALECT,
        description=(
            "CSV and csv.gz only: the delimiter, line ending, decimal separator and encoding, for the"
            ' spreadsheet that opens the file. German Excel: {"delimiter": ";", "decimal_separator": ","};'
            ' Chinese Excel: {"encoding": "gb18030"}; Japanese Excel: {"encoding": "shift_jis"}.'
            " The default is RFC 4180 in UTF-8."
        ),
    )
    locale: str | None = Field(
        default=None,
        min_length=2,
        max_length=35,
        json_schema_extra={"pattern": LOCALE_PATTERN},
        description=(
            f"The language of the column headers and the PDF heading in CSV, XLSX and PDF: {ACCEPTED_LOCALES}."
            " A header without a label for it falls back to a shorter tag (zh-Hant-TW, zh-Hant, zh), then to the"
            " type's default. JSON Lines and Parquet keep the column names. None: the type's default."
        ),
        examples=["en", "de", "zh-CN", "ja"],
    )

    destinations: list[Annotated[str, StringConstraints(pattern=DESTINATION_ID_PATTERN)]] = Field(
        default_factory=list,
        max_length=MAX_DESTINATIONS,
        description="Your tenant's destinations (GET /v1/destinations) to deliver the file to once it is COMPLETED;"
        " the task shows each delivery (`deliveries`). An export that delivers is never merged with an identical one.",
    )
    path_template: str | None = Field(
        default=None,
        max_length=PATH_TEMPLATE_MAX_LENGTH,
        description="Where the file goes under each destination's prefix or directory: `{type}`, `{date}` (the"
        " run's day, UTC), `{task_id}` and `{file}` (the file's name), e.g. `{type}/{date}/{file}`. Default `{file}`.",
        examples=["{type}/{date}/{file}"],
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        return canonical_zone(name)

    @field_validator("destinations")
    @classmethod
    def _destinations_once(cls, destinations: list[str]) -> list[str]:
        if len(set(destinations)) != len(destinations):
            raise ValueError("name each destination once")
        return destinations

    @field_validator("path_template")
    @classmethod
    def _usable_template(cls, template: str | None, info: ValidationInfo) -> str | None:
        if template is not None and not info.data.get("destinations"):
            raise ValueError("a path template is for the destinations named in `destinations`: name them")
        return None if template is None else check_template(template)

    @field_validator("locale")
    @classmethod
    def _locale_tag(cls, tag: str | None) -> str | None:
        return None if tag is None else canonical_locale(tag)

    @model_validator(mode="after")
    def _bom_in_utf8(self) -> ExportRequest:
        if self.csv_bom and self.csv_dialect.encoding is not CsvEncoding.UTF_8:
            raise ValueError("csv_bom is for UTF-8 files: Excel reads the other encodings without one")
        return self

    def spec(self) -> ExportSpec:
        """The export this body asks for, as the services take it."""
        callback_url = str(self.callback_url) if self.callback_url else None
        return ExportSpec(
            **self.model_dump(exclude={"callback_url", "csv_dialect", "destinations", "path_template"}),
            csv_dialect=self.csv_dialect,
            callback_url=callback_url,
        )

    def idempotency_body(self) -> dict[str, Any]:
        """The body an Idempotency-Key is bound to: the default zone left out, so a key stored
        before zones existed still matches the same request."""
        body = self.model_dump(mode="json")
        if is_utc(self.timezone):
            del body["timezone"]
        # Likewise the default dialect and no locale: bodies of before them.
        if self.csv_dialect.is_default:
            del body["csv_dialect"]
        if self.locale is None:
            del body["locale"]
        if not self.destinations:
            del body["destinations"], body["path_template"]
        return body


class ExportAccepted(BaseModel):
    """The ``202`` answer to a submission."""

    task_id: str
    status: TaskStatus
    created_at: datetime
    estimated_completion_sec: int = Field(
        description="Seconds until the export should be done: its wait in the queue and its own run (docs/capacity.md)."
    )
    status_url: str
    deduplicated: bool = Field(
        default=False, description="True when an identical export was already active: this is that task."
    )


class ErrorView(BaseModel):
    """Why a task failed."""

    code: str
    message: str


class CallbackView(BaseModel):
    """How a callback went: PENDING until delivered or given up."""

    status: str
    attempts: int
    last_error: str | None = None


class SubscriberView(CallbackView):
    """One submitter's callback (the task's own, or of an identical request merged into it)."""

    url: str


class TaskView(BaseModel):
    """A task as its owner sees it."""

    task_id: str
    export_type: str
    format: ExportFormat
    filters: dict[str, Any]
    timezone: str = Field(default=UTC_ZONE, description="The IANA zone the file's date-times are written in.")
    csv_dialect: CsvDialect = Field(default=DEFAULT_DIALECT, description="How a CSV file is spelled.")
    locale: str | None = Field(
        default=None, description="The language of the file's labels (none: recorded before locales)."
    )
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
    schedule_id: str | None = Field(default=None, description="The schedule this task is a run of (none: not a run).")
    scheduled_for: datetime | None = Field(default=None, description="The firing time the run is for (UTC).")
    callback: CallbackView | None = Field(default=None, description="The first callback (callbacks[0]).")
    callbacks: list[SubscriberView] = Field(
        default_factory=list, description="Every callback, one per submitter who asked for one, in order."
    )
    callback_seq: int = Field(
        default=0, description="Grows with every status change; a receiver keeps the event with the highest."
    )
    deliveries: list[Delivery] = Field(
        default_factory=list,
        description="The file's delivery to each destination named at submit, once COMPLETED (docs/destinations.md).",
    )

    @classmethod
    def of(cls, task: Task, download_url: str | None = None, download_expires_at: datetime | None = None) -> TaskView:
        """The view of ``task``, with a fresh download link when it has one."""
        result = task.result
        file = result if result is not None and not task.empty_skipped else None
        return cls(
            task_id=task.task_id,
            export_type=task.export_type,
            format=task.format,
            filters=task.filters,
            timezone=task.timezone,
            csv_dialect=task.csv_dialect,
            locale=task.locale,
            priority=task.priority,
            status=task.status,
            progress=task.progress,
            rows_written=task.rows_written,
            partitions=len(task.partition_rows) if task.partition_rows else None,
            attempt=task.attempt,
            retry_count=task.retry_count,
            max_retries=task.max_retries,
            created_at=task.created_at,
            started_at=task.started_at,
            finished_at=task.finished_at,
            expires_at=task.expires_at,
            deadline=task.deadline,
            error=ErrorView(code=task.error.code, message=task.error.message) if task.error else None,
            file_name=file.file_name if file else None,
            size_bytes=file.bytes if file else None,
            rows=result.rows if result else None,
            sha256=file.sha256 if file else None,
            download_url=download_url,
            download_expires_at=download_expires_at,
            retry_of=task.retry_of,
            schedule_id=task.schedule_id,
            scheduled_for=task.scheduled_for,
            callback=CallbackView(**task.callback.model_dump()) if task.callback else None,
            callbacks=[SubscriberView(url=s.url, **s.state.model_dump()) for s in task.subscribers],
            callback_seq=task.status_seq,
            deliveries=list(task.deliveries),
        )


class StreamTicketView(BaseModel):
    """``201`` to ``POST /v1/stream-tickets``: a single-use ticket to open the push channel with
    (docs/push.md) and where that is."""

    ticket: str = Field(description="Offer it as the subprotocol `ticket.<ticket>` beside `exports.v1`; usable once.")
    url: str = Field(description="The ws(s) URL of the push channel (nothing secret in it).")
    expires_in: int = Field(description="Seconds the ticket stays valid.")


class TaskList(BaseModel):
    """A page of the caller's tasks, newest first."""

    items: list[TaskView]
    next_token: str | None = None


class ExportTypeView(BaseModel):
    """One export type: its formats and the JSON Schema of its filters."""

    name: str
    description: str
    formats: list[ExportFormat]
    filters_schema: dict[str, Any]
    default_locale: str = Field(description="The locale of a task that asks for none (`locale` left out).")
    locales: list[str] = Field(
        description="The locales the type has words in (headers, title, PDF footer): its default first. A request"
        " may give any locale tag; one not listed falls back to a shorter tag, then to the default."
    )

    @classmethod
    def of(cls, export_type: AnyExportType) -> ExportTypeView:
        """The view of ``export_type``, with the JSON Schema of its filters and its locales."""
        return cls(
            name=export_type.name,
            description=export_type.description,
            formats=list(export_type.formats),
            filters_schema=export_type.filters_schema(),
            default_locale=export_type.default_locale,
            locales=export_type.locales(),
        )


class ExportTypeList(BaseModel):
    """Everything this deployment can export."""

    items: list[ExportTypeView]


class CallerView(BaseModel):
    """Who the token says is asking, and what the export types bind from it."""

    user_id: str = Field(description="The token's subject: whose tasks these are.")
    bound: dict[str, Any] = Field(
        default_factory=dict,
        description="What the export types the caller may use bind from the token (a tenant id, the"
        " groups), by the name they bind it as: every export of the caller is made with these values.",
    )


class FieldProblem(BaseModel):
    """One invalid field of a request."""

    field: str | None = None
    message: str


class RefusalEstimate(BaseModel):
    """What a capacity refusal (``WOULD_TIME_OUT``) was estimated on."""

    estimated_start_sec: int = Field(description="Seconds until the export would have started (its queue wait).")
    estimated_completion_sec: int = Field(description="Seconds until it would have been done.")
    timeout_sec: int = Field(description="The deadline it asked for, which that passes.")


class ErrorDetail(BaseModel):
    """What went wrong: a stable code, a message and, for bad input, the field; ``errors`` lists
    every invalid field when there are several (the first is ``field`` and ``message``); a
    capacity refusal carries its ``estimate``."""

    code: str
    message: str
    field: str | None = None
    errors: list[FieldProblem] | None = None
    estimate: RefusalEstimate | None = None


class ErrorBody(BaseModel):
    """Every error answer has this shape."""

    error: ErrorDetail
