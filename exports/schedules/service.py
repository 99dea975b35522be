"""The schedules API's operations: create, list, read, change, delete, run now. Every one is
its owner's only: another user's schedule is not found."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from ulid import ULID

from exports.accepting.submission import Submission, submit_export
from exports.accepting.validation import invalid_request
from exports.core.caller import TOKEN_CLAIMS, Caller
from exports.core.config.schedules import Schedules
from exports.core.csv_dialect import CsvEncoding
from exports.core.deliveries import DEFAULT_PATH_TEMPLATE, DeliveryPlan
from exports.core.errors import ConditionFailed, ExportsError, InvalidRequest, ServiceUnavailable
from exports.core.export_type import AnyExportType, ChangeWindow
from exports.core.public_address import UnresolvedHost, check_destination
from exports.core.spec import ExportSpec
from exports.core.task import ScheduledRun, TaskSource
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.expression import check_interval, recurrence_of, zone
from exports.schedules.feed import bind_task, end_feed_run, feed_window, holding, is_feed, release, reserve
from exports.schedules.filters import feed_filters, resolved_filters
from exports.schedules.mail import check_recipients, verified_email
from exports.schedules.model import (
    SCHEDULE_ID_PREFIX,
    Every,
    FeedRun,
    PauseCode,
    PauseReason,
    Schedule,
    ScheduleState,
    StoredCaller,
    WhenEmpty,
    pause,
    resume,
)
from exports.schedules.ports import FeedBusy, ScheduleConflict, ScheduleNotFound, SchedulePage
from exports.schedules.scheduler_expression import scheduler_expression

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
    when_empty: WhenEmpty = WhenEmpty.SEND


@dataclass(frozen=True)
class ScheduleChanges:
    """What a PATCH changes (only the fields given: ``given`` names them)."""

    values: dict[str, Any] = field(default_factory=dict)

    @property
    def given(self) -> frozenset[str]:
        """The names of the fields the PATCH carries."""
        return frozenset(self.values)


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


def _tenant_claim(deps: ScheduleDependencies) -> str | None:
    """The claim that names a caller's tenant, where the deployment keeps an audit trail."""
    return deps.api.audit.tenancy.tenants.claim if deps.api.audit is not None else None


def stored_caller(
    export_type: AnyExportType, caller: Caller, own_email: str | None, tenant_claim: str | None = None
) -> StoredCaller:
    """What the schedule keeps of ``caller``'s token: the claims the type binds or its access
    rule reads (every claim but the token's own for a type that cannot say), the deployment's
    tenant claim (``tenant_claim``, where it keeps an audit trail: its runs and what the service
    does to it are its tenant's, docs/audit.md), the scopes only when the rule reads them, and the
    owner's verified address ``own_email``. Never the token."""
    read = export_type.claims_read()
    names = read.claims
    claims = {
        name: value
        for name, value in caller.claims.items()
        if name not in TOKEN_CLAIMS and (names is None or name in names or name == tenant_claim)
    }
    scopes = tuple(sorted(caller.granted_scopes())) if read.scopes else None
    return StoredCaller(user_id=caller.user_id, claims=claims, scopes=scopes, verified_email=own_email)


