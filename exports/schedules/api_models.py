"""The schedules API's request and response bodies (OpenAPI is generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final
from zoneinfo import ZoneInfo

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from exports.accepting.requests import BOM_IN_UTF8, TEMPLATE_WITH_DESTINATIONS, ZONE_MARK, ExportRequest
from exports.core.config.schedules import Schedules
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.deliveries import DESTINATION_ID_PATTERN, MAX_DESTINATIONS, PATH_TEMPLATE_MAX_LENGTH, check_template
from exports.core.locales import LOCALE_PATTERN, canonical_locale
from exports.core.zones import canonical_zone
from exports.schedules.mail import (
    MAX_ADDRESS_LENGTH,
    NO_CONTROL_CHARACTERS,
    RECIPIENT_MARK,
    has_control_characters,
    is_address,
)
from exports.schedules.model import Every, FeedRun, LastRun, PauseReason, Schedule, ScheduleState, WhenEmpty
from exports.schedules.service import ScheduleChanges, ScheduleSpec

# The first and last instants Python holds, in UTC.
_EARLIEST = datetime.min.replace(tzinfo=ZoneInfo("UTC"))
_LATEST = datetime.max.replace(tzinfo=ZoneInfo("UTC"))
DestinationIds = list[Annotated[str, StringConstraints(pattern=DESTINATION_ID_PATTERN)]]


def _aware_utc(value: datetime) -> datetime:
    """The instant in UTC. One in year 1 or 9999 whose UTC time Python cannot hold
    (``0001-01-01T00:00:00+00:01``) is taken as the first or last instant it holds: the schema
    allows it, and no firing or change lies between the two."""
    try:
        return value.astimezone(ZoneInfo("UTC"))
    except OverflowError:
        return _EARLIEST if value.year == 1 else _LATEST


def _no_control_characters(value: str) -> str:
    if has_control_characters(value):
        raise ValueError("must not contain control characters (CR, LF, tab, ...): it is the mail's subject")
    return value


def _address(value: str) -> str:
    if not is_address(value):
        raise ValueError("is not an e-mail address (local@example.com)")
    return value


def _text(value: Any) -> Any:
    """An instant is written as the document says (an RFC 3339 string): a number, which pydantic
    would read as seconds since 1970, is refused rather than guessed."""
    if not isinstance(value, str | datetime):
        raise ValueError("must be a date-time string such as 2026-01-05T08:00:00Z")
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(_text), AfterValidator(_aware_utc)]
Name = Annotated[
    str,
    Field(min_length=1, max_length=100, json_schema_extra={"pattern": NO_CONTROL_CHARACTERS}),
    AfterValidator(_no_control_characters),
]
# The cron expressions the OpenAPI document states (its pattern, not a check): the forms every
# deployment takes whatever its shortest interval up to an hour: one minute; every hour or a
# list of hours; every day of the month or a list of days 1-28 (a day every month has); every
# month or a list; every day of the week or a list, and not both a day of the month and of the
# week (EventBridge Scheduler cannot run on either). The service takes any cron it can run
# (ranges, steps, names, L, #), checked when the schedule is created.
_HOURS = r"(?:\*|(?:[0-9]|1[0-9]|2[0-3])(?:,(?:[0-9]|1[0-9]|2[0-3]))*)"
_MONTHS = r"(?:\*|(?:[1-9]|1[0-2])(?:,(?:[1-9]|1[0-2]))*)"
_DAYS = r"(?:[1-9]|1[0-9]|2[0-8])(?:,(?:[1-9]|1[0-9]|2[0-8]))*"
CRON_PATTERN: Final = rf"^(?:[0-9]|[1-5][0-9]) {_HOURS} (?:\* {_MONTHS} (?:\*|[0-7](?:,[0-7])*)|{_DAYS} {_MONTHS} \*)$"
Cron = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="5 fields: minute hour day-of-month month day-of-week, in `timezone` (e.g. `0 8 * * 1`)."
        " The pattern states the forms every deployment takes; ranges, steps and names are taken too"
        " when firings stay at least the deployment's shortest interval apart.",
        json_schema_extra={"pattern": CRON_PATTERN},
    ),
]
# The rule of an export's zone (exports.core.zones): an alias of UTC is recorded as Etc/UTC.
Zone = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="An IANA time zone (e.g. `Europe/Berlin`); also the files' zone.",
        json_schema_extra={ZONE_MARK: True},
    ),
    AfterValidator(canonical_zone),
]
# An address's shape (exports.schedules.mail.is_address); the OpenAPI document adds the
# deployment's domains where RECIPIENT_MARK is (exports.api.http.openapi). Whether an address is
# deliverable is SES's to find out; the caller's own verified one is the service's to take.
Address = Annotated[
    str,
    StringConstraints(max_length=MAX_ADDRESS_LENGTH),
    AfterValidator(_address),
    Field(json_schema_extra={"format": "email", RECIPIENT_MARK: True}),
]
Recipients = Annotated[
    list[Address],
    Field(
        max_length=Schedules.MAX_RECIPIENTS,
        description="Mailed the row count and a link when a run ends: addresses in the deployment's allowed"
        " domains (the items' `pattern` states them, in any case; at most 64 characters before the `@`), or"
        " your own verified e-mail address (your token's `email` claim with `email_verified`), which the"
        " document, served without a token, cannot state: it is taken although the `pattern` refuses it."
        " Any other address: 422 `RECIPIENT_NOT_ALLOWED` on `recipients[i]`.",
    ),
]
RELATIVE_WINDOWS = (
    "In `filters`, the export type's window parameters (its date range) may take a relative value resolved at"
    " each firing in `timezone`: `previous_day`, `previous_week` (ISO week), `previous_month`, `month_to_date`,"
    " `last_n_days:N`; give it on the range's start. A type that declares its change column offers"
    " `since_last_run` on that range's start: a feed, each run covering the changes since the previous"
    ' COMPLETED run (docs/schedules.md, "Feeds").'
)
WHEN_EMPTY = (
    "`send`: a run of 0 rows is sent as any other; `skip`: it is recorded, keeps no file and mails"
    " no one, and its webhook says `empty` and `skipped`."
)


class EveryMinutes(BaseModel):
    """Every so many minutes."""

    model_config = ConfigDict(extra="forbid")

    # The document states the default shortest interval (a deployment may lower it).
    minutes: int = Field(
        strict=True, ge=1, le=1_000_000, json_schema_extra={"minimum": Schedules.MIN_INTERVAL_MIN_DEFAULT}
    )


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


# Exactly one of cron and every, as the document states it (_exactly_one checks it).
_CRON_OR_EVERY: Final[list[JsonValue]] = [
    {"required": ["cron"], "properties": {"cron": {"type": "string"}}},
    {"required": ["every"], "properties": {"every": {"type": "object"}}},
]


# Both cron and every given (not null): what a PATCH may not carry.
_CRON_OR_EVERY_BOTH: Final[JsonValue] = {
    "required": ["cron", "every"],
    "properties": {"cron": {"type": "string"}, "every": {"type": "object"}},
}


class ScheduleRequest(ExportRequest):
    """``POST /v1/schedules``: an export request (as ``POST /v1/exports``) and when to run it."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "description": RELATIVE_WINDOWS,
            "oneOf": _CRON_OR_EVERY,
            **BOM_IN_UTF8,
            **TEMPLATE_WITH_DESTINATIONS,
        },
    )

    name: Name | None = None
    cron: Cron | None = None
    every: EveryBody | None = None
    timezone: Zone = Schedules.DEFAULT_TIMEZONE
    start_at: Instant | None = None
    end_at: Instant | None = None
    recipients: Recipients = Field(default_factory=list)
    when_empty: WhenEmpty = Field(default=WhenEmpty.SEND, description=WHEN_EMPTY)

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
            when_empty=self.when_empty,
        )


