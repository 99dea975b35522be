"""The schedules API's operations: create, list, read, change, delete, run now. Every one is
its owner's only: another user's schedule is not found."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from ulid import ULID

from exports.config.schedules import Schedules
from exports.domain.caller import TOKEN_CLAIMS, Caller
from exports.domain.errors import ConditionFailed, ExportsError, InvalidRequest, ServiceUnavailable
from exports.domain.spec import ExportSpec
from exports.domain.task import ScheduledRun, TaskSource
from exports.export_types.base import AnyExportType
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.expression import Recurrence, check_interval, zone
from exports.schedules.filters import resolved_filters
from exports.schedules.mail import check_recipients
from exports.schedules.model import (
    SCHEDULE_ID_PREFIX,
    Every,
    PauseCode,
    PauseReason,
    Schedule,
    ScheduleState,
    StoredCaller,
    pause,
    resume,
)
from exports.schedules.ports import ScheduleNotFound, SchedulePage
from exports.schedules.scheduler_expression import scheduler_expression
from exports.services.submission import Submission, submit_export
from exports.services.validation import invalid_request
from exports.webhooks.destination import check_destination

logger = logging.getLogger(__name__)
_WRITE_ATTEMPTS = 3


def new_schedule_id(now: datetime) -> str:
    """A new time-sortable schedule id (``sch_`` + a ULID)."""
    return f"{SCHEDULE_ID_PREFIX}{ULID.from_datetime(now)}"


@dataclass(frozen=True)
class ScheduleSpec:
    """What a create asks for: the export (as POST /v1/exports), its timing and its mail."""

    export: ExportSpec
    cron: str | None = None
    every: Every | None = None
    timezone: str = "Etc/UTC"
    name: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScheduleChanges:
    """What a PATCH changes (only the fields given: ``given`` names them)."""

    values: dict[str, Any] = field(default_factory=dict)

    @property
    def given(self) -> frozenset[str]:
        """The names of the fields the PATCH carries."""
        return frozenset(self.values)


def recurrence_of(schedule: Schedule) -> Recurrence:
    """The schedule's timing."""
    return Recurrence(
        cron=schedule.cron,
        every=schedule.every,
        timezone=schedule.timezone,
        anchor=schedule.anchor_at,
        start_at=schedule.start_at,
        end_at=schedule.end_at,
    )


def next_runs(schedule: Schedule, now: datetime, count: int) -> list[datetime]:
    """The next ``count`` firings (UTC); none while paused. An ``every`` schedule created (or
    retimed) without ``start_at`` first fires at its anchor, as Scheduler's rate does: that
    firing comes first while it has not run, for ``Schedules.FIRST_FIRING_GRACE_SEC``."""
    if not schedule.is_active:
        return []
    after = now
    anchor = schedule.anchor_at
    first_pending = schedule.last_run is None or schedule.last_run.scheduled_for < anchor
    grace = timedelta(seconds=Schedules.FIRST_FIRING_GRACE_SEC)
    if schedule.every is not None and schedule.start_at is None and first_pending and anchor <= now < anchor + grace:
        after = anchor - timedelta(microseconds=1)
    return recurrence_of(schedule).next_runs(after, count)


def next_moved_firing(schedule: Schedule, after: datetime) -> datetime | None:
    """The schedule's next firing moved out of a DST gap (which Scheduler would skip) within
    ``Schedules.MOVED_FIRING_HORIZON_DAYS``; none while paused or after ``end_at``."""
    if not schedule.is_active:
        return None
    horizon = timedelta(days=Schedules.MOVED_FIRING_HORIZON_DAYS)
    return recurrence_of(schedule).next_moved_firing(after, horizon)


def follow_moved_firing(schedule: Schedule, after: datetime, deps: ScheduleDependencies) -> None:
    """Point Scheduler's one-time companion of ``schedule`` at its next moved firing after
    ``after``, or remove it when there is none."""
    if deps.timer is not None:
        deps.timer.set_moved_firing(schedule, next_moved_firing(schedule, after))


def stored_caller(export_type: AnyExportType, caller: Caller) -> StoredCaller:
    """What the schedule keeps of ``caller``'s token: the claims the type binds or its access
    rule reads (every claim but the token's own for a type that cannot say), the scopes only
    when the rule reads them. Never the token."""
    read = export_type.claims_read()
    names = read.claims
    claims = {
        name: value
        for name, value in caller.claims.items()
        if name not in TOKEN_CLAIMS and (names is None or name in names)
    }
    scopes = tuple(sorted(caller.granted_scopes())) if read.scopes else None
    return StoredCaller(user_id=caller.user_id, claims=claims, scopes=scopes)


