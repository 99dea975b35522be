"""The worker's handling of one task message (one SQS record): claim the task, stream its rows
into a file on S3, and end it.

:func:`process_task` does this for the task a message names. It may also defer the task, skip a
duplicate message, or time out a task whose deadline has passed. Every ending goes through the
one table in :func:`exports.running.endings.settle`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from pydantic import ValidationError

from exports.accepting.admission_rules import date_span_days, expected_task_rows, throughput_key
from exports.accepting.validation import invalid_request
from exports.core.capacity import take_queue_places
from exports.core.capacity_rules import too_late_to_finish
from exports.core.config.metrics import Metric
from exports.core.config.retry import HOT_KEY_DEFERRAL, SOURCE_BUSY_DEFERRAL
from exports.core.errors import (
    ConditionFailed,
    ExportFailed,
    ExportsError,
    LostOwnership,
    RetryableError,
    SourceQueryTimeout,
    TaskNotFound,
)
from exports.core.policies import is_last_receipt, retry_delay_sec
from exports.core.ports import Receipt, RemainingMs, TaskMessage
from exports.core.task import Task, claim, fail
from exports.core.task_writes import end_task, move_task
from exports.running.dependencies import WorkerDependencies
from exports.running.endings import (
    Failed,
    Lost,
    Outcome,
    OutOfTime,
    Passed,
    RunOutcome,
    Written,
    count_failure,
    end_not_begun,
    end_timed_out,
    message_for,
    settle,
)
from exports.running.export_run import run_export
from exports.running.fan_out.plan import start_fan_out
from exports.running.formats.run import HandedOver
from exports.running.ports import SlotLease
from exports.running.progress import ProgressReporter, slot_keeper

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "INTERNAL_ERROR"


# An unforeseen error that a value raises (an encoding error, a value of the wrong type, an
# arithmetic fault): the same rows raise it again, so the task fails at once, not after retries.
VALUE_ERROR = "VALUE_ERROR"
_DETERMINISTIC = (ValueError, TypeError, ArithmeticError)
# The error's own words in the task's message, at most this many characters.
_DETAIL_CHARS = 300


INVALID_FILTERS = "INVALID_FILTERS"


PROCESSING_FAILED = "PROCESSING_FAILED"


def process_message(
    message: TaskMessage, receipt: Receipt, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> Outcome:
    """:func:`process_task` for one ``receipt`` of ``message``; errors go back to SQS.

    A failed receipt comes back after a short backoff, not the queue's visibility timeout (90
    minutes, past any deadline), so a message that keeps failing reaches the DLQ within minutes.
    When the last receipt before the DLQ fails too, the task (if there is one) ends FAILED with
    ``PROCESSING_FAILED`` first: nothing else would end it before its deadline, and its quota slot
    would stay taken until then.
    """
    try:
        return process_task(message, deps, remaining_ms)
    except Exception as error:
        if is_last_receipt(receipt.receive_count):
            _fail_dead_lettered(message.task_id, error, deps)
        else:
            _back_off(receipt, deps)
        raise


def _back_off(receipt: Receipt, deps: WorkerDependencies) -> None:
    try:
        deps.queue.retry_later(receipt, retry_delay_sec(receipt.receive_count - 1, deps.random))
    except ExportsError:
        logger.warning("could not shorten the failed receipt's visibility timeout", exc_info=True)


def _fail_dead_lettered(task_id: str, error: Exception, deps: WorkerDependencies) -> None:
    try:
        task = deps.tasks.get(task_id)
        if task is None or task.is_terminal:
            return
        message = message_for(task, PROCESSING_FAILED, deps)
        end_task(task, fail(task, PROCESSING_FAILED, message, deps.clock(), deps.settings.retention), deps)
    except ExportsError:
        logger.exception("could not fail a task whose message goes to the dead-letter queue")
        return
    count_failure(task, PROCESSING_FAILED, deps)
    logger.error(
        "task failed: its message goes to the dead-letter queue",
        extra={"error_code": PROCESSING_FAILED, "detail": type(error).__name__, "task_id": task_id},
    )


def process_task(message: TaskMessage, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None) -> Outcome:
    """Run the task named by ``message`` once, whatever how often the message arrives.
    ``remaining_ms``: the invocation's time left (a long export hands over before it runs out;
    None: unbounded).

    Raises only for receipts SQS should retry: unknown tasks (they end in the DLQ), and
    transient faults when even sending the message again fails.
    """
    try:
        claimed = _claim(message, deps)
    except RetryableError as error:
        return _requeue(message, error, deps)
    if isinstance(claimed, Outcome):
        return claimed
    task, lease = claimed
    deps.metrics.add(Metric.STARTED)
    try:
        # Its progress writes renew the source slot too.
        progress = ProgressReporter(task, deps, on_write=slot_keeper(lease, deps))
        return settle(_split_or_write(task, progress, deps, remaining_ms), progress.task, deps)
    finally:
        if lease is not None:
            _release(lease, deps)


def _claim(message: TaskMessage, deps: WorkerDependencies) -> tuple[Task, SlotLease | None] | Outcome:
    """The task, claimed for this worker, with the slot of its source it holds; or what became
    of the receipt instead."""
    task = deps.tasks.get(message.task_id)
    if task is None:
        raise TaskNotFound(message.task_id)
    now = deps.clock()
    if not task.is_claimable(now):
        deps.metrics.add(Metric.DUPLICATE_DELIVERY)
        logger.info("task not claimable, receipt acknowledged", extra={"status": task.status.value})
        return Outcome.SKIPPED
    if now >= task.deadline:
        return end_timed_out(task, deps)
    work_now = _measured_work(task, deps)
    run_sec = _run_too_long(task, now, work_now if work_now is not None else task.queued_work_sec)
    if run_sec is not None:
        return end_not_begun(task, run_sec, deps)
    wait = _hot_key_wait(task, deps)
    if wait > 0:
        return _defer(task, HOT_KEY_DEFERRAL.delay_sec(deps.random(), after=wait), deps)
    free, lease = _acquire_source_slot(task, deps)
    if not free:
        deps.metrics.add(Metric.SOURCE_DEFERRED)
        return _defer(task, SOURCE_BUSY_DEFERRAL.delay_sec(deps.random()), deps, counted=False)
    claimed = claim(task, now, deps.settings.lease)
    try:
        move_task(task, claimed, deps)
    except BaseException as error:
        if lease is not None:
            _release(lease, deps)
        if isinstance(error, ConditionFailed):
            deps.metrics.add(Metric.DUPLICATE_DELIVERY)
            return Outcome.SKIPPED
        raise
    take_queue_places(task, now, deps)
    return claimed, lease


def _measured_work(task: Task, deps: WorkerDependencies) -> float | None:
    """The run of a task admitted by deadline as its type's measured speed estimates it now
    (the speed may have been measured since it was queued: a cold stack's first runs); None
    for a task not admitted by deadline or a type whose speed was never measured."""
    if task.queued_work_sec is None:
        return None
    try:
        measured = deps.throughput.get(throughput_key(task.export_type, task.format.value))
    except ExportsError:
        return None
    if measured is None:
        return None
    return measured.run_sec(expected_task_rows(measured, task.estimated_rows, date_span_days(task.filters)))


def _run_too_long(task: Task, now: datetime, run_sec: float | None) -> float | None:
    """The estimated run of a task that should not be begun, since it would pass its deadline;
    None to go on (or when the task was not admitted by deadline: no estimate to go by)."""
    if run_sec is None:
        return None
    late = too_late_to_finish((task.deadline - now).total_seconds(), run_sec, task.timeout_sec)
    return run_sec if late else None


def _acquire_source_slot(task: Task, deps: WorkerDependencies) -> tuple[bool, SlotLease | None]:
    """Whether the task may run now, and the slot of its source it took (None when the source
    is not limited). False when every slot is busy."""
    limit = deps.registry.get(task.export_type).source_limit()
    if limit is None:
        return True, None
    lease = deps.slots.acquire(limit.source, limit.max_concurrent, task.task_id, deps.clock())
    if lease is None:
        logger.info("data source at its limit of concurrent exports", extra={"source": limit.source})
        return False, None
    return True, lease


def _release(lease: SlotLease, deps: WorkerDependencies) -> None:
    try:
        deps.slots.release(lease)
    except ExportsError:
        # Its lease runs out by itself: the slot is free again after SOURCE_SLOT_LEASE_SEC.
        logger.warning("could not release a source slot", extra={"source": lease.source}, exc_info=True)


def _requeue(message: TaskMessage, error: RetryableError, deps: WorkerDependencies) -> Outcome:
    """A transient fault before the task was claimed: send the message again, soon, with backoff,
    and acknowledge this one. Failed back to SQS it would count towards the DLQ, which is for
    messages that cannot be handled, not for a dependency's bad minutes. The deadline still bounds
    the task."""
    delay = retry_delay_sec(message.requeues, deps.random)
    deps.queue.send(replace(message, requeues=message.requeues + 1), delay_sec=delay)
    deps.metrics.add(Metric.REDELIVERED)
    logger.warning("transient fault before the claim; message sent again", extra={"error_code": error.code})
    return Outcome.REDELIVERED


def _hot_key_wait(task: Task, deps: WorkerDependencies) -> float:
    """Seconds to wait before this task's hot key has a token; 0 to run now."""
    export_type = deps.registry.get(task.export_type)
    try:
        hot_key = export_type.hot_key(export_type.task_filters(task))
    except ValidationError:
        return 0.0  # the run itself fails the task with INVALID_FILTERS
    return deps.limiter.acquire(hot_key, deps.clock()) if hot_key else 0.0


def _defer(task: Task, delay: int, deps: WorkerDependencies, counted: bool = True) -> Outcome:
    """Come back later: a new delayed message, this one acknowledged. The task stays PENDING and
    keeps its retry budget; the fresh message starts its receive count over, so deferral never
    leads to the DLQ. ``counted``: a hot-key deferral (the source's own metric is counted by the
    caller)."""
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority), delay_sec=delay
    )
    if counted:
        deps.metrics.add(Metric.DEFERRED)
    logger.info("task deferred", extra={"delay_sec": delay})
    return Outcome.DEFERRED