def validate(
    schedule: Schedule,
    caller: Caller,
    deps: ScheduleDependencies,
    now: datetime,
    own_email: str | None,
    patched: bool = False,
) -> AnyExportType:
    """Everything a create or a change must pass, the type's access rule included (a 422 or
    403 naming the field otherwise; recipients in the deployment's domains or ``own_email``,
    the owner's verified address); returns the export type. ``patched``: a PATCH, whose body
    neither names the type nor carries ``csv_bom``: filters the type does not take and an
    encoding against the stored ``csv_bom`` conflict with the schedule (409, the field named)."""
    export_type = deps.api.registry.get(schedule.export_type, caller)
    if schedule.format not in export_type.formats:
        raise InvalidRequest(f"export type {export_type.name} does not produce {schedule.format.value}", field="format")
    if schedule.csv_bom and schedule.csv_dialect.encoding is not CsvEncoding.UTF_8:
        # A create's schema refuses it in its body; a PATCH of csv_dialect meets the stored csv_bom.
        message = "csv_bom is for UTF-8 files: Excel reads the other encodings without one"
        if patched:
            raise ScheduleConflict(f"the schedule has csv_bom: {message}", field="csv_dialect.encoding")
        raise InvalidRequest(message, field="csv_dialect.encoding")
    tz = zone(schedule.timezone)
    if (schedule.cron is None) == (schedule.every is None):
        raise InvalidRequest("give exactly one of cron or every", field="cron")
    scheduler_expression(schedule.cron, schedule.every)  # refuses what Scheduler cannot run
    minimum = timedelta(minutes=deps.api.settings.min_schedule_interval_min)
    check_interval(recurrence_of(schedule), now, minimum)
    settings = deps.api.settings
    check_recipients(schedule.recipients, settings.mail_sender, settings.allowed_mail_domains, own_email)
    bound = export_type.bind_caller(caller)
    try:
        _check_filters(schedule, export_type, bound, now, tz)
    except InvalidRequest as refused:
        if not patched:
            raise
        raise ScheduleConflict(
            f"the filters do not fit the schedule's export type {export_type.name}: {refused.message}",
            field=refused.field or "filters",
            problems=refused.problems,
        ) from None
    if schedule.callback_url:
        try:
            check_destination(schedule.callback_url, deps.api.resolve, settings.allow_local_callbacks)
        except UnresolvedHost:
            # Taken: a schedule lives for months and DNS changes; each run's delivery checks the
            # host again (and refuses one that resolves to a private address then).
            logger.info("schedule callback host does not resolve yet", extra={"schedule_id": schedule.schedule_id})
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
        delivery=export.delivery,
        cron=spec.cron,
        every=spec.every,
        timezone=spec.timezone,
        start_at=spec.start_at,
        end_at=spec.end_at,
        recipients=spec.recipients,
        when_empty=spec.when_empty,
        created_at=now,
        updated_at=now,
        anchor_at=spec.start_at or now,
    )
    own_email = verified_email(caller.claims)
    export_type = validate(schedule, caller, deps, now, own_email)
    stored = stored_caller(export_type, caller, own_email, _tenant_claim(deps))
    schedule = schedule.model_copy(update={"caller": stored})
    deps.schedules.create(schedule, deps.api.settings.max_schedules_per_user)
    if deps.timer is not None:
        try:
            deps.timer.create(schedule, now)
            follow_moved_firing(schedule, now, deps)
        except ExportsError as error:
            deps.schedules.delete(schedule)
            raise ServiceUnavailable("the scheduler did not take the schedule; try again shortly") from error
    return schedule


def _check_filters(
    schedule: Schedule, export_type: AnyExportType, bound: dict[str, Any], now: datetime, tz: ZoneInfo
) -> None:
    """The schedule's filters as a firing now would resolve them, parsed by its type (a 422
    naming the filter otherwise)."""
    sample = feed_filters(schedule.filters, export_type.changes(), (now, now))
    sample = resolved_filters(sample, export_type.window(), now, tz)
    try:
        export_type.parse_filters(sample, bound)
    except ValidationError as error:
        raise invalid_request(error, prefix="filters") from None


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


# A PATCH's fields of where each run's file goes (docs/destinations.md).
_DELIVERY = frozenset({"destinations", "path_template"})

# Checks the destinations a body names and makes the plan (the caller's tenant's, usable, ACTIVE:
# a 422 naming ``destinations.<i>`` otherwise), as a create's body is checked.
PlanDelivery = Callable[[Sequence[str], str | None, Caller], DeliveryPlan | None]


