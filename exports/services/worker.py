"""Running one export task: claim it, stream its rows into a file on S3, finish it."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import assert_never

from pydantic import ValidationError

from exports.config import ERROR_CODE_DIMENSION, NO_SOURCE, SOURCE_DIMENSION, HotKey, Metric, SourceSlots
from exports.domain.admission import date_span_days, lane_for
from exports.domain.errors import (
    ConditionFailed,
    ExportFailed,
    ExportsError,
    LostOwnership,
    RetryableError,
    SourceQueryTimeout,
    TaskNotFound,
)
from exports.domain.policies import has_retries_left, is_last_delivery, retry_delay_sec
from exports.domain.status import TaskStatus
from exports.domain.task import ExportResult, Task, claim, complete, fail, requeue, time_out
from exports.ports import Delivery, RemainingMs, SlotLease, TaskMessage
from exports.services.attempt_files import AttemptFiles
from exports.services.dependencies import WorkerDependencies
from exports.services.export_run import HandedOver, run_export
from exports.services.fan_out_run import (
    PartitionSourceBusy,
    assemble_file,
    discard_split_attempt,
    start_fan_out,
    write_partition,
)
from exports.services.progress import ProgressReporter, slot_keeper
from exports.services.task_writes import end_task, move_task
from exports.services.validation import invalid_request
from exports.workflows import PartitionStatus

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "INTERNAL_ERROR"
INVALID_FILTERS = "INVALID_FILTERS"
DELIVERY_FAILED = "DELIVERY_FAILED"
FAN_OUT_FAILED = "FAN_OUT_FAILED"


class Outcome(StrEnum):
    """What became of one delivery of a task message."""

    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    RETRY_SCHEDULED = "retry_scheduled"
    SKIPPED = "skipped"
    DEFERRED = "deferred"
    REDELIVERED = "redelivered"
    CONTINUED = "continued"
    FANNED_OUT = "fanned_out"
    LOST_OWNERSHIP = "lost_ownership"


def process_delivery(
    message: TaskMessage, delivery: Delivery, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> Outcome:
    """:func:`process_task` for one ``delivery`` of ``message``; errors go back to SQS.

    A failed delivery comes back after a short backoff, not the queue's visibility timeout (90
    minutes, past any deadline), so a message that keeps failing reaches the DLQ within minutes.
    When the last delivery before the DLQ fails too, the task (if there is one) ends FAILED with
    ``DELIVERY_FAILED`` first: nothing else would end it before its deadline, and its quota slot
    would stay taken until then.
    """
    try:
        return process_task(message, deps, remaining_ms)
    except Exception as error:
        if is_last_delivery(delivery.receive_count):
            _fail_dead_lettered(message.task_id, error, deps)
        else:
            _back_off(delivery, deps)
        raise


def _back_off(delivery: Delivery, deps: WorkerDependencies) -> None:
    try:
        deps.queue.redeliver_after(delivery, retry_delay_sec(delivery.receive_count - 1, deps.random))
    except ExportsError:
        logger.warning("could not shorten the failed delivery's visibility timeout", exc_info=True)


def _fail_dead_lettered(task_id: str, error: Exception, deps: WorkerDependencies) -> None:
    try:
        task = deps.tasks.get(task_id)
        if task is None or task.is_terminal:
            return
        why = f"delivering the task kept failing ({type(error).__name__}); its message went to the dead-letter queue"
        end_task(task, fail(task, DELIVERY_FAILED, why, deps.clock(), deps.settings.retention), deps)
    except ExportsError:
        logger.exception("could not fail a task whose message goes to the dead-letter queue")
        return
    count_failure(task, DELIVERY_FAILED, deps)
    logger.error("task failed: its message goes to the dead-letter queue", extra={"error_code": DELIVERY_FAILED})


def process_task(message: TaskMessage, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None) -> Outcome:
    """Run the task named by ``message`` once, whatever how often the message arrives.
    ``remaining_ms``: the invocation's time left (a long export hands over before it runs out;
    None: unbounded).

    Raises only for deliveries SQS should retry: unknown tasks (they end in the DLQ), and
    transient faults when even sending the message again fails.
    """
    try:
        claimed = _claim(message, deps)
    except RetryableError as error:
        return _redeliver(message, error, deps)
    if isinstance(claimed, Outcome):
        return claimed
    task, lease = claimed
    deps.metrics.add(Metric.STARTED)
    try:
        return _run(task, deps, lease, remaining_ms)
    finally:
        if lease is not None:
            _release(lease, deps)


def _claim(message: TaskMessage, deps: WorkerDependencies) -> tuple[Task, SlotLease | None] | Outcome:
    """The task, claimed for this worker, with the slot of its source it holds; or what became
    of the delivery instead."""
    task = deps.tasks.get(message.task_id)
    if task is None:
        raise TaskNotFound(message.task_id)
    now = deps.clock()
    if not task.is_claimable(now):
        deps.metrics.add(Metric.DUPLICATE_DELIVERY)
        logger.info("task not claimable, delivery acknowledged", extra={"status": task.status.value})
        return Outcome.SKIPPED
    if now >= task.deadline:
        return _time_out(task, deps)
    wait = _hot_key_wait(task, deps)
    if wait > 0:
        return _defer(task, wait, deps)
    free, lease = _acquire_source_slot(task, deps)
    if not free:
        deps.metrics.add(Metric.SOURCE_DEFERRED)
        return _defer(task, SourceSlots.MAX_DEFER_SEC / 2, deps, counted=False)
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
    _record_queue_wait(message, task, now, deps)
    return claimed, lease


def _record_queue_wait(message: TaskMessage, task: Task, now: datetime, deps: WorkerDependencies) -> None:
    """A first claim through the submit's own message: how long the task waited for a worker
    behind the tasks it had to wait for (estimates learn from it). A retried, deferred or
    redelivered task waited for other reasons too, and its message says 0."""
    if message.waiting_for <= 0 or message.redeliveries or task.attempt:
        return
    try:
        waited = (now - task.created_at).total_seconds()
        deps.throughput.record_queue_wait(lane_for(task.priority).name, waited, message.waiting_for)
    except ExportsError:
        logger.warning("could not record the queue wait", exc_info=True)  # a statistic, not the export


def _acquire_source_slot(task: Task, deps: WorkerDependencies) -> tuple[bool, SlotLease | None]:
    """Whether the task may run now, and the slot of its source it took (None when the source
    is not limited, or this deployment has no limiter). False when every slot is busy."""
    limit = deps.registry.get(task.export_type).source_limit()
    if limit is None or deps.slots is None:
        return True, None
    lease = deps.slots.acquire(limit.source, limit.max_concurrent, task.task_id, deps.clock())
    if lease is None:
        logger.info("data source at its limit of concurrent exports", extra={"source": limit.source})
        return False, None
    return True, lease


def _release(lease: SlotLease, deps: WorkerDependencies) -> None:
    assert deps.slots is not None
    try:
        deps.slots.release(lease)
    except ExportsError:
        # Its lease runs out by itself: the slot is free again after SourceSlots.LEASE_SEC.
        logger.warning("could not release a source slot", extra={"source": lease.source}, exc_info=True)


def _redeliver(message: TaskMessage, error: RetryableError, deps: WorkerDependencies) -> Outcome:
    """A transient fault before the task was claimed: send the message again, soon, with backoff,
    and acknowledge this one. Failed back to SQS it would count towards the DLQ, which is for
    messages that cannot be handled, not for a dependency's bad minutes. The deadline still bounds
    the task."""
    delay = retry_delay_sec(message.redeliveries, deps.random)
    deps.queue.send(replace(message, redeliveries=message.redeliveries + 1), delay_sec=delay)
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


def _defer(task: Task, wait: float, deps: WorkerDependencies, counted: bool = True) -> Outcome:
    """Come back later: a new delayed message, this one acknowledged. The task stays PENDING and
    keeps its retry budget; the fresh message starts its receive count over, so deferral never
    leads to the DLQ. ``counted``: a hot-key deferral (the source's own metric is counted by the
    caller)."""
    delay = min(HotKey.MAX_DEFER_SEC, math.ceil(wait + wait * deps.random()))
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority), delay_sec=delay
    )
    if counted:
        deps.metrics.add(Metric.DEFERRED)
    logger.info("task deferred", extra={"delay_sec": delay})
    return Outcome.DEFERRED


@dataclass(frozen=True)
class Written:
    """The file is complete: the task is to be recorded COMPLETED with ``result``."""

    result: ExportResult


@dataclass(frozen=True)
class Passed:
    """The task went on elsewhere: a long export to a new invocation (``CONTINUED``), a split
    one to the fan-out workflow (``FANNED_OUT``); nothing left for this worker to do."""

    outcome: Outcome


@dataclass(frozen=True)
class Lost:
    """The task stopped being this attempt's (cancelled, timed out, taken over)."""


