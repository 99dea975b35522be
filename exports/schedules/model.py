"""The schedule: what to export, when, in which zone, as whom; its state and its last run."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from exports.core.caller import Caller
from exports.core.config.limits import Limits
from exports.core.config.schedules import Schedules
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.deliveries import DeliveryPlan
from exports.core.task import ExportFormat

SCHEDULE_ID_PREFIX = "sch_"
# A schedule id's shape: the prefix and a ULID (26 Crockford base32 characters, the first at most
# 7). A page's ``next_token`` is the id of its last schedule, so the API states this pattern.
SCHEDULE_ID_PATTERN = r"^sch_[0-7][0-9A-HJKMNP-TV-Z]{25}$"


class ScheduleState(StrEnum):
    """A schedule fires while ACTIVE; PAUSED keeps it without firing (the user's, or its own)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"


class PauseCode(StrEnum):
    """Why a schedule is paused."""

    PAUSED_BY_USER = "PAUSED_BY_USER"
    TOO_MANY_FAILURES = "TOO_MANY_FAILURES"
    # The export type no longer exists in this deployment.
    EXPORT_TYPE_GONE = "EXPORT_TYPE_GONE"
    # The type's access rule no longer admits the claims stored with the schedule.
    ACCESS_REVOKED = "ACCESS_REVOKED"
    # The stored filters no longer pass the type's validation (its parameters changed).
    FILTERS_INVALID = "FILTERS_INVALID"


class PauseReason(BaseModel):
    """Why and, for a pause a run caused, which run (its callback says so)."""

    model_config = ConfigDict(frozen=True)

    code: PauseCode
    message: str
    # The run whose end paused the schedule (TOO_MANY_FAILURES), so its callback can tell.
    task_id: str | None = None


class Every(BaseModel):
    """A fixed interval: exactly one of minutes, hours or days (a day is 24 hours, as
    EventBridge Scheduler's ``rate``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    minutes: int | None = Field(default=None, strict=True, ge=1, le=1_000_000)
    hours: int | None = Field(default=None, strict=True, ge=1, le=100_000)
    days: int | None = Field(default=None, strict=True, ge=1, le=10_000)

    def unit_and_value(self) -> tuple[str, int]:
        """``("minutes", 30)``; ``ValueError`` unless exactly one unit is given."""
        given = [(unit, value) for unit, value in self.model_dump().items() if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of minutes, hours or days")
        return given[0]

    @property
    def seconds(self) -> int:
        """The interval in seconds."""
        unit, value = self.unit_and_value()
        return value * {"minutes": 60, "hours": 3600, "days": 86400}[unit]


class StoredCaller(BaseModel):
    """Who a schedule runs as, without a token: the user, and only the claims the export type
    binds or its access rule reads (and the scopes, when the rule reads scopes)."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    claims: dict[str, Any] = Field(default_factory=dict)
    scopes: tuple[str, ...] | None = None
    # The owner's own address (their token's verified ``email``), which the schedule may mail
    # whatever the deployment's domains (exports.schedules.mail).
    verified_email: str | None = None


class WhenEmpty(StrEnum):
    """What a run of 0 rows does: ``send`` it as any other run, or ``skip`` it (its outcome is
    recorded; no file is kept and no mail sent; its webhook says ``empty`` and ``skipped``)."""

    SEND = "send"
    SKIP = "skip"


class FeedRun(BaseModel):
    """A feed's run in flight: the firing that reserved it, the span it covers (``window_from``
    included, ``window_to`` excluded) and its task once made. While one is in flight the feed
    starts no other (its span would overlap); ``reserved_at`` lets a reservation whose
    invocation died lapse."""

    model_config = ConfigDict(frozen=True)

    scheduled_for: datetime
    window_from: datetime
    window_to: datetime
    reserved_at: datetime
    task_id: str | None = None


class LastRun(BaseModel):
    """The latest run that ended (or could not start)."""

    model_config = ConfigDict(frozen=True)

    task_id: str | None
    scheduled_for: datetime
    status: str
    finished_at: datetime | None = None


class Schedule(BaseModel):
    """One recurring export of one user."""

    model_config = ConfigDict(frozen=True)

    schedule_id: str
    user_id: str
    caller: StoredCaller
    name: str | None = None
    export_type: str
    format: ExportFormat = ExportFormat.CSV
    # As given: a window parameter may hold a relative value (exports.schedules.windows).
    filters: dict[str, Any] = Field(default_factory=dict)
    priority: int = Limits.PRIORITY_DEFAULT
    timeout_sec: int = Limits.TIMEOUT_SEC_DEFAULT
    callback_url: str | None = None
    csv_bom: bool = False
    csv_formula_guard: bool = True
    csv_dialect: CsvDialect = DEFAULT_DIALECT
    # None: each run is in the type's default locale.
    locale: str | None = None
    # Where each run's file goes once COMPLETED (docs/destinations.md); None: nowhere but our bucket.
    delivery: DeliveryPlan | None = None
    cron: str | None = None
    every: Every | None = None
    timezone: str = Schedules.DEFAULT_TIMEZONE
    start_at: datetime | None = None
    end_at: datetime | None = None
    recipients: tuple[str, ...] = ()
    state: ScheduleState = ScheduleState.ACTIVE
    paused_reason: PauseReason | None = None
    last_run: LastRun | None = None
    consecutive_failures: int = 0
    created_at: datetime
    updated_at: datetime
    # Where an ``every`` schedule counts its intervals from: start_at, else when its expression
    # was last set (EventBridge Scheduler's rate starts then).
    anchor_at: datetime
    # The run whose mail went out last (mail is sent once per run).
    mailed_task_id: str | None = None
    when_empty: WhenEmpty = WhenEmpty.SEND
    # A feed (since_last_run): where the next run starts, the previous COMPLETED run's end (None:
    # at start_at, the type's floor or the schedule's creation); its run in flight.
    watermark: datetime | None = None
    feed_run: FeedRun | None = None
    # The newest COMPLETED run with a file (GET /v1/schedules/{id}/latest).
    latest_task_id: str | None = None
    latest_scheduled_for: datetime | None = None
    # The SHA-256 of the secret permalink's key (None: no permalink); the key itself is shown once.
    permalink_hash: str | None = None
    # Bumped by every write: writes are conditional on the version they read.
    version: int = 0

    @property
    def is_active(self) -> bool:
        """Whether it fires."""
        return self.state is ScheduleState.ACTIVE


def caller_of(schedule: Schedule) -> Caller:
    """The caller its firings run as, and whose tenant its runs and pauses count for: the owner
    with the stored claims."""
    stored = schedule.caller
    return Caller(user_id=stored.user_id, claims=dict(stored.claims), scopes=stored.scopes or ())


def pause(schedule: Schedule, reason: PauseReason, now: datetime) -> Schedule:
    """The schedule PAUSED with ``reason``."""
    return schedule.model_copy(update={"state": ScheduleState.PAUSED, "paused_reason": reason, "updated_at": now})


def resume(schedule: Schedule, now: datetime) -> Schedule:
    """ACTIVE again: the reason and the failure count are cleared."""
    return schedule.model_copy(
        update={"state": ScheduleState.ACTIVE, "paused_reason": None, "consecutive_failures": 0, "updated_at": now}
    )
