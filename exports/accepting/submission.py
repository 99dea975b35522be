"""Accepting an export request: validate it, store it as a PENDING task, and queue it.

The API calls :func:`submit_export` for a client's request and for a retry, and a schedule calls
it each time it fires.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from pydantic import ValidationError

from exports.accepting.admission_rules import (
    Estimates,
    Throughput,
    date_span_days,
    dedup_key,
    expected_task_rows,
    throughput_key,
)
from exports.accepting.dependencies import ApiDependencies
from exports.accepting.validation import invalid_request
from exports.audit.service import check_submit_quotas
from exports.core.caller import Caller
from exports.core.capacity import give_back_queue_places, pools_of
from exports.core.capacity_rules import Pool, admission_window, estimate, plan, retry_after_sec
from exports.core.config.limits import Admission
from exports.core.config.metrics import Metric
from exports.core.config.queues import lane_for
from exports.core.customer_errors import customer_message
from exports.core.errors import (
    CapacityEstimate,
    ConditionFailed,
    DuplicateSubmission,
    ExportsError,
    InvalidRequest,
    Overloaded,
    RetryableError,
    ServiceUnavailable,
)
from exports.core.event_publishing import publish
from exports.core.events import export_created
from exports.core.ids import new_task_id
from exports.core.ports import TaskMessage
from exports.core.public_address import UnresolvedHost, check_destination
from exports.core.spec import ExportSpec
from exports.core.status import TaskStatus
from exports.core.task import ScheduledRun, Task, TaskSource, fail, merge_request, new_task
from exports.core.task_writes import end_task
from exports.core.zones import UnknownZone, canonical_zone

logger = logging.getLogger(__name__)
ENQUEUE_FAILED = "ENQUEUE_FAILED"
# The code of a capacity refusal: the work queued ahead would make the task miss its deadline.
WOULD_TIME_OUT = "WOULD_TIME_OUT"
SCHEDULE_FAILED = "SCHEDULE_FAILED"
_ADMIT_ATTEMPTS = 5
DEFAULT_THROUGHPUT = Throughput(
    rows_per_sec=Estimates.DEFAULT_ROWS_PER_SEC,
    task_sec=Estimates.DEFAULT_TASK_SEC,
    rows_per_task=Estimates.DEFAULT_ROWS_PER_SEC * Estimates.DEFAULT_TASK_SEC,
)


@dataclass(frozen=True)
class Submission:
    """What a submit achieved: a new task, or the identical one already active.

    ``deduplicated`` is True when the request was merged into the active task.
    ``estimated_completion_sec`` estimates in how many seconds the task will be done.
    """

    task: Task
    estimated_completion_sec: int
    deduplicated: bool = False


def submit_export(
    request: ExportSpec,
    caller: Caller,
    deps: ApiDependencies,
    source: TaskSource = TaskSource.API,
    retry_of: str | None = None,
    run_of: ScheduledRun | None = None,
) -> Submission:
    """Admits an export request and returns the task that answers it.

    The request is validated first. It is refused when the queue is too full or the caller is
    over quota. It is merged into an identical active task if there is one. Otherwise a new task
    is stored, its lifecycle workflow is started, and its message is put on the queue.

    The export type must be one that ``caller`` may use. Any other type is unknown, as if it did
    not exist. The values the type binds from the caller's token are recorded on the task. A
    token that lacks one of them is refused with :class:`CallerRefused`.

    Nothing is stored unless the whole request is valid and admitted. That includes the callback
    URL, which must pass the SSRF guard: a check that the URL points to a public address. If the
    workflow or the queue refuses the new task, the task is marked FAILED at once, with
    ``SCHEDULE_FAILED`` or ``ENQUEUE_FAILED``, rather than left PENDING. The caller then gets
    :class:`ServiceUnavailable` and may retry.

    ``run_of`` is the schedule and the firing time that a scheduled run is for. The task records
    both.
    """
    export_type = deps.registry.get(request.export_type, caller)
    if request.format not in export_type.formats:
        raise InvalidRequest(f"export type {export_type.name} does not produce {request.format.value}", field="format")
    try:
        timezone = canonical_zone(request.timezone)
    except UnknownZone as error:
        raise InvalidRequest(str(error), field="timezone") from None
    bound = export_type.bind_caller(caller)
    try:
        filters = export_type.parse_filters(request.filters, bound)
    except ValidationError as error:
        raise invalid_request(error, prefix="filters") from None
    user_id = caller.user_id
    callback_url = request.callback_url
    if callback_url:
        _check_callback(callback_url, deps, scheduled=run_of is not None)
    tenant = None
    if deps.audit is not None:
        tenant = deps.audit.tenancy.tenant_of(caller)
        check_submit_quotas(tenant, deps.audit)

    if _backlog(deps) >= deps.settings.max_backlog:
        deps.metrics.add(Metric.REJECTED)
        raise Overloaded(
            "the export queue is full; try again later",
            code="BACKLOG_FULL",
            retry_after=Admission.RETRY_AFTER_BACKLOG_SEC,
        )
    canonical_filters = filters.model_dump(mode="json", exclude_none=True)
    measured = _measured_throughput(throughput_key(export_type.name, request.format.value), deps)
    known_rows = export_type.expected_rows(filters)
    throughput = measured or DEFAULT_THROUGHPUT
    rows = expected_task_rows(throughput, known_rows, date_span_days(canonical_filters))
    now = deps.clock()
    task = new_task(
        task_id=new_task_id(now),
        user_id=user_id,
        export_type=export_type.name,
        format=request.format,
        filters=canonical_filters,
        caller=bound,
        tenant=tenant,
        # Only a count that is known or measured. A made-up default would show a wrong percentage.
        estimated_rows=round(rows) if measured is not None or known_rows is not None else None,
        csv_bom=request.csv_bom,
        csv_formula_guard=request.csv_formula_guard,
        timezone=timezone,
        csv_dialect=request.csv_dialect,
        locale=request.locale or export_type.default_locale,
        priority=request.priority,
        timeout_sec=request.timeout_sec,
        callback_url=callback_url,
        now=now,
        retention=deps.settings.retention,
        source=source,
        retry_of=retry_of,
        schedule_id=run_of.schedule_id if run_of else None,
        scheduled_for=run_of.scheduled_for if run_of else None,
        skip_empty=run_of.skip_empty if run_of else False,
        delivery=request.delivery,
        # An export delivered to destinations is never merged into another. Its deliveries are its own.
        dedup_key=None
        if request.delivery
        else dedup_key(
            user_id,
            export_type.name,
            request.format.value,
            canonical_filters,
            request.csv_bom,
            timeout_sec=request.timeout_sec,
            csv_formula_guard=request.csv_formula_guard,
            caller=bound,
            timezone=timezone,
            run_of=f"{run_of.schedule_id}@{run_of.scheduled_for.isoformat()}" if run_of else None,
            csv_dialect=request.csv_dialect,
            locale=request.locale if request.locale != export_type.default_locale else None,
        ),
    )
    work_sec = throughput.run_sec(rows)
    try:
        task, estimated = _reserve(
            task, pools_of(export_type, task.priority, deps), work_sec, measured is not None, deps
        )
    except Overloaded as refused:
        # An identical export already active answers the request, however full the queue.
        merged = _merged_into_active(task, deps)
        if merged is None:
            raise
        return Submission(merged, refused.estimate.estimated_start_sec if refused.estimate else 1, deduplicated=True)
    try:
        existing = _admit(task, deps)
    except ExportsError:
        give_back_queue_places(task, deps)
        raise
    if existing is not None:
        give_back_queue_places(task, deps)
        return Submission(existing, estimated, deduplicated=True)
    _dispatch(task, SCHEDULE_FAILED, lambda: deps.lifecycle.start(task), deps)
    message = TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority)
    _dispatch(task, ENQUEUE_FAILED, lambda: deps.queue.send(message), deps)
    deps.metrics.add(Metric.SUBMITTED)
    publish(deps.events, export_created(task, deps.clock()))
    return Submission(task, estimated)


def caller_scope(export_type: str, caller: Caller, deps: ApiDependencies) -> str:
    """The part of an Idempotency-Key's scope that is not the user.

    It is made of the values the requested type binds from the caller's token. So a key reused
    under another tenant claim counts as another request. The scope is empty when the type binds
    no value, or when the type is refused: the submit then fails anyway.
    """
    try:
        bound = deps.registry.get(export_type, caller).bind_caller(caller)
    except ExportsError:
        return ""
    return json.dumps(bound, sort_keys=True, ensure_ascii=False) if bound else ""


def _backlog(deps: ApiDependencies) -> int:
    """The number of messages waiting in all lanes together. A lane is the queue of one priority.

    This count is the queue's hard ceiling, checked beside admission by deadline. When it cannot
    be read the result is 0. The ceiling then fails open, and the enqueue itself still reports a
    broken queue.
    """
    try:
        return sum(deps.queue.depths().values())
    except ExportsError:
        logger.warning("could not read the queue depth", exc_info=True)
        return 0


def _reserve(task: Task, pools: list[Pool], work_sec: float, measured: bool, deps: ApiDependencies) -> tuple[Task, int]:
    """Queues the task's work in each of its capacity pools, if the task should finish within
    its deadline's admission window (docs/capacity.md).

    Returns the task, marked with its queued work, and the seconds until it should be done. When
    a pool holds too much work ahead of it, raises :class:`Overloaded` with ``WOULD_TIME_OUT``.
    Nothing then stays reserved, and ``Retry-After`` says when the fullest pool will have room.
    """
    window = admission_window(task.timeout_sec, Admission.DEADLINE_SHARE)
    allowed = plan(pools, work_sec, window)
    ahead: dict[str, float] = {}
    for pool in pools:
        reservation = deps.capacity.reserve(pool.name, work_sec, allowed.limits[pool.name])
        if not reservation.admitted:
            partly = task.model_copy(update={"queued_work_sec": work_sec, "queued_in": tuple(ahead)})
            give_back_queue_places(partly, deps)
            _refuse(pool, pools, reservation.queued_sec, allowed.limits[pool.name], allowed.run_sec, task, deps)
        ahead[pool.name] = reservation.queued_sec
    reserved = task.model_copy(
        update={"queued_work_sec": work_sec, "queued_in": tuple(ahead), "queued_work_measured": measured}
    )
    return reserved, estimate(pools, ahead, allowed.run_sec).completion_sec


def _refuse(
    pool: Pool,
    pools: list[Pool],
    queued_sec: float,
    limit_sec: float,
    run_sec: float,
    task: Task,
    deps: ApiDependencies,
) -> NoReturn:
    """Raises a capacity refusal that carries the estimate it was based on and when to try
    again."""
    deps.metrics.add(Metric.CAPACITY_REFUSED)
    retry_after = retry_after_sec(pool, queued_sec, limit_sec, Admission.RETRY_AFTER_CAPACITY_MAX_SEC)
    estimated = estimate(pools, {pool.name: queued_sec}, run_sec)
    raise Overloaded(
        f"the exports queued ahead would keep this one from finishing within its timeout_sec "
        f"({task.timeout_sec} s; estimated {estimated.completion_sec} s): try again in {retry_after} s",
        code=WOULD_TIME_OUT,
        retry_after=retry_after,
        estimate=CapacityEstimate(
            estimated_start_sec=math.ceil(estimated.wait_sec),
            estimated_completion_sec=estimated.completion_sec,
            timeout_sec=task.timeout_sec,
        ),
    )


def _measured_throughput(key: str, deps: ApiDependencies) -> Throughput | None:
    """The measured throughput of the type in this format. It is None before the first run, or
    when it cannot be read. The estimate then uses the defaults."""
    try:
        return deps.throughput.get(key)
    except ExportsError:
        logger.warning("could not read the throughput statistics", exc_info=True)
        return None


def _admit(task: Task, deps: ApiDependencies) -> Task | None:
    """Stores the task and returns None. If an identical task is active, merges the request into
    it instead and returns that task."""
    replace: str | None = None
    for attempt in range(_ADMIT_ATTEMPTS):
        try:
            deps.tasks.create(task, deps.settings.max_active_tasks_per_user, replace_holder=replace)
            return None
        except DuplicateSubmission as duplicate:
            holder = deps.tasks.get(duplicate.holder) if duplicate.holder else None
            if holder is not None and not holder.is_terminal:
                try:
                    merged = _merge(holder, task, deps)
                except ConditionFailed:
                    continue  # it changed meanwhile (claimed, ended, another merge): look again
                deps.metrics.add(Metric.DEDUPLICATED)
                return merged
            # The holder ended, or its dedup marker outlived it. This task takes the key over.
            replace = duplicate.holder
        except Overloaded:
            deps.metrics.add(Metric.REJECTED)
            raise
        except RetryableError:
            # Another transaction on the same items was in flight. Back off a little and look again.
            time.sleep(0.05 * (attempt + 1) * (1 + deps.random()))
    raise ServiceUnavailable("too many identical submissions at once; try again shortly")


def _merged_into_active(task: Task, deps: ApiDependencies) -> Task | None:
    """Merges ``task`` into the identical active task and returns that task.

    Returns None when there is no such task, or when it changed meanwhile. The refusal then
    stands.
    """
    try:
        holder_id = deps.tasks.dedup_holder(task.dedup_key) if task.dedup_key else None
        holder = deps.tasks.get(holder_id) if holder_id else None
        if holder is None or holder.is_terminal:
            return None
        merged = _merge(holder, task, deps)
    except (ConditionFailed, RetryableError):
        return None
    deps.metrics.add(Metric.DEDUPLICATED)
    return merged


def _merge(holder: Task, request: Task, deps: ApiDependencies) -> Task:
    """Merges the new ``request`` into the active ``holder``, so that nothing a submitter asked
    for is dropped.

    The task takes the higher priority and calls the new submitter back too. One conditional
    write stores both. If the higher priority moves a waiting task into a higher lane, the task
    is queued again there. Its message in the lower lane is acknowledged as a duplicate when it
    arrives.
    """
    merged = merge_request(holder, request.priority, request.callback_url)
    if merged == holder:
        return holder
    deps.tasks.merge(holder, merged)
    promoted = lane_for(merged.priority).name != lane_for(holder.priority).name
    if promoted and merged.status is TaskStatus.PENDING:
        message = TaskMessage(task_id=merged.task_id, export_type=merged.export_type, priority=merged.priority)
        try:
            deps.queue.send(message)
        except ExportsError:
            # The task keeps its place in the lower lane. It runs late but is never lost.
            logger.warning("could not queue a promoted task in its new lane", exc_info=True)
        deps.metrics.add(Metric.PROMOTED)
    return merged


def _dispatch(task: Task, code: str, send: Callable[[], None], deps: ApiDependencies) -> None:
    """Runs ``send``. If it fails, ends the stored task FAILED with ``code`` and raises
    :class:`ServiceUnavailable` for the caller."""
    try:
        send()
    except ExportsError as error:
        _fail_unscheduled(task, code, deps)
        deps.metrics.add(Metric.ENQUEUE_FAILED)
        raise ServiceUnavailable("the export service is busy; try again shortly") from error


def _check_callback(url: str, deps: ApiDependencies, scheduled: bool) -> None:
    """Runs the SSRF guard on the callback URL.

    On a caller's own submit, a host that does not resolve is refused. A scheduled run's URL was
    accepted with its schedule (docs/schedules.md, "The model"), so a host that does not resolve
    now is not refused here. The callback's delivery checks the host again.
    """
    try:
        check_destination(url, deps.resolve, deps.settings.allow_local_callbacks)
    except UnresolvedHost:
        if not scheduled:
            raise


def _fail_unscheduled(task: Task, code: str, deps: ApiDependencies) -> None:
    """Ends the stored task FAILED with ``code``. :func:`end_task` retries transient faults.

    A task left PENDING without its message, or without its workflow (which would time it out),
    would hold a quota slot and its dedup key for nothing. A resubmission would also be merged
    into it.
    """
    failed = fail(task, code, customer_message(code, task.task_id), deps.clock(), deps.settings.retention)
    try:
        end_task(task, failed, deps)
    except ConditionFailed:
        return  # it has ended already
    except ExportsError:
        logger.error("a task that could not be scheduled could not be marked FAILED either", extra={"code": code})