class SchedulePatch(BaseModel):
    """``PATCH /v1/schedules/{id}``: the fields to change; ``state`` pauses or resumes."""

    # At most one of cron and every (_at_most_one_recurrence), as the document states it.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"not": _CRON_OR_EVERY_BOTH})

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
    when_empty: WhenEmpty | None = Field(default=None, description=WHEN_EMPTY)
    # As on a create (ExportRequest's fields), checked the same way; a CSV dialect replaces the
    # schedule's whole (its defaults fill what it leaves out).
    csv_dialect: CsvDialect | None = Field(
        default=None, description=ExportRequest.model_fields["csv_dialect"].description
    )
    locale: str | None = Field(
        default=None,
        min_length=2,
        max_length=35,
        json_schema_extra={"pattern": LOCALE_PATTERN},
        description=f"{ExportRequest.model_fields['locale'].description} `null`: back to the type's default.",
        examples=["en", "de", "zh-CN", "ja"],
    )
    watermark: Instant | None = Field(
        default=None,
        description="A feed's next run starts here (not in the future); `null` starts it again at `start_at`, the"
        " type's floor or the schedule's creation. A run in flight then no longer moves it.",
    )
    # Where each run's file goes (docs/destinations.md), checked as on a create: the caller's
    # tenant's destinations they may use, ACTIVE. Runs already started keep theirs.
    destinations: DestinationIds | None = Field(
        default=None,
        max_length=MAX_DESTINATIONS,
        description="Replaces the destinations each run's file is delivered to (as on a create: your tenant's, that"
        " you may use); `[]` or `null`: no delivery. Runs already started keep theirs.",
    )
    path_template: str | None = Field(
        default=None,
        max_length=PATH_TEMPLATE_MAX_LENGTH,
        description=f"{ExportRequest.model_fields['path_template'].description} `null`: back to `{{file}}`. Needs"
        " destinations, in this body or already on the schedule.",
        examples=["{type}/{date}/{file}"],
    )

    @field_validator("locale")
    @classmethod
    def _locale_tag(cls, tag: str | None) -> str | None:
        return None if tag is None else canonical_locale(tag)

    @field_validator("destinations")
    @classmethod
    def _destinations_once(cls, destinations: list[str] | None) -> list[str] | None:
        if destinations is not None and len(set(destinations)) != len(destinations):
            raise ValueError("name each destination once")
        return destinations

    @field_validator("path_template")
    @classmethod
    def _known_template(cls, template: str | None, info: ValidationInfo) -> str | None:
        # An empty list beside it in the body; absent (or null), the schedule's own are checked.
        if template is not None and info.data.get("destinations") == []:
            raise ValueError("a path template is for the destinations named in `destinations`: name them")
        return None if template is None else check_template(template)

    @model_validator(mode="after")
    def _at_most_one_recurrence(self) -> SchedulePatch:
        if self.cron is not None and self.every is not None:
            raise ValueError("give exactly one of cron or every")
        return self

    def changes(self) -> ScheduleChanges:
        """The fields given (``null`` clears ``name``, ``start_at``, ``end_at``, ``watermark``,
        and sets ``locale`` back to the type's default)."""
        values: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if (
                name in ("cron", "every", "timezone", "filters", "recipients", "state", "when_empty", "csv_dialect")
                and value is None
            ):
                continue
            if name == "every":
                value = _every(value)
            elif name in ("recipients", "destinations"):
                value = tuple(value or ())
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