def _split_or_write(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None
) -> RunOutcome:
    """Split a large export into partitions written at once (the fan-out workflow goes on with
    it, see :mod:`exports.running.fan_out`), or stream the task's file to S3 (see
    :mod:`exports.running.export_run`), which a long CSV or JSON Lines export hands over to a new
    invocation."""
    try:
        planned = start_fan_out(task, progress, deps, remaining_ms)
        if planned.split:
            return Passed(Outcome.FANNED_OUT)
        written = run_export(task, progress, deps, remaining_ms, planned.rows)
    except Exception as error:  # the worker's edge: an unforeseen fault must still end the task
        return _outcome_of(error, task, deps)
    if isinstance(written, HandedOver):
        logger.info("export handed over to a new invocation with its checkpoint")
        return Passed(Outcome.CONTINUED)
    return Written(written)


def _outcome_of(error: Exception, task: Task, deps: WorkerDependencies) -> RunOutcome:
    """The outcome an error that ended a run stands for."""
    if isinstance(error, LostOwnership):
        return Lost()
    if isinstance(error, SourceQueryTimeout) and deps.clock() >= task.deadline:
        return OutOfTime()
    if isinstance(error, ExportFailed):
        return Failed(error.code, error.message)
    if isinstance(error, ValidationError):
        # Stored filters that no longer validate (e.g. the export type changed): no retry helps.
        return Failed(INVALID_FILTERS, invalid_request(error).message)
    if isinstance(error, RetryableError):
        return Failed(error.code, error.message, retryable=True)
    logger.exception("export crashed")
    if isinstance(error, _DETERMINISTIC):
        detail = f"{type(error).__name__}: {error}"[:_DETAIL_CHARS]
        return Failed(VALUE_ERROR, f"the export met a value it cannot handle ({detail}); not retried")
    return Failed(INTERNAL_ERROR, f"unexpected {type(error).__name__}", retryable=True)