def update_schedule(
    schedule_id: str,
    changes: ScheduleChanges,
    caller: Caller,
    deps: ScheduleDependencies,
    plan_delivery: PlanDelivery | None = None,
) -> Schedule:
    """Apply a PATCH: validated like a create (against the caller's current token, whose claims
    the schedule then keeps; a token without a verified address keeps the one recorded before);
    ``state`` ACTIVE resumes (clearing the reason and the failure count), PAUSED pauses
    (``PAUSED_BY_USER``); ``destinations`` and ``path_template`` through ``plan_delivery``.
    Scheduler follows."""
    for _ in range(_WRITE_ATTEMPTS):
        before = owned_schedule(schedule_id, caller.user_id, deps)
        now = deps.api.clock()
        after = _changed(before, changes, now)
        if _DELIVERY & changes.given:
            after = after.model_copy(update={"delivery": _delivery_after(before, changes, caller, plan_delivery)})
        own_email = verified_email(caller.claims) or before.caller.verified_email
        export_type = validate(after, caller, deps, now, own_email, patched=True)
        if "watermark" in changes.given:
            _check_watermark(after, export_type)
        after = after.model_copy(update={"caller": stored_caller(export_type, caller, own_email, _tenant_claim(deps))})
        try:
            written = deps.schedules.replace(before, after)
        except ConditionFailed:
            continue  # changed meanwhile (a firing, a run's end): apply the PATCH to the new one
        _follow(written, before, now, deps)
        return written
    raise ServiceUnavailable("the schedule kept changing; try again")


def _check_watermark(schedule: Schedule, export_type: AnyExportType) -> None:
    """A watermark set by a PATCH: a feed's only (a 409 on any other schedule, whose body could
    not know). ``null`` on a schedule that is no feed clears what it does not have: nothing to
    refuse. A watermark in the future is where the feed starts: its runs until then cover an
    empty span (exports.schedules.feed.feed_window), as a feed whose ``start_at`` is ahead."""
    if schedule.watermark is None and not is_feed(schedule.filters):
        return
    if export_type.changes() is None or not is_feed(schedule.filters):
        raise ScheduleConflict(
            f"schedule {schedule.schedule_id} is no feed (since_last_run): only a feed has a watermark",
            field="watermark",
        )


def _delivery_after(
    before: Schedule, changes: ScheduleChanges, caller: Caller, plan_delivery: PlanDelivery | None
) -> DeliveryPlan | None:
    """Where each run's file goes after the PATCH: the destinations given (checked as on a
    create) or kept, with the template given (``None``: the default) or kept. A template on a
    schedule left without destinations does not fit it (409, as the body could not know)."""
    values, kept = changes.values, before.delivery
    destination_ids = tuple(values.get("destinations", kept.destination_ids if kept else ()))
    template = values.get("path_template", kept.path_template if kept else None)
    if not destination_ids:
        if template is not None and "path_template" in values:
            raise ScheduleConflict(
                f"schedule {before.schedule_id} delivers to no destination: name `destinations` with a path template",
                field="path_template",
            )
        return None
    if "destinations" not in values and kept is not None:
        return kept.model_copy(update={"path_template": template or DEFAULT_PATH_TEMPLATE})
    if plan_delivery is None:
        raise InvalidRequest("this deployment does not deliver to destinations", field="destinations")
    return plan_delivery(destination_ids, template, caller)