class FeedRunView(BaseModel):
    """A feed's run in flight: the span it covers (from included, to excluded)."""

    task_id: str | None
    scheduled_for: datetime
    window_from: datetime
    window_to: datetime

    @classmethod
    def of(cls, run: FeedRun) -> FeedRunView:
        """The view of ``run``."""
        return cls(**run.model_dump(exclude={"reserved_at"}))


class Permalink(BaseModel):
    """A schedule's secret permalink, shown once: GET it without a token for the latest file."""

    url: str = Field(description="The permalink (its key is in the query string). Anyone who has it gets the file.")
    key: str


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
    csv_dialect: CsvDialect = DEFAULT_DIALECT
    locale: str | None = None
    destinations: list[str] = Field(default_factory=list, description="Where each run's file is delivered.")
    path_template: str | None = Field(default=None, description="Where the file goes under each destination.")
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
    when_empty: WhenEmpty
    watermark: datetime | None = Field(
        description="A feed's: where its next run starts, the previous COMPLETED run's end (none yet: at `start_at`,"
        " the type's floor or the schedule's creation)."
    )
    feed_run: FeedRunView | None = Field(description="A feed's run in flight.")
    latest_task_id: str | None = Field(
        description="The newest COMPLETED run with a file (GET /v1/schedules/{id}/latest redirects to it)."
    )
    permalink: bool = Field(description="Whether a secret permalink to the latest file is on.")
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
            csv_dialect=schedule.csv_dialect,
            locale=schedule.locale,
            destinations=list(schedule.delivery.destination_ids) if schedule.delivery else [],
            path_template=schedule.delivery.path_template if schedule.delivery else None,
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
            when_empty=schedule.when_empty,
            watermark=schedule.watermark,
            feed_run=FeedRunView.of(schedule.feed_run) if schedule.feed_run else None,
            latest_task_id=schedule.latest_task_id,
            permalink=schedule.permalink_hash is not None,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
        )


class ScheduleList(BaseModel):
    """A page of the caller's schedules, newest first."""

    items: list[ScheduleView]
    next_token: str | None = None
