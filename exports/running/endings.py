"""How a run of an export ends its task.

:func:`settle` is the one table from a run's outcome to what the worker does next. The other
functions are the endings themselves: COMPLETED recorded, FAILED, TIMEOUT, or retried. Two
callers share them: the single worker (:mod:`exports.running.messages`), and the steps of a split
export, which a workflow writes in partitions (:mod:`exports.running.fan_out.workflow`).

A run returns its outcome as a value, a :data:`RunOutcome`. No ending is an exception. The
outcome says that the file was written, that the task was passed on (handed over to a new
invocation, or fanned out to the workflow), that the task was lost, that the run failed with a
code (for good or retryable), or that the deadline was reached.
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

# The value of ExportFailed's source dimension (config.SOURCE_DIMENSION) for a type without a
# data source.
NO_SOURCE: Final = "-"


class Outcome(StrEnum):
    """What became of one receipt of a task message."""

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
    """The file is complete. The task is to be recorded COMPLETED with ``result``."""

    result: ExportResult


@dataclass(frozen=True)
class Passed:
    """The task went on elsewhere, so this worker has nothing left to do. A long export went to
    a new invocation (``CONTINUED``), or a split one to the fan-out workflow (``FANNED_OUT``)."""

    outcome: Outcome


@dataclass(frozen=True)
class Lost:
    """The task no longer belongs to this attempt: it was cancelled, timed out, or taken over."""


@dataclass(frozen=True)
class Failed:
    """The run failed with ``code``, either for good or ``retryable``. A retryable failure is
    retried while the task has retries left. ``detail`` is for the operator's log only."""

    code: str
    detail: str
    retryable: bool = False


@dataclass(frozen=True)
class OutOfTime:
    """The source's statement timeout was the task's deadline, so the task times out."""


# What one run of an export came to.
RunOutcome = Written | Passed | Lost | Failed | OutOfTime


def settle(outcome: RunOutcome, task: Task, deps: WorkerDependencies) -> Outcome:
    """Acts on a run's outcome and returns what became of the message. ``task`` is the task as
    the run last wrote it."""
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
        # The task was cancelled or timed out while the upload completed. The file must not
        # outlive the task.
        AttemptFiles(task, deps.results).remove(result.key)
        return Outcome.LOST_OWNERSHIP
    except RetryableError as error:
        return _hand_back_unrecorded(task, completed, result, error, deps)
    if completed.empty_skipped:
        _drop_empty_file(task, result, deps)
    return _count_completion(task, result, now, deps)


def _drop_empty_file(task: Task, result: ExportResult, deps: WorkerDependencies) -> None:
    """Removes the file of a run of 0 rows whose schedule skips empty runs.

    The completion is recorded first and the file removed after. A file left by a failed
    removal expires with the task's retention anyway.
    """
    try:
        AttemptFiles(task, deps.results).remove(result.key)
    except ExportsError:
        logger.warning("could not remove an empty run's file", exc_info=True)
    deps.metrics.add(Metric.EMPTY_RUN_SKIPPED)


def _hand_back_unrecorded(
    task: Task, completed: Task, result: ExportResult, error: RetryableError, deps: WorkerDependencies
) -> Outcome:
    """Hands the task back for a retry because the COMPLETED write kept failing.

    The last try of that write may still have landed. The hand-back write is conditional on this
    attempt too, so once it succeeds the completion can no longer land, and the file can go. If
    the hand-back loses, the stored record says which write won.
    """
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
    """Ends the task FAILED with ``code``.

    ``detail`` holds the driver's words and the names of relations and columns. It goes only to
    the log, under the task id. The task holds the customer's message for the code.
    """
    failed = fail(task, code, message_for(task, code, deps), deps.clock(), deps.settings.retention)
    try:
        end_task(task, failed, deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    count_failure(task, code, deps)
    logger.warning("export failed", extra={"error_code": code, "detail": detail, "task_id": task.task_id})
    return Outcome.FAILED


def message_for(task: Task, code: str, deps: WorkerDependencies) -> str:
    """The message the task's caller reads for ``code``: the type's own message, or ours."""
    try:
        own = deps.registry.get(task.export_type).error_messages
    except ExportsError:  # a type no longer declared
        own = {}
    return customer_message(code, task.task_id, own)


def count_failure(task: Task, code: str, deps: WorkerDependencies) -> None:
    """Counts one ExportFailed metric under its error code and data source.

    The alarm pages on any failure, and the dashboard shows which code of which source. A type
    that declares no source counts under ``-``.
    """
    try:
        limit = deps.registry.get(task.export_type).source_limit()
    except ExportsError:  # a type no longer declared
        limit = None
    source = limit.source if limit is not None else NO_SOURCE
    deps.metrics.add(Metric.FAILED, dimensions={ERROR_CODE_DIMENSION: code, SOURCE_DIMENSION: source})
    publish(deps.events, export_failed(task, code, deps.clock()))


def retry_or_fail(task: Task, code: str, detail: str, deps: WorkerDependencies) -> Outcome:
    """Queues the task for another try while it has retries left, and ends it FAILED otherwise.
    ``detail`` is used as in :func:`end_failed`."""
    if not has_retries_left(task):
        return end_failed(task, code, detail, deps)
    try:
        move_task(task, requeue(task, code, message_for(task, code, deps)), deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    # If this send fails, handling this message fails too. SQS then sends the message again, and
    # the PENDING task is claimed again.
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
    """Ends a task that was claimed too late to finish.

    The task becomes TIMEOUT at once, with nothing touched: no source slot, no query, no upload.
    Its place in the queue is given back.
    """
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
