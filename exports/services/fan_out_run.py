"""A split export as the fan-out workflow runs it (docs/fan-out.md): the worker that claimed the
task plans it and starts the workflow, each partition's invocation writes its rows as numbered
parts of the one upload, and the assembler completes the file.

Staging: the plan and each partition's result (its parts, its pieces' checksums, the head and
tail bytes it held back) are objects under the attempt's folder (``<task>/<attempt>/fan-out/``),
read by the next step and deleted once the file is assembled or abandoned; a Step Functions
payload holds only 256 KiB. Nothing here writes the task's state except through the progress
reporter (conditional on status and attempt, which is how a cancel or the deadline stops every
partition between two parts) and the endings in :mod:`exports.services.worker`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, cast

from exports.config import FanOut, Results
from exports.domain.errors import ExportsError, LostOwnership
from exports.domain.partitions import PartitionSpec
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat, ExportResult, Task, record_partition_progress, split
from exports.export_types.base import ExportType, Row
from exports.ports import ExportFiles, NumberedParts, RemainingMs, SlotLease
from exports.services.dependencies import WorkerDependencies
from exports.services.export_run import result_target, run_control
from exports.services.fan_out import PartitionResult, assemble, upload_csv_partition, upload_xlsx_partition
from exports.services.progress import ProgressReporter, slot_keeper
from exports.services.retries import retry_transient
from exports.services.task_writes import write_partition_progress
from exports.services.xlsx_guards import cell_too_long
from exports.writers.cells import WIDTH_SAMPLE_ROWS, CellTooLong, fitted_widths
from exports.writers.partitioned import DeflatedPiece, SheetPiece, XlsxLayout, csv_glue, plan_sheets, xlsx_glue
from exports.writers.segment_upload import SegmentUpload

logger = logging.getLogger(__name__)

# Written by one worker, never split (docs/fan-out.md, "Formats that do not split").
UNSPLIT_FORMATS = frozenset({ExportFormat.JSONL, ExportFormat.JSONL_GZ, ExportFormat.PARQUET})


class PartitionSourceBusy(ExportsError):
    """Every slot of the partition's source is taken: the workflow waits and tries the partition
    again (:func:`exports.services.worker.partition_step` turns it into that result)."""


@dataclass(frozen=True)
class FanOutPlan:
    """What every step of one split attempt reads: the file, the upload and the partitions."""

    key: str
    file_name: str
    content_type: str
    upload_id: str
    specs: Sequence[PartitionSpec]
    widths: Sequence[int] = ()
    pieces: Sequence[SheetPiece] = ()

    def to_json(self) -> bytes:
        """The staged plan."""
        body = {**asdict(self), "specs": [spec.to_json() for spec in self.specs]}
        return json.dumps(body).encode()

    @classmethod
    def from_json(cls, blob: bytes) -> FanOutPlan:
        """The plan read back."""
        body = json.loads(blob)
        return cls(
            **{
                **body,
                "specs": [PartitionSpec.from_json(spec) for spec in body["specs"]],
                "pieces": [SheetPiece(**piece) for piece in body["pieces"]],
            }
        )


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
        for _ in range(FanOut.PROGRESS_WRITE_TRIES):
            lease = self._deps.settings.lease
            updated = record_partition_progress(task, self._partition, rows, self._planned_rows, now, lease)
            if write_partition_progress(task, updated, self._deps):
                return updated
            task = _owned(task.task_id, task.attempt, self._deps)
        return task


def staging_key(task: Task, name: str) -> str:
    """Where the attempt's plan (``plan.json``) or a partition's result (``partition-<k>``) is."""
    return f"{Results.KEY_PREFIX}/{task.task_id}/{task.attempt}/{FanOut.STAGING_FOLDER}/{name}"


@dataclass(frozen=True)
class Planned:
    """What planning decided: ``split`` (the fan-out workflow writes the file), or one worker
    writes it, of ``rows`` rows when the plan counted them (progress is measured against it)."""

    split: bool
    rows: int | None = None


def start_fan_out(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> Planned:
    """Plan the claimed ``task``; when it splits in more than one partition, record the split on
    the task, stage the plan, start the upload and the workflow (the task stays RUNNING: the
    workflow ends it). Otherwise the export runs in this worker as usual. ``remaining_ms``: the
    invocation's time left, which bounds the planning query."""
    files = _files(deps)
    if deps.fan_out is None or files is None or task.continuations or task.format in UNSPLIT_FORMATS:
        return Planned(split=False)
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    control = run_control(task, progress, deps, remaining_ms)
    specs = export_type.plan_partitions(filters, control, deps.settings.partition_rows, deps.settings.max_partitions)
    if specs is None or len(specs) < 2:
        return Planned(split=False, rows=sum(spec.rows for spec in specs) if specs is not None else None)
    widths: list[int] = []
    pieces: list[SheetPiece] = []
    if task.format is ExportFormat.XLSX:
        # The single worker fits the widths to the export's first rows: so does the plan.
        widths = fitted_widths(export_type.columns(filters), _first_rows(export_type, filters, specs, control))
        pieces = plan_sheets([spec.rows for spec in specs])
    target = result_target(task, export_type, filters)
    metadata = {"task-id": task.task_id, "export-type": export_type.name, "format": task.format.value}
    upload = cast(Any, deps.results.start_upload(target.key, target.content_type, target.file_name, metadata))
    plan = FanOutPlan(target.key, target.file_name, target.content_type, upload.upload_id, specs, widths, pieces)
    try:
        files.write_checkpoint(staging_key(task, "plan.json"), plan.to_json())
        deps.tasks.update_partitions(task, split(task, len(specs)))
        deps.fan_out.start(task.task_id, task.attempt, len(specs))
    except BaseException:
        _clean_up(task, plan, files)
        raise
    logger.info("export split into partitions", extra={"partitions": len(specs), "rows": sum(s.rows for s in specs)})
    return Planned(split=True)


