"""The schedules API's request and response bodies (OpenAPI is generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from exports.api_models import ExportRequest
from exports.config.schedules import Schedules
from exports.domain.zones import canonical_zone
from exports.schedules.model import Every, LastRun, PauseReason, Schedule, ScheduleState
from exports.schedules.service import ScheduleChanges, ScheduleSpec


def _aware_utc(value: datetime) -> datetime:
    return value.astimezone(ZoneInfo("UTC"))


Instant = Annotated[AwareDatetime, AfterValidator(_aware_utc)]
Name = Annotated[str, Field(min_length=1, max_length=100)]
Cron = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="5 fields: minute hour day-of-month month day-of-week, in `timezone` (e.g. `0 8 * * 1`).",
    ),
]
# The rule of an export's zone (exports.domain.zones): an alias of UTC is recorded as Etc/UTC.
Zone = Annotated[
    str,
    Field(min_length=1, max_length=64, description="An IANA time zone (e.g. `Europe/Berlin`); also the files' zone."),
    AfterValidator(canonical_zone),
]
# An address's shape only: whether it is deliverable is SES's to find out.
Address = Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254)]
Recipients = Annotated[
    list[Address],
    Field(max_length=Schedules.MAX_RECIPIENTS, description="Mailed the row count and a link when a run ends."),
]
RELATIVE_WINDOWS = (
    "In `filters`, the export type's window parameters (its date range) may take a relative value resolved at"
    " each firing in `timezone`: `previous_day`, `previous_week` (ISO week), `previous_month`, `month_to_date`,"
    " `last_n_days:N`; give it on the range's start."
)


class EveryMinutes(BaseModel):
    """Every so many minutes."""

    model_config = ConfigDict(extra="forbid")

    minutes: int = Field(strict=True, ge=1, le=1_000_000)


class EveryHours(BaseModel):
    """Every so many hours."""

    model_config = ConfigDict(extra="forbid")

    hours: int = Field(strict=True, ge=1, le=100_000)


class EveryDays(BaseModel):
    """Every so many days (a day is 24 hours, as EventBridge Scheduler's rate)."""

    model_config = ConfigDict(extra="forbid")

    days: int = Field(strict=True, ge=1, le=10_000)


# ``every``: exactly one of minutes, hours or days.
EveryBody = Annotated[EveryMinutes | EveryHours | EveryDays, Field(description="Exactly one of minutes, hours, days.")]


def _every(body: EveryMinutes | EveryHours | EveryDays) -> Every:
    return Every(**body.model_dump())


def _every_body(every: Every) -> EveryMinutes | EveryHours | EveryDays:
    unit, value = every.unit_and_value()
    if unit == "minutes":
        return EveryMinutes(minutes=value)
    return EveryHours(hours=value) if unit == "hours" else EveryDays(days=value)


class ScheduleRequest(ExportRequest):
    """``POST /v1/schedules``: an export request (as ``POST /v1/exports``) and when to run it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"description": RELATIVE_WINDOWS})

    name: Name | None = None
    cron: Cron | None = None
    every: EveryBody | None = None
    timezone: Zone = Schedules.DEFAULT_TIMEZONE
    start_at: Instant | None = None
    end_at: Instant | None = None
    recipients: Recipients = Field(default_factory=list)

    @model_validator(mode="after")
    def _exactly_one(self) -> ScheduleRequest:
        if (self.cron is None) == (self.every is None):
            raise ValueError("give exactly one of cron or every")
        return self

    def schedule_spec(self) -> ScheduleSpec:
        """What the body asks for, as the services take it."""
        return ScheduleSpec(
            # The export's own fields, as POST /v1/exports takes them.
            export=ExportRequest.model_validate(self.model_dump(include=set(ExportRequest.model_fields))).spec(),
            cron=self.cron,
            every=_every(self.every) if self.every else None,
            timezone=self.timezone,
            name=self.name,
            start_at=self.start_at,
            end_at=self.end_at,
            recipients=tuple(self.recipients),
        )


class SchedulePatch(BaseModel):
    """``PATCH /v1/schedules/{id}``: the fields to change; ``state`` pauses or resumes."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    cron: Cron | None = None
    every: EveryBody | None = None
    timezone: Zone | None = None
    filters: dict[str, Any] | None = None
    recipients: Recipients | None = None
    start_at: Instant | None = None
    end_at: Instant | None = None
    state: ScheduleState | None = Field(
        default=None, description="`PAUSED` pauses (`PAUSED_BY_USER`); `ACTIVE` resumes and clears the failures."
    )

    @model_validator(mode="after")
    def _at_most_one_recurrence(self) -> SchedulePatch:
        if self.cron is not None and self.every is not None:
            raise ValueError("give exactly one of cron or every")
        return self

    def changes(self) -> ScheduleChanges:
        """The fields given (``null`` clears ``name``, ``start_at``, ``end_at``)."""
        values: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if name in ("cron", "every", "timezone", "filters", "recipients", "state") and value is None:
                continue
            if name == "every":
                value = _every(value)
            elif name == "recipients":
                value = tuple(value)
            values[name] = value
        return ScheduleChanges(values)


class NextRun(BaseModel):
    """One upcoming firing, in UTC and in the schedule's zone."""

    utc: datetime
    local: datetime


class PausedReasonView(BaseModel):
    """Why the schedule is paused."""

    code: str
    message: str


class LastRunView(BaseModel):
    """The latest run that ended."""

    task_id: str | None
    scheduled_for: datetime
    status: str
    finished_at: datetime | None = None

    @classmethod
    def of(cls, run: LastRun) -> LastRunView:
        """The view of ``run``."""
        return cls(**run.model_dump())


class ScheduleView(BaseModel):
    """A schedule as its owner sees it."""

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
    cron: str | None
    every: EveryBody | None
    timezone: str
    start_at: datetime | None
    end_at: datetime | None
    recipients: list[str]
    state: ScheduleState
    paused_reason: PausedReasonView | None
    next_runs: list[NextRun] = Field(description="The next firings (none while paused or after `end_at`).")
    last_run: LastRunView | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, schedule: Schedule, next_runs: list[datetime]) -> ScheduleView:
        """The view of ``schedule`` with its ``next_runs`` (UTC)."""
        zone = ZoneInfo(schedule.timezone)
        reason: PauseReason | None = schedule.paused_reason
        return cls(
            schedule_id=schedule.schedule_id,
            name=schedule.name,
            export_type=schedule.export_type,
            format=schedule.format.value,
            filters=schedule.filters,
            priority=schedule.priority,
            timeout_sec=schedule.timeout_sec,
            callback_url=schedule.callback_url,
            csv_bom=schedule.csv_bom,
            csv_formula_guard=schedule.csv_formula_guard,
            cron=schedule.cron,
            every=_every_body(schedule.every) if schedule.every else None,
            timezone=schedule.timezone,
            start_at=schedule.start_at,
            end_at=schedule.end_at,
            recipients=list(schedule.recipients),
            state=schedule.state,
            paused_reason=PausedReasonView(code=reason.code.value, message=reason.message) if reason else None,
            next_runs=[NextRun(utc=run, local=run.astimezone(zone)) for run in next_runs],
            last_run=LastRunView.of(schedule.last_run) if schedule.last_run else None,
            consecutive_failures=schedule.consecutive_failures,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
        )


class ScheduleList(BaseModel):
    """A page of the caller's schedules, newest first."""

    items: list[ScheduleView]
    next_token: str | None = None