def caller_of(schedule: Schedule) -> Caller:
    """The caller a firing runs as: the owner with the stored claims."""
    stored = schedule.caller
    return Caller(user_id=stored.user_id, claims=dict(stored.claims), scopes=stored.scopes or ())


def validate(schedule: Schedule, caller: Caller, deps: ScheduleDependencies, now: datetime) -> AnyExportType:
    """Everything a create or a change must pass, the type's access rule included (a 422 or
    403 naming the field otherwise); returns the export type."""
    export_type = deps.api.registry.get(schedule.export_type, caller)
    if schedule.format not in export_type.formats:
        raise InvalidRequest(f"export type {export_type.name} does not produce {schedule.format.value}", field="format")
    tz = zone(schedule.timezone)
    if (schedule.cron is None) == (schedule.every is None):
        raise InvalidRequest("give exactly one of cron or every", field="cron")
    scheduler_expression(schedule.cron, schedule.every)  # refuses what Scheduler cannot run
    minimum = timedelta(minutes=deps.api.settings.min_schedule_interval_min)
    check_interval(recurrence_of(schedule), now, minimum)
    if schedule.start_at and schedule.end_at and schedule.end_at <= schedule.start_at:
        raise InvalidRequest("must be after start_at", field="end_at")
    settings = deps.api.settings
    check_recipients(schedule.recipients, settings.mail_sender, settings.allowed_mail_domains)
    bound = export_type.bind_caller(caller)
    sample = resolved_filters(schedule.filters, export_type.window(), now, tz)
    try:
        export_type.parse_filters(sample, bound)
    except ValidationError as error:
        raise invalid_request(error, prefix="filters") from None
    if schedule.callback_url:
        check_destination(schedule.callback_url, deps.api.resolve, settings.allow_local_callbacks)
    return export_type


def create_schedule(spec: ScheduleSpec, caller: Caller, deps: ScheduleDependencies) -> Schedule:
    """Validate, store (within the user's cap: ``SCHEDULE_LIMIT_REACHED``) and create its
    Scheduler schedule; if Scheduler refuses, nothing stays stored."""
    now = deps.api.clock()
    export = spec.export
    schedule = Schedule(
        schedule_id=new_schedule_id(now),
        user_id=caller.user_id,
        caller=StoredCaller(user_id=caller.user_id),
        name=spec.name,
        export_type=export.export_type,
        format=export.format,
        filters=export.filters,
        priority=export.priority,
        timeout_sec=export.timeout_sec,
        callback_url=export.callback_url,
        csv_bom=export.csv_bom,
        csv_formula_guard=export.csv_formula_guard,
        csv_dialect=export.csv_dialect,
        locale=export.locale,
        cron=spec.cron,
        every=spec.every,
        timezone=spec.timezone,
        start_at=spec.start_at,
        end_at=spec.end_at,
        recipients=spec.recipients,
        created_at=now,
        updated_at=now,
        anchor_at=spec.start_at or now,
    )
    export_type = validate(schedule, caller, deps, now)
    schedule = schedule.model_copy(update={"caller": stored_caller(export_type, caller)})
    deps.schedules.create(schedule, deps.api.settings.max_schedules_per_user)
    if deps.timer is not None:
        try:
            deps.timer.create(schedule)
            follow_moved_firing(schedule, now, deps)
        except ExportsError as error:
            deps.schedules.delete(schedule)
            raise ServiceUnavailable("the scheduler did not take the schedule; try again shortly") from error
    return schedule


def owned_schedule(schedule_id: str, user_id: str, deps: ScheduleDependencies) -> Schedule:
    """The caller's schedule; :class:`ScheduleNotFound` for no schedule and for another user's."""
    schedule = deps.schedules.get(schedule_id) if schedule_id.startswith(SCHEDULE_ID_PREFIX) else None
    if schedule is None or schedule.user_id != user_id:
        raise ScheduleNotFound(schedule_id)
    return schedule


def list_schedules(user_id: str, deps: ScheduleDependencies, limit: int, cursor: str | None) -> SchedulePage:
    """A page of the caller's schedules, newest first."""
    return deps.schedules.list_for_user(user_id, limit, cursor)


# Changing any of these re-counts an ``every`` schedule's intervals from now (Scheduler's rate
# restarts when its expression changes).
_TIMING = frozenset({"cron", "every", "timezone", "start_at"})