def _first_rows(export_type: ExportType, filters: Any, specs: Sequence[PartitionSpec], control: Any) -> list[Row]:
    rows: list[Row] = []
    for spec in specs:
        for page in export_type.partition_stream(filters, spec, control):
            rows.extend(page.rows[: WIDTH_SAMPLE_ROWS - len(rows)])
            if len(rows) >= WIDTH_SAMPLE_ROWS:
                return rows
    return rows


def write_partition(
    task_id: str, attempt: int, partition: int, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> int:
    """Write and upload partition ``partition`` of the attempt and stage its result; returns its
    rows. :class:`LostOwnership` when the task was cancelled, timed out or taken over (checked
    before every part), :class:`PartitionSourceBusy` when its source has no free slot."""
    task = _owned(task_id, attempt, deps)
    files = cast(ExportFiles, _files(deps))
    plan = _plan(task, files)
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    planned = sum(spec.rows for spec in plan.specs)
    try:
        lease = _take_slot(task, partition, export_type, deps)
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

        pages = _pages(export_type.partition_stream(filters, plan.specs[partition], control), progress)
        upload = cast(NumberedParts, files.resume_upload(plan.key, plan.upload_id, ()))
        part_bytes = deps.settings.upload_part_bytes
        if task.format is ExportFormat.XLSX:
            layout = XlsxLayout(export_type.columns(filters), plan.widths, plan.pieces)
            try:
                result = upload_xlsx_partition(upload, layout, partition, pages, part_bytes, before_part)
            except CellTooLong as error:
                raise cell_too_long(error, layout.columns, 0) from None
        else:
            result = upload_csv_partition(
                upload,
                export_type.columns(filters),
                partition,
                len(plan.specs),
                pages,
                gzip=task.format is ExportFormat.CSV_GZ,
                bom=task.csv_bom,
                formula_guard=task.csv_formula_guard,
                part_bytes=part_bytes,
                before_part=before_part,
            )
        before_part()  # a stopped task's partition stages nothing
        files.write_checkpoint(staging_key(task, f"partition-{partition}"), _encode(result))
        return result.rows
    finally:
        if lease is not None and deps.slots is not None:
            with contextlib.suppress(ExportsError):
                deps.slots.release(lease)


def _pages(pages: Iterator[Any], progress: ProgressReporter) -> Iterator[Sequence[Row]]:
    rows = 0
    for page in pages:
        rows += len(page.rows)
        progress.on_row(rows)
        yield page.rows


def _take_slot(task: Task, partition: int, export_type: ExportType, deps: WorkerDependencies) -> SlotLease | None:
    """Each partition holds a slot of its source's limit, as a whole export does."""
    limit = export_type.source_limit()
    if limit is None or deps.slots is None:
        return None
    lease = deps.slots.acquire(limit.source, limit.max_concurrent, f"{task.task_id}#{partition}", deps.clock())
    if lease is None:
        raise PartitionSourceBusy(f"data source {limit.source} is at its limit of concurrent exports")
    return lease


def assemble_file(task_id: str, attempt: int, deps: WorkerDependencies) -> tuple[Task, ExportResult]:
    """Upload the joins, complete the upload, read it back for its sha256, tag it and delete
    the staging: the file of the attempt, and the task as read (for its ending)."""
    task = _owned(task_id, attempt, deps)
    files = cast(ExportFiles, _files(deps))
    plan = _plan(task, files)
    results = []
    for partition in range(len(plan.specs)):
        blob = files.read_checkpoint(staging_key(task, f"partition-{partition}"))
        if blob is None:
            raise ExportsError(f"partition {partition} left no result")
        results.append(_decode(blob))
    segments = [segment for result in results for segment in result.segments]
    if plan.pieces:
        layout = XlsxLayout([], plan.widths, plan.pieces)
        glue = xlsx_glue(layout, [piece for result in results for piece in result.pieces])
    else:
        glue = csv_glue(len(segments))
    parts = [part for segment in segments for part in segment.parts]
    upload = files.resume_upload(plan.key, plan.upload_id, parts)
    assembled = assemble(cast(Any, upload), glue, segments, lambda: cast(Any, files).read_result(plan.key))
    rows = sum(result.rows for result in results)
    files.tag_result(plan.key, {"rows": str(rows), "bytes": str(assembled.bytes), "sha256": assembled.sha256})
    _delete_staging(task, plan, files)
    result = ExportResult(
        key=plan.key,
        bytes=assembled.bytes,
        rows=rows,
        sha256=assembled.sha256,
        content_type=plan.content_type,
        file_name=plan.file_name,
    )
    return task, result


def abandon(task_id: str, attempt: int, deps: WorkerDependencies) -> Task | None:
    """Abort the attempt's upload and delete its staging (and a file completed just before a
    failure); the task as it is now, or None if it is gone."""
    task = deps.tasks.get(task_id)
    files = _files(deps)
    if task is None or files is None:
        return task
    attempt_task = task.model_copy(update={"attempt": attempt})
    blob = files.read_checkpoint(staging_key(attempt_task, "plan.json"))
    if blob is not None:
        _clean_up(attempt_task, FanOutPlan.from_json(blob), files)
    return task


def _clean_up(task: Task, plan: FanOutPlan, files: ExportFiles) -> None:
    """No object and no open upload stay behind (one that cannot be aborted now is left to the
    bucket's rule for incomplete uploads)."""
    try:
        retry_transient(files.resume_upload(plan.key, plan.upload_id, ()).abort)
    except ExportsError:
        logger.warning("could not abort a split export's upload", exc_info=True)
    with contextlib.suppress(ExportsError):
        files.delete_checkpoint(plan.key)
    _delete_staging(task, plan, files)


def _delete_staging(task: Task, plan: FanOutPlan, files: ExportFiles) -> None:
    names = ["plan.json", *(f"partition-{partition}" for partition in range(len(plan.specs)))]
    for name in names:
        with contextlib.suppress(ExportsError):
            files.delete_checkpoint(staging_key(task, name))


def _owned(task_id: str, attempt: int, deps: WorkerDependencies) -> Task:
    task = deps.tasks.get(task_id)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        raise LostOwnership(f"task {task_id} is no longer running attempt {attempt}")
    return task


def _files(deps: WorkerDependencies) -> ExportFiles | None:
    return deps.results.export_files()


def _plan(task: Task, files: ExportFiles) -> FanOutPlan:
    blob = files.read_checkpoint(staging_key(task, "plan.json"))
    if blob is None:
        raise LostOwnership(f"task {task.task_id} has no plan for attempt {task.attempt}")
    return FanOutPlan.from_json(blob)


# A partition's staged result: a JSON header line, then each segment's head and tail bytes.


def _encode(result: PartitionResult) -> bytes:
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


def _decode(blob: bytes) -> PartitionResult:
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
