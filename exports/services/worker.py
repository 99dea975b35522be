"""Running one export task: claim it, stream its rows into a file on S3, finish it."""

from __future__ import annotations

import contextlib
import logging
from enum import StrEnum

from exports.config import Metric, Results
from exports.domain.errors import (
    ConditionFailed,
    ExportFailed,
    ExportsError,
    LostOwnership,
    RetryableError,
    TaskNotFound,
)
from exports.domain.policies import has_retries_left, retry_delay_sec
from exports.domain.task import ExportFormat, ExportResult, Task, claim, complete, fail, requeue, time_out
from exports.ports import TaskMessage
from exports.services.dependencies import Dependencies
from exports.services.endings import end_task
from exports.services.progress import ProgressReporter
from exports.writers import csv_writer, xlsx_writer
from exports.writers.sink import MultipartSink

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "INTERNAL_ERROR"
_CONTENT_TYPES = {ExportFormat.CSV: csv_writer.CONTENT_TYPE, ExportFormat.XLSX: xlsx_writer.CONTENT_TYPE}


class Outcome(StrEnum):
    """What became of one delivery of a task message."""

    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    RETRY_SCHEDULED = "retry_scheduled"
    SKIPPED = "skipped"
    LOST_OWNERSHIP = "lost_ownership"


def process_task(message: TaskMessage, deps: Dependencies) -> Outcome:
    """Run the task named by ``message`` once, whatever how often the message arrives.

    Raises only for deliveries SQS should retry: unknown tasks (they end in the DLQ) and
    transient faults before the task is claimed or while handing it back to the queue.
    """
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
    claimed = claim(task, now, deps.settings.lease)
    try:
        deps.tasks.update(task, claimed)
    except ConditionFailed:
        deps.metrics.add(Metric.DUPLICATE_DELIVERY)
        return Outcome.SKIPPED
    deps.metrics.add(Metric.STARTED)
    return _run(claimed, deps)


def _run(task: Task, deps: Dependencies) -> Outcome:
    progress = ProgressReporter(task, deps)
    try:
        result = _export(task, progress, deps)
    except LostOwnership:
        logger.info("task taken away while running; upload aborted")
        return Outcome.LOST_OWNERSHIP
    except ExportFailed as error:
        return _fail(progress.task, error.code, error.message, deps)
    except RetryableError as error:
        return _retry_or_fail(progress.task, error.code, error.message, deps)
    except Exception as error:  # the worker's edge: an unforeseen fault must still end the task
        logger.exception("export crashed")
        return _retry_or_fail(progress.task, INTERNAL_ERROR, f"unexpected {type(error).__name__}", deps)
    return _complete(progress.task, result, deps)


def _export(task: Task, progress: ProgressReporter, deps: Dependencies) -> ExportResult:
    export_type = deps.registry.get(task.export_type)
    filters = export_type.parse_filters(task.filters)
    columns = export_type.columns(filters)
    file_name = f"{export_type.file_stem(filters)}.{task.format.value}"
    key = f"{Results.KEY_PREFIX}/{task.task_id}/{file_name}"
    content_type = _CONTENT_TYPES[task.format]
    upload = deps.results.start_upload(key, content_type, file_name, {"task-id": task.task_id})
    sink = MultipartSink(upload, deps.settings.upload_part_bytes, before_part=progress.flush)
    try:
        rows = export_type.rows(filters, on_fraction=progress.on_fraction)
        if task.format is ExportFormat.CSV:
            count = csv_writer.write_csv(columns, rows, sink, bom=task.csv_bom, on_row=progress.on_row)
        else:
            count = xlsx_writer.write_xlsx(columns, rows, sink, on_row=progress.on_row)
        sha256 = sink.finish()
        upload.complete()
    except BaseException:
        # Nothing partial may stay behind; a failed abort is left to the bucket's lifecycle rule.
        with contextlib.suppress(ExportsError):
            upload.abort()
        raise
    return ExportResult(
        key=key, bytes=sink.bytes_written, rows=count, sha256=sha256, content_type=content_type, file_name=file_name
    )


def _complete(task: Task, result: ExportResult, deps: Dependencies) -> Outcome:
    now = deps.clock()
    try:
        end_task(task, complete(task, result, now, deps.settings.retention), deps)
    except ConditionFailed:
        # Cancelled or timed out while the upload completed: the file must not outlive the task.
        deps.results.delete(result.key)
        return Outcome.LOST_OWNERSHIP
    deps.metrics.add(Metric.COMPLETED)
    deps.metrics.add(Metric.ROWS_EXPORTED, result.rows)
    deps.metrics.add(Metric.BYTES_EXPORTED, result.bytes, unit="Bytes")
    if task.started_at:
        deps.metrics.add(Metric.DURATION_MS, (now - task.started_at).total_seconds() * 1000, unit="Milliseconds")
    return Outcome.COMPLETED


def _fail(task: Task, code: str, message: str, deps: Dependencies) -> Outcome:
    try:
        end_task(task, fail(task, code, message, deps.clock(), deps.settings.retention), deps)
    except ConditionFailed:
        return Outcome.LOST_OWNERSHIP
    deps.metrics.add(Metric.FAILED)
    logger.warning("export failed", extra={"error_code": code})
    return Outcome.FAILED


def _retry_or_fail(task: Task, code: str, message: str, deps: Dependencies) -> Outcome:
    if not has_retries_left(task):
        return _fail(task, code, message, deps)
    try:
        deps.tasks.update(task, requeue(task, code, message))
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


def _time_out(task: Task, deps: Dependencies) -> Outcome:
    try:
        end_task(task, time_out(task, deps.clock(), deps.settings.retention), deps)
    except ConditionFailed:
        return Outcome.SKIPPED
    deps.metrics.add(Metric.TIMED_OUT)
    return Outcome.TIMED_OUT