def update_schedule(schedule_id: str, changes: ScheduleChanges, caller: Caller, deps: ScheduleDependencies) -> Schedule:
    """Apply a PATCH: validated like a create (against the caller's current token, whose claims
    the schedule then keeps); ``state`` ACTIVE resumes (clearing the reason and the failure
    count), PAUSED pauses (``PAUSED_BY_USER``). Scheduler follows."""
    for _ in range(_WRITE_ATTEMPTS):
        before = owned_schedule(schedule_id, caller.user_id, deps)
        now = deps.api.clock()
        after = _changed(before, changes, now)
        export_type = validate(after, caller, deps, now)
        after = after.model_copy(update={"caller": stored_caller(export_type, caller)})
        try:
            written = deps.schedules.replace(before, after)
        except ConditionFailed:
            continue  # changed meanwhile (a firing, a run's end): apply the PATCH to the new one
        _follow(written, before, now, deps)
        return written
    raise ServiceUnavailable("the schedule kept changing; try again")


def _changed(before: Schedule, changes: ScheduleChanges, now: datetime) -> Schedule:
    values = dict(changes.values)
    state = values.pop("state", None)
    if "cron" in values and values["cron"] is not None:
        values.setdefault("every", None)
    if "every" in values and values["every"] is not None:
        values.setdefault("cron", None)
    after = before.model_copy(update={**values, "updated_at": now})
    if _TIMING & changes.given:
        after = after.model_copy(update={"anchor_at": after.start_at or now})
    if state is ScheduleState.PAUSED and before.is_active:
        after = pause(after, PauseReason(code=PauseCode.PAUSED_BY_USER, message="paused by its owner"), now)
    elif state is ScheduleState.ACTIVE and not before.is_active:
        after = resume(after, now)
    return after


def _follow(written: Schedule, before: Schedule, now: datetime, deps: ScheduleDependencies) -> None:
    """Scheduler takes the change (and the moved firing with it); if it refuses, the stored
    schedule goes back to ``before``."""
    if deps.timer is None:
        return
    try:
        deps.timer.update(written)
        follow_moved_firing(written, now, deps)
    except ExportsError as error:
        try:
            deps.schedules.replace(written, before)
        except ConditionFailed:
            logger.error("a change Scheduler refused could not be undone", extra={"schedule_id": before.schedule_id})
        raise ServiceUnavailable("the scheduler did not take the change; try again shortly") from error


def delete_schedule(schedule_id: str, user_id: str, deps: ScheduleDependencies) -> None:
    """Remove its Scheduler schedule (and its moved firing's), then the schedule (its runs stay, as ordinary tasks)."""
    schedule = owned_schedule(schedule_id, user_id, deps)
    if deps.timer is not None:
        deps.timer.delete(schedule.schedule_id)
    deps.schedules.delete(schedule)


def run_now(schedule_id: str, caller: Caller, deps: ScheduleDependencies) -> Submission:
    """A run now, by its owner, as POST /v1/exports with the caller's own token (tagged with
    the schedule, ``scheduled_for`` = now)."""
    schedule = owned_schedule(schedule_id, caller.user_id, deps)
    now = deps.api.clock().replace(microsecond=0)
    return submit_run(schedule, caller, now, deps)


def submit_run(schedule: Schedule, caller: Caller, scheduled_for: datetime, deps: ScheduleDependencies) -> Submission:
    """The task of one run: the schedule's export with its window resolved at ``scheduled_for``,
    through the ordinary submit path (admission, dedup, quotas, callbacks, retention)."""
    export_type = deps.api.registry.get(schedule.export_type, caller)
    filters = resolved_filters(schedule.filters, export_type.window(), scheduled_for, zone(schedule.timezone))
    spec = export_spec(schedule, filters)
    return submit_export(
        spec, caller, deps.api, source=TaskSource.SCHEDULE, run_of=ScheduledRun(schedule.schedule_id, scheduled_for)
    )


def export_spec(schedule: Schedule, filters: dict[str, Any]) -> ExportSpec:
    """The export one run asks for: its files are written in the schedule's zone."""
    return ExportSpec(
        export_type=schedule.export_type,
        format=schedule.format,
        filters=filters,
        priority=schedule.priority,
        timeout_sec=schedule.timeout_sec,
        callback_url=schedule.callback_url,
        csv_bom=schedule.csv_bom,
        csv_formula_guard=schedule.csv_formula_guard,
        timezone=schedule.timezone,
        csv_dialect=schedule.csv_dialect,
        locale=schedule.locale,
    )
