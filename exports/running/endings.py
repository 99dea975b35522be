"""How a run of an export ends a task: one table from the run's outcome to what the worker does
(:func:`settle`), and the endings themselves (COMPLETED recorded, FAILED, TIMEOUT, retried), shared
by the single worker (:mod:`exports.running.messages`) and the fan-out's steps
(:mod:`exports.running.fan_out.workflow`).

A run returns its outcome as a value (:data:`RunOutcome`): the file written, the task passed on
(handed over to a new invocation, or fanned out to the workflow), the task lost, a failure with
its code (for good or retryable), or the deadline reached. No ending is an exception.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, assert_never

from exports.accepting.admission_rules import date_span_days, throughput_key
from exports.core.config.metrics import ERROR_CODE_DIMENSION, SOURCE_DIMENSION, Metric
from exports.core.customer_errors import customer_message
from exports.core.errors import ConditionFailed, ExportsError, RetryableError
from exports.core.event_publishing import publish
from exports.core.events import export_completed, export_failed
from exports.core.policies import has_retries_left, retry_delay_sec
from exports.core.ports import TaskMessage
from exports.core.task import (
    DEADLINE_PASSED,
    DEADLINE_UNREACHABLE,
    ExportResult,
    Task,
    complete,
    fail,
    not_begun,
    requeue,
    time_out,
)
from exports.core.task_writes import end_task, move_task
from exports.running.attempt_files import AttemptFiles
from exports.running.dependencies import WorkerDependencies

logger = logging.getLogger(__name__)

# ExportFailed's source dimension (config.SOURCE_DIMENSION) for a type without a data source.
NO_SOURCE: Final = "-"


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
    has retries left). ``detail`` is for the operator's log only."""

    code: str
    detail: str
    retryable: bool = False


@dataclass(frozen=True)
class OutOfTime:
    """The source's statement timeout was the task's deadline: the task times out."""


# What one run of an export came to.
RunOutcome = Written | Passed | Lost | Failed | OutOfTime


def settle(outcome: RunOutcome, task: Task, deps: WorkerDependencies) -> Outcome:
    """What the worker does with each outcome of a run (``task``: as the run last wrote it)."""
    match outcome:
        case Written(result):
            return record_completion(task, result, deps)
        case Passed(passed):
            return passed
        case Lost():
            logger.info("task taken away while running; upload aborted")
            return Outcome.LOST_OWNERSHIP
        case Failed(code, detail, retryable=True):
            return retry_or_fail(task, code, detail, deps)
        case Failed(code, detail):
            return end_failed(task, code, detail, deps)
        case OutOfTime():
            return end_timed_out(task, deps)
    assert_never(outcome)


def record_completion(task: Task, result: ExportResult, deps: WorkerDependencies) -> Outcome:
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
    if completed.empty_skipped:
        _drop_empty_file(task, result, deps)
    return _count_completion(task, result, now, deps)


def _drop_empty_file(task: Task, result: ExportResult, deps: WorkerDependencies) -> None:
    """A run of 0 rows whose schedule skips empty runs keeps no file. Recorded first, removed
    after: a file left by a failed removal expires with the task's retention anyway."""
    try:
        AttemptFiles(task, deps.results).remove(result.key)
    except ExportsError:
        logger.warning("could not remove an empty run's file", exc_info=True)
    deps.metrics.add(Metric.EMPTY_RUN_SKIPPED)


def _hand_back_unrecorded(
    task: Task, completed: Task, result: ExportResult, error: RetryableError, deps: WorkerDependencies
) -> Outcome:
    """The COMPLETED write kept failing (and its last try may yet have landed). Hand the task
    back instead: that write is conditional on this attempt too, so once it succeeds the
    completion cannot land any more and the file can go. If it loses, the record says who won."""
    logger.warning("could not record the completed export", extra={"error_code": error.code})
    files = AttemptFiles(task, deps.results)
    outcome = retry_or_fail(task, error.code, f"the finished export could not be recorded: {error}", deps)
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
    publish(deps.events, export_completed(task.model_copy(update={"result": result}), now))
    deps.metrics.add(Metric.ROWS_EXPORTED, result.rows)
    deps.metrics.add(Metric.BYTES_EXPORTED, result.bytes, unit="Bytes")
    if task.started_at:
        seconds = (now - task.started_at).total_seconds()
        deps.metrics.add(Metric.DURATION_MS, seconds * 1000, unit="Milliseconds")
        try:
            key = throughput_key(task.export_type, task.format.value)
            deps.throughput.record(key, result.rows, seconds, days=date_span_days(task.filters))
        except ExportsError:
            logger.warning("could not record throughput", exc_info=True)  # a statistic, not the export
    return Outcome.COMPLETED