def _changed(before: Schedule, changes: ScheduleChanges, now: datetime) -> Schedule:
    values = {name: value for name, value in changes.values.items() if name not in _DELIVERY}
    state = values.pop("state", None)
    if "cron" in values and values["cron"] is not None:
        values.setdefault("every", None)
    if "every" in values and values["every"] is not None:
        values.setdefault("cron", None)
    after = before.model_copy(update={**values, "updated_at": now})
    if _TIMING & changes.given:
        after = after.model_copy(update={"anchor_at": after.start_at or now})
    if "watermark" in changes.given:
        # A reset: the run in flight no longer moves the watermark when it ends.
        after = after.model_copy(update={"feed_run": None})
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
        deps.timer.update(written, now)
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
    through the ordinary submit path (admission, dedup, quotas, callbacks, retention). A feed's
    run is reserved on the schedule first (:class:`FeedBusy` while its previous run is in
    flight), and the reservation is given back when no task could be made."""
    export_type = deps.api.registry.get(schedule.export_type, caller)
    changes = export_type.changes()
    if changes is None or not is_feed(schedule.filters):
        feed_filters(schedule.filters, changes, (scheduled_for, scheduled_for))  # 422 for a type that is no feed
        return _submit(schedule, schedule.filters, caller, scheduled_for, export_type, deps)
    reserved = _reserve(schedule, changes, scheduled_for, deps)
    run = reserved.feed_run
    assert run is not None
    filters = feed_filters(schedule.filters, changes, (run.window_from, run.window_to))
    try:
        submission = _submit(reserved, filters, caller, scheduled_for, export_type, deps)
    except ExportsError:
        _rewrite(schedule.schedule_id, deps, lambda current: release(current) if _reserved_by(current, run) else None)
        raise
    task_id = submission.task.task_id
    _rewrite(
        schedule.schedule_id, deps, lambda current: bind_task(current, task_id) if _reserved_by(current, run) else None
    )
    return submission


def _submit(
    schedule: Schedule,
    filters: dict[str, Any],
    caller: Caller,
    scheduled_for: datetime,
    export_type: AnyExportType,
    deps: ScheduleDependencies,
) -> Submission:
    resolved = resolved_filters(filters, export_type.window(), scheduled_for, zone(schedule.timezone))
    run_of = ScheduledRun(schedule.schedule_id, scheduled_for, skip_empty=schedule.when_empty is WhenEmpty.SKIP)
    return submit_export(export_spec(schedule, resolved), caller, deps.api, source=TaskSource.SCHEDULE, run_of=run_of)


def _reserved_by(schedule: Schedule, run: FeedRun) -> bool:
    current = schedule.feed_run
    return current is not None and current.scheduled_for == run.scheduled_for and current.task_id is None


def _reserve(
    schedule: Schedule, changes: ChangeWindow, scheduled_for: datetime, deps: ScheduleDependencies
) -> Schedule:
    """The feed with the run of ``scheduled_for`` reserved (a conditional write): from the
    watermark to the firing less the lag. A run in flight whose task has ended is taken as
    ended here (its end may not have been observed yet); one still running is
    :class:`FeedBusy`."""
    lease = timedelta(seconds=Schedules.FEED_RESERVATION_LEASE_SEC)
    stored: Schedule | None = schedule
    for _ in range(_WRITE_ATTEMPTS):
        if stored is None:
            raise ScheduleNotFound(schedule.schedule_id)
        now = deps.api.clock()
        current = stored
        run = current.feed_run
        if run is not None and run.task_id is not None:
            task = deps.api.tasks.get(run.task_id)
            if task is None:
                current = release(current)
            elif task.is_terminal:
                current = end_feed_run(current, task)
        if holding(current.feed_run, now, lease):
            assert current.feed_run is not None
            raise FeedBusy(schedule.schedule_id, current.feed_run.task_id)
        window = feed_window(current, changes, scheduled_for)
        try:
            return deps.schedules.replace(stored, reserve(current, scheduled_for, window, now))
        except ConditionFailed:
            stored = deps.schedules.get(schedule.schedule_id)
    raise ServiceUnavailable("the schedule kept changing; try again")


def _rewrite(schedule_id: str, deps: ScheduleDependencies, change: Callable[[Schedule], Schedule | None]) -> None:
    """Apply ``change`` to the stored schedule (re-read when another write came first); None
    from ``change``: nothing to write."""
    for _ in range(_WRITE_ATTEMPTS):
        current = deps.schedules.get(schedule_id)
        after = change(current) if current is not None else None
        if current is None or after is None:
            return
        try:
            deps.schedules.replace(current, after)
            return
        except ConditionFailed:
            continue
    logger.error("a feed's run could not be written on its schedule", extra={"schedule_id": schedule_id})


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
        delivery=schedule.delivery,
    )
