"""Exports longer than one invocation: the checkpoint of an export of a format that continues
(its spec's ``resumable``: CSV and JSON Lines, gzipped or not; :mod:`exports.running.formats.lines`).

Such an export that reaches :data:`CHECKPOINT_MARGIN_SEC`
before the end of its invocation, at a page boundary, saves a checkpoint next to the result file
(the upload's id and parts, the counts, the sha256 and gzip states, the source's cursor and the
bytes not yet sent) and hands its task over to a new invocation (the run's outcome says so);
the next invocation that claims the task appends to the same upload from that checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from exports.core.config.metrics import Metric
from exports.core.errors import ConditionFailed, ExportFailed, LostOwnership
from exports.core.export_type import Column, Cursor
from exports.core.ports import ResultUpload, TaskMessage
from exports.core.task import Task, record_progress, suspend
from exports.core.task_writes import move_task
from exports.running.attempt_files import AttemptFiles
from exports.running.checkpoint import (
    ExportCheckpoint,
    decode_checkpoint,
    encode_checkpoint,
    fingerprint,
    part_records,
)
from exports.running.dependencies import WorkerDependencies
from exports.running.writers.gzip_stream import GzipStream
from exports.running.writers.resumable_sha256 import NotResumable, Sha256State
from exports.running.writers.sink import MultipartSink, SinkState

logger = logging.getLogger(__name__)

# A CSV export stops this long before the invocation ends, saves a checkpoint and hands over
# to a new invocation: enough for the last page, the compressor flush, the checkpoint
# object, the task update and the queue message.
CHECKPOINT_MARGIN_SEC: Final = 60
# A task continues at most this many times (a task's own deadline is at most
# Limits.TIMEOUT_SEC_MAX, about four worker runs; more hand-overs mean no progress).
MAX_CONTINUATIONS: Final = 12

EXPORT_TOO_LONG = "EXPORT_TOO_LONG"


def export_fingerprint(task: Task, export_type: str, columns: Sequence[Column]) -> str:
    """What the file is made of (type, format, filters, CSV options, columns): a checkpoint only
    fits an export with the same."""
    return fingerprint(
        {
            "export_type": export_type,
            "format": task.format.value,
            "filters": task.filters,
            "csv_bom": task.csv_bom,
            "csv_formula_guard": task.csv_formula_guard,
            # The dialect only when another than the default: older checkpoints still fit.
            **({} if task.csv_dialect.is_default else {"csv_dialect": task.csv_dialect.model_dump(mode="json")}),
            # An array column's element kind only when it has one: other columns' fingerprints
            # (and the checkpoints they sign) are as they were.
            "columns": [
                [column.name, column.header, column.kind.value, *([column.array_of.value] if column.array_of else [])]
                for column in columns
            ],
        }
    )


class Checkpoints:
    """The checkpoint of one task's export, kept by its :class:`AttemptFiles`."""

    def __init__(self, task: Task, fingerprint: str, attempt: AttemptFiles, clock: Callable[[], datetime]) -> None:
        self._task = task
        self._fingerprint = fingerprint
        self._attempt = attempt
        self._clock = clock

    def load(self) -> tuple[ExportCheckpoint, bytes] | None:
        """The checkpoint this export left and its unsent bytes, if it fits; one that does not is
        thrown away (with the upload it names)."""
        blob = self._attempt.read_checkpoint()
        if blob is None:
            return None
        try:
            checkpoint, tail = decode_checkpoint(blob)
            Sha256State.from_json(checkpoint.sha256)
        except (ValueError, KeyError, TypeError):
            logger.warning("unreadable checkpoint discarded")
            self._attempt.delete_checkpoint()
            return None
        if (
            checkpoint.task_id != self._task.task_id
            or checkpoint.fingerprint != self._fingerprint
            or not self._attempt.owns(checkpoint.key)
        ):
            logger.warning("checkpoint of another export discarded")
            self._attempt.abort(checkpoint.key, checkpoint.upload_id)
            self._attempt.delete_checkpoint()
            return None
        return checkpoint, tail

    def save(
        self,
        export_type: str,
        key: str,
        upload: ResultUpload,
        sink: MultipartSink,
        gzip: GzipStream | None,
        cursor: Cursor | None,
        rows: int,
        expected_rows: int | None = None,
    ) -> ExportCheckpoint:
        """Store where the export of ``key`` (written through ``upload``) stands after ``rows``
        rows of ``expected_rows``; EXPORT_TOO_LONG if the export cannot continue."""
        if cursor is None:
            why = f"export type {export_type} cannot continue in a new one"
        elif self._task.continuations >= MAX_CONTINUATIONS:
            why = f"it has already continued {self._task.continuations} times"
        else:
            return self._write(key, upload, sink, gzip, cursor, rows, expected_rows)
        raise ExportFailed(f"the export does not fit in one worker run and {why}", code=EXPORT_TOO_LONG)

    def _write(
        self,
        key: str,
        upload: ResultUpload,
        sink: MultipartSink,
        gzip: GzipStream | None,
        cursor: Cursor,
        rows: int,
        expected_rows: int | None,
    ) -> ExportCheckpoint:
        gzip_state = gzip.suspend() if gzip is not None else None
        try:
            state = sink.snapshot()
        except NotResumable as error:
            raise ExportFailed(
                "the export does not fit in one worker run and its sha256 cannot be carried over", code=EXPORT_TOO_LONG
            ) from error
        checkpoint = ExportCheckpoint(
            task_id=self._task.task_id,
            fingerprint=self._fingerprint,
            key=key,
            upload_id=upload.upload_id,
            parts=part_records(upload.parts),
            rows=rows,
            bytes=state.bytes_written,
            sha256=state.sha256.to_json(),
            gzip=gzip_state.to_json() if gzip_state else None,
            cursor=cursor,
            saved_at=self._clock(),
            expected_rows=expected_rows,
        )
        self._attempt.write_checkpoint(encode_checkpoint(checkpoint, state.tail))
        return checkpoint


def sink_state(checkpoint: ExportCheckpoint, tail: bytes) -> SinkState:
    """The multipart sink's state where ``checkpoint`` left it."""
    return SinkState(
        bytes_written=checkpoint.bytes,
        parts_sent=len(checkpoint.parts),
        sha256=Sha256State.from_json(checkpoint.sha256),
        tail=tail,
    )


# A long export's hand-over message becomes visible this long after it is sent: by then the task
# is PENDING again (the message is sent first, so a failed send leaves the task RUNNING).
HANDOVER_DELAY_SEC: Final = 2


def continue_later(task: Task, rows: int, percent: int, deps: WorkerDependencies) -> None:
    """Hand the RUNNING ``task`` to a new invocation: queue it (delayed a little), then make it
    PENDING again with its rows so far, spending no retry. :class:`LostOwnership` if the task
    changed meanwhile (then the queued message finds it not claimable and is dropped)."""
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority),
        delay_sec=HANDOVER_DELAY_SEC,
    )
    current = record_progress(task, rows, percent, deps.clock(), deps.settings.lease)
    try:
        move_task(task, suspend(current), deps)
    except ConditionFailed as error:
        raise LostOwnership(f"task {task.task_id} is no longer ours") from error
    deps.metrics.add(Metric.CONTINUED)