@dataclass(frozen=True)
class Failed:
    """The run failed with ``code``: for good, or ``retryable`` (the task is retried while it
    has retries left)."""

    code: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class OutOfTime:
    """The source's statement timeout was the task's deadline: the task times out."""


# What one run of an export came to.
RunOutcome = Written | Passed | Lost | Failed | OutOfTime


def _run(task: Task, deps: WorkerDependencies, lease: SlotLease | None, remaining_ms: RemainingMs | None) -> Outcome:
    progress = ProgressReporter(task, deps, on_write=slot_keeper(lease, deps))
    return _settle(_export(task, progress, deps, remaining_ms), progress.task, deps)


def _settle(outcome: RunOutcome, task: Task, deps: WorkerDependencies) -> Outcome:
    """What the worker does with each outcome of a run (``task``: as the run last wrote it)."""
    match outcome:
        case Written(result):
            return _record_completion(task, result, deps)
        case Passed(passed):
            return passed
        case Lost():
            logger.info("task taken away while running; upload aborted")
            return Outcome.LOST_OWNERSHIP
        case Failed(code, message, retryable=True):
            return _retry_or_fail(task, code, message, deps)
        case Failed(code, message):
            return _fail(task, code, message, deps)
        case OutOfTime():
            return _time_out(task, deps)
    assert_never(outcome)


