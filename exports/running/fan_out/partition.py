"""One partition of a split export: its rows written and uploaded as numbered parts of the one
upload by its format's :class:`~exports.running.formats.split.SplitLayout` (the bytes are
:mod:`exports.running.writers.partitioned`'s, the part numbers and sizes
:mod:`exports.running.writers.segment_upload`'s), its progress in the task's per-partition counts, and its
result staged for the assembler.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Final

from exports.core.errors import ExportsError, LostOwnership
from exports.core.export_type import AnyExportType, Page, Row
from exports.core.ports import RemainingMs
from exports.core.task import Task, record_partition_progress
from exports.core.task_writes import write_partition_progress
from exports.running.attempt_files import AttemptFiles
from exports.running.dependencies import WorkerDependencies
from exports.running.export_run import run_control, task_columns, task_zone
from exports.running.fan_out.plan import load_plan, owned_task, partition_name
from exports.running.formats.registry import format_spec
from exports.running.formats.split import PartitionResult, PartitionWrite, SplitLayout
from exports.running.ports import SlotLease
from exports.running.progress import ProgressReporter, slot_keeper
from exports.running.writers.partitioned import DeflatedPiece
from exports.running.writers.segment_upload import SegmentUpload

logger = logging.getLogger(__name__)

# A partition's progress write that loses to another partition's reads the task and tries again
# this many times, then leaves its count to its next write (the winner renewed the lease).
PROGRESS_WRITE_TRIES: Final = 3


class PartitionSourceBusy(ExportsError):
    """Every slot of the partition's source is taken: the workflow waits and tries the partition
    again (:func:`exports.running.fan_out.workflow.partition_step` turns it into that result)."""


class PartitionProgress(ProgressReporter):
    """One partition's progress: its rows go into the task's per-partition counts, so the task
    shows every partition's rows summed. Partitions write at once: each write is conditional on
    the counts it read too, and one that loses reads the task again (a task no longer running
    this attempt raises :class:`LostOwnership`, as for a whole export)."""

    def __init__(
        self,
        task: Task,
        deps: WorkerDependencies,
        partition: int,
        planned_rows: int,
        on_write: Callable[[datetime], None] | None = None,
    ) -> None:
        super().__init__(task, deps, on_write)
        self._partition = partition
        self._planned_rows = planned_rows

    def _write(self, rows: int, now: datetime) -> Task:
        task = self.task
        for _ in range(PROGRESS_WRITE_TRIES):
            lease = self._deps.settings.lease
            updated = record_partition_progress(task, self._partition, rows, self._planned_rows, now, lease)
            if write_partition_progress(task, updated, self._deps):
                return updated
            task = owned_task(task.task_id, task.attempt, self._deps)
        return task


def write_partition(
    task_id: str, attempt: int, partition: int, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> int:
    """Write and upload partition ``partition`` of the attempt and stage its result; returns its
    rows. :class:`LostOwnership` when the task was cancelled, timed out or taken over (checked
    before every part), :class:`PartitionSourceBusy` when its source has no free slot."""
    task = owned_task(task_id, attempt, deps)
    files = AttemptFiles(task, deps.results)
    plan = load_plan(task, files)
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    planned = sum(spec.rows for spec in plan.specs)
    try:
        lease = _partition_slot(task, partition, export_type, deps)
    except PartitionSourceBusy:
        # Waiting for a slot is the export's time too: renew the task's lease (a task that ended
        # meanwhile stops its partitions here rather than after the wait).
        PartitionProgress(task, deps, partition, planned).flush()
        raise
    try:
        progress = PartitionProgress(task, deps, partition, planned, on_write=slot_keeper(lease, deps))
        control = run_control(task, progress, deps, remaining_ms)

        def before_part() -> None:
            if deps.clock() >= task.deadline:
                raise LostOwnership(f"task {task_id} ran out of time")
            progress.flush()

        zoned = task_zone(task, export_type, filters, control)
        columns = zoned.columns(task_columns(task, export_type, filters))
        pages = _pages(
            zoned.pages(columns, export_type.partition_stream(filters, plan.specs[partition], control)), progress
        )
        part = PartitionWrite(
            task=task,
            upload=files.resume(plan.key, plan.upload_id),
            columns=columns,
            layout=plan.layout,
            partition=partition,
            partitions=len(plan.specs),
            pages=pages,
            part_bytes=deps.settings.upload_part_bytes,
            before_part=before_part,
        )
        result = split_layout(task).write_partition(part)
        before_part()  # a stopped task's partition stages nothing
        files.stage(partition_name(partition), encode_result(result))
        return result.rows
    finally:
        if lease is not None:
            with contextlib.suppress(ExportsError):
                deps.slots.release(lease)


def split_layout(task: Task) -> SplitLayout:
    """How the task's format is written in partitions (a plan exists only for one that splits)."""
    layout = format_spec(task.format).split
    if layout is None:
        raise ExportsError(f"format {task.format.value} is not written in partitions")
    return layout


def _pages(pages: Iterator[Page], progress: ProgressReporter) -> Iterator[Sequence[Row]]:
    rows = 0
    for page in pages:
        rows += len(page.rows)
        progress.on_row(rows)
        yield page.rows


def _partition_slot(
    task: Task, partition: int, export_type: AnyExportType, deps: WorkerDependencies
) -> SlotLease | None:
    """Each partition holds a slot of its source's limit, as a whole export does."""
    limit = export_type.source_limit()
    if limit is None:
        return None
    lease = deps.slots.acquire(limit.source, limit.max_concurrent, f"{task.task_id}#{partition}", deps.clock())
    if lease is None:
        raise PartitionSourceBusy(f"data source {limit.source} is at its limit of concurrent exports")
    return lease


# A partition's staged result: a JSON header line, then each segment's head and tail bytes.


def encode_result(result: PartitionResult) -> bytes:
    header = {
        "rows": result.rows,
        "segments": [
            {"parts": segment.parts, "head": len(segment.head), "tail": len(segment.tail), "bytes": segment.bytes}
            for segment in result.segments
        ],
        "pieces": [asdict(piece) for piece in result.pieces],
    }
    held = b"".join(segment.head + segment.tail for segment in result.segments)
    return json.dumps(header).encode() + b"\n" + held


def decode_result(blob: bytes) -> PartitionResult:
    line, _, held = blob.partition(b"\n")
    header = json.loads(line)
    segments = []
    offset = 0
    for segment in header["segments"]:
        head = held[offset : offset + segment["head"]]
        offset += segment["head"]
        tail = held[offset : offset + segment["tail"]]
        offset += segment["tail"]
        parts = tuple((int(number), str(etag)) for number, etag in segment["parts"])
        segments.append(SegmentUpload(parts, head, tail, segment["bytes"]))
    pieces = tuple(DeflatedPiece(**piece) for piece in header["pieces"])
    return PartitionResult(header["rows"], tuple(segments), pieces)