def end_failed(task: Task, code: str, detail: str, deps: WorkerDependencies) -> Outcome:
    """FAILED with ``code``. ``detail`` (the driver's words, names of relations and columns) goes
    to the log under the task id; the task holds the customer's message for the code."""
    failed = fail(task, code, message_for(task, code, deps), deps.clock(), deps.settings.retention)
    try:
        end_task(task, failed, deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    count_failure(task, code, deps)
    logger.warning("export failed", extra={"error_code": code, "detail": detail, "task_id": task.task_id})
    return Outcome.FAILED


def message_for(task: Task, code: str, deps: WorkerDependencies) -> str:
    """What the task's caller reads for ``code``: the type's own message for it, or ours."""
    try:
        own = deps.registry.get(task.export_type).error_messages
    except ExportsError:  # a type no longer declared
        own = {}
    return customer_message(code, task.task_id, own)


def count_failure(task: Task, code: str, deps: WorkerDependencies) -> None:
    """One ExportFailed, by error code and data source: the alarm pages on any, the dashboard
    says which code of which source (``-`` for a type that declares no source)."""
    try:
        limit = deps.registry.get(task.export_type).source_limit()
    except ExportsError:  # a type no longer declared
        limit = None
    source = limit.source if limit is not None else NO_SOURCE
    deps.metrics.add(Metric.FAILED, dimensions={ERROR_CODE_DIMENSION: code, SOURCE_DIMENSION: source})
    publish(deps.events, export_failed(task, code, deps.clock()))


def retry_or_fail(task: Task, code: str, detail: str, deps: WorkerDependencies) -> Outcome:
    """Another try while the task has retries left, else FAILED (``detail``: as :func:`end_failed`)."""
    if not has_retries_left(task):
        return end_failed(task, code, detail, deps)
    try:
        move_task(task, requeue(task, code, message_for(task, code, deps)), deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    # If this send fails the delivery fails too: SQS redelivers it and the PENDING task is claimed again.
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority),
        delay_sec=retry_delay_sec(task.retry_count, deps.random),
    )
    deps.metrics.add(Metric.RETRIED)
    logger.warning(
        "export will be retried",
        extra={"error_code": code, "detail": detail, "task_id": task.task_id, "retry_count": task.retry_count + 1},
    )
    return Outcome.RETRY_SCHEDULED


def end_not_begun(task: Task, run_sec: float, deps: WorkerDependencies) -> Outcome:
    """End a task claimed too late to finish: TIMEOUT at once, with nothing touched (no source
    slot, no query, no upload), its queue place given back."""
    try:
        message = message_for(task, DEADLINE_UNREACHABLE, deps)
        end_task(task, not_begun(task, deps.clock(), deps.settings.retention, message), deps)
    except ConditionFailed:
        return Outcome.SKIPPED
    deps.metrics.add(Metric.TIMED_OUT)
    deps.metrics.add(Metric.NOT_BEGUN)
    logger.info("not begun: too late to finish before the deadline", extra={"run_sec": round(run_sec, 3)})
    return Outcome.TIMED_OUT


def end_timed_out(task: Task, deps: WorkerDependencies) -> Outcome:
    try:
        timed_out = time_out(task, deps.clock(), deps.settings.retention, message_for(task, DEADLINE_PASSED, deps))
        end_task(task, timed_out, deps)
    except ConditionFailed:
        return Outcome.SKIPPED
    deps.metrics.add(Metric.TIMED_OUT)
    return Outcome.TIMED_OUT