def _export(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None
) -> RunOutcome:
    """Split a large export into partitions written at once (the fan-out workflow goes on with
    it, see :mod:`exports.services.fan_out_run`), or stream the task's file to S3 (see
    :mod:`exports.services.export_run`), which a long CSV export hands over to a new
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
    return Failed(INTERNAL_ERROR, f"unexpected {type(error).__name__}", retryable=True)


def partition_step(
    task_id: str, attempt: int, partition: int, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> str:
    """Write one partition of a split export; what came of it, as the fan-out workflow reads it
    (:class:`exports.workflows.PartitionStatus`). Waiting for a source slot and a task that
    stopped are results, not errors; a final error ends the task FAILED with its code (the
    other partitions then stop between parts); a transient one propagates, for the workflow to
    try the partition again."""
    try:
        write_partition(task_id, attempt, partition, deps, remaining_ms)
    except PartitionSourceBusy:
        return PartitionStatus.BUSY
    except LostOwnership:
        return PartitionStatus.STOPPED
    except ExportFailed as error:
        task = deps.tasks.get(task_id)
        if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
            return PartitionStatus.STOPPED
        if isinstance(error, SourceQueryTimeout) and deps.clock() >= task.deadline:
            return PartitionStatus.STOPPED  # the deadline: the assembler times the task out
        outcome = _fail(task, error.code, f"partition {partition}: {error.message}", deps)
        return PartitionStatus.FAILED if outcome is Outcome.FAILED else PartitionStatus.STOPPED
    return PartitionStatus.WRITTEN


def finish_fan_out(task_id: str, attempt: int, deps: WorkerDependencies) -> Outcome:
    """Assemble a split export's file and end its task COMPLETED (the fan-out workflow's last
    step); the file is removed again if the task ended meanwhile. A task that stopped while
    its partitions ran (so some staged nothing) is cleaned up instead: it is no longer this
    attempt's (LOST_OWNERSHIP; FAILED when a partition's final error ended it), or it reached
    its deadline and times out now."""
    task = deps.tasks.get(task_id)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        discard_split_attempt(task_id, attempt, deps)
        failed = task is not None and task.status is TaskStatus.FAILED and task.attempt == attempt
        return Outcome.FAILED if failed else Outcome.LOST_OWNERSHIP  # FAILED: a partition failed it
    if deps.clock() >= task.deadline:
        discard_split_attempt(task_id, attempt, deps)
        return _time_out(task, deps)
    try:
        task, result = assemble_file(task_id, attempt, deps)
    except LostOwnership:  # cancelled or taken over while assembling: a stop, not a fault
        discard_split_attempt(task_id, attempt, deps)
        return Outcome.LOST_OWNERSHIP
    return _settle(Written(result), task, deps)


def abandon_fan_out(task_id: str, attempt: int, error: str, deps: WorkerDependencies) -> Outcome:
    """A split export stopped (cancelled, timed out) or failed: no upload and no staging stay
    behind, and a task still running this attempt is retried whole or failed with ``error``."""
    task = discard_split_attempt(task_id, attempt, deps)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        return Outcome.LOST_OWNERSHIP
    if deps.clock() >= task.deadline:
        # The partitions stopped at the deadline before the lifecycle's timer ended the task.
        return _time_out(task, deps)
    return _retry_or_fail(task, FAN_OUT_FAILED, f"a partition of the split export failed: {error}", deps)


def _record_completion(task: Task, result: ExportResult, deps: WorkerDependencies) -> Outcome:
    now = deps.clock()
    completed = complete(task, result, now, deps.settings.retention)
    try:
        end_task(task, completed, deps)
    except ConditionFailed:
        # Cancelled or timed out while the upload completed: the file must not outlive the task.
        AttemptFiles(task, deps.results).remove(result.key)
        return Outcome.LOST_OWNERSHIP
    except RetryableError as error:
        return _hand_back_unrecorded(task, completed, result, error, deps)
    return _count_completion(task, result, now, deps)


def _hand_back_unrecorded(
    task: Task, completed: Task, result: ExportResult, error: RetryableError, deps: WorkerDependencies
) -> Outcome:
    """The COMPLETED write kept failing (and its last try may yet have landed). Hand the task
    back instead: that write is conditional on this attempt too, so once it succeeds the
    completion cannot land any more and the file can go. If it loses, the record says who won."""
    logger.warning("could not record the completed export", extra={"error_code": error.code})
    files = AttemptFiles(task, deps.results)
    outcome = _retry_or_fail(task, error.code, f"the finished export could not be recorded: {error}", deps)
    if outcome is not Outcome.LOST_OWNERSHIP:
        files.remove(result.key)
        return outcome
    stored = deps.tasks.get(task.task_id)
    if stored is not None and stored.status is completed.status and stored.result == result:
        end_task(task, completed, deps)  # it landed after all: finish the ending (idempotent)
        return _count_completion(task, result, completed.finished_at or deps.clock(), deps)
    files.remove(result.key)
    return Outcome.LOST_OWNERSHIP


def _count_completion(task: Task, result: ExportResult, now: datetime, deps: WorkerDependencies) -> Outcome:
    deps.metrics.add(Metric.COMPLETED)
    deps.metrics.add(Metric.ROWS_EXPORTED, result.rows)
    deps.metrics.add(Metric.BYTES_EXPORTED, result.bytes, unit="Bytes")
    if task.started_at:
        seconds = (now - task.started_at).total_seconds()
        deps.metrics.add(Metric.DURATION_MS, seconds * 1000, unit="Milliseconds")
        try:
            deps.throughput.record(task.export_type, result.rows, seconds, days=date_span_days(task.filters))
        except ExportsError:
            logger.warning("could not record throughput", exc_info=True)  # a statistic, not the export
    return Outcome.COMPLETED


def _fail(task: Task, code: str, message: str, deps: WorkerDependencies) -> Outcome:
    try:
        end_task(task, fail(task, code, message, deps.clock(), deps.settings.retention), deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    count_failure(task, code, deps)
    logger.warning("export failed", extra={"error_code": code})
    return Outcome.FAILED


def count_failure(task: Task, code: str, deps: WorkerDependencies) -> None:
    """One ExportFailed, by error code and data source: the alarm pages on any, the dashboard
    says which code of which source (``-`` for a type that declares no source)."""
    try:
        limit = deps.registry.get(task.export_type).source_limit()
    except ExportsError:  # a type no longer declared
        limit = None
    source = limit.source if limit is not None else NO_SOURCE
    deps.metrics.add(Metric.FAILED, dimensions={ERROR_CODE_DIMENSION: code, SOURCE_DIMENSION: source})


def _retry_or_fail(task: Task, code: str, message: str, deps: WorkerDependencies) -> Outcome:
    if not has_retries_left(task):
        return _fail(task, code, message, deps)
    try:
        move_task(task, requeue(task, code, message), deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    # If this send fails the delivery fails too: SQS redelivers it and the PENDING task is claimed again.
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority),
        delay_sec=retry_delay_sec(task.retry_count, deps.random),
    )
    deps.metrics.add(Metric.RETRIED)
    logger.warning("export will be retried", extra={"error_code": code, "retry_count": task.retry_count + 1})
    return Outcome.RETRY_SCHEDULED


def _time_out(task: Task, deps: WorkerDependencies) -> Outcome:
    try:
        end_task(task, time_out(task, deps.clock(), deps.settings.retention), deps)
    except ConditionFailed:
        return Outcome.SKIPPED
    deps.metrics.add(Metric.TIMED_OUT)
    return Outcome.TIMED_OUT
