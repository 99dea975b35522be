"""Running one export: pages from the source, through the writer, into parts on S3.

One claimed task runs :func:`run_export`. It streams the export type's pages into the format's
writer and a :class:`MultipartSink`, reports progress (percent against the expected rows when
the type knows them), and finishes with one complete object whose rows, bytes and sha256 are
both in the :class:`ExportResult` and in the object's tags.

The worker handler passes the time its invocation has left. A CSV or csv.gz export that runs
short of it continues in a new invocation from a checkpoint (:mod:`exports.services.long_exports`);
an XLSX workbook cannot, and stops in time (:mod:`exports.services.xlsx_guards`). The stream
engine (``XlsxEngine.STREAM``, the default) writes the workbook straight into the upload. A
failed export aborts its upload and deletes its checkpoint: no partial file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from exports.config import LongExports, Results, XlsxEngine
from exports.domain.checkpoint import ExportCheckpoint
from exports.domain.errors import LostOwnership
from exports.domain.task import ExportFormat, ExportResult, Task
from exports.export_types.base import Column, CsvRows, Cursor, ExportType, RunControl
from exports.ports import ExportFiles, MultipartUpload, RemainingMs, ResumableUpload
from exports.services.dependencies import WorkerDependencies
from exports.services.long_exports import Checkpoints, ExportContinues, export_fingerprint, sink_state
from exports.services.progress import ProgressReporter
from exports.services.result_cleanup import abort_upload, remove_result
from exports.services.run_budget import RunBudget
from exports.services.task_writes import continue_later
from exports.services.xlsx_guards import RowCount, archive_too_large, cell_too_long, guarded_rows
from exports.writers import csv_writer, xlsx_engine, xlsx_writer
from exports.writers.cells import CellTooLong
from exports.writers.gzip_stream import GzipState, GzipStream
from exports.writers.sink import MultipartSink

logger = logging.getLogger(__name__)

CONTENT_TYPES: Mapping[ExportFormat, str] = {
    ExportFormat.CSV: csv_writer.CONTENT_TYPE,
    ExportFormat.CSV_GZ: csv_writer.GZIP_CONTENT_TYPE,
    ExportFormat.XLSX: xlsx_engine.CONTENT_TYPE,
}
# WorkerSettings.xlsx_engine -> the writer; both take (columns, rows, out).
XLSX_WRITERS: Mapping[str, Callable[..., int]] = {
    XlsxEngine.STREAM: xlsx_engine.write_xlsx_stream,
    XlsxEngine.OPENPYXL: xlsx_writer.write_xlsx,
}


@dataclass(frozen=True)
class _Target:
    """Where the file goes and what it is called."""

    key: str
    file_name: str
    content_type: str


def result_target(task: Task, export_type: ExportType, filters: Any) -> _Target:
    """The key, download name and content type of the attempt's file."""
    file_name = f"{export_type.file_stem(filters)}.{task.format.value}"
    return _Target(
        # One key per attempt: a worker that outlived its lease can neither overwrite nor, when
        # it finds it lost the task, delete the file of the attempt that took the task over.
        key=f"{Results.KEY_PREFIX}/{task.task_id}/{task.attempt}/{file_name}",
        file_name=file_name,
        content_type=CONTENT_TYPES[task.format],
    )


def run_control(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> RunControl:
    """The :class:`RunControl` of a run of ``task`` with ``remaining_ms`` of the invocation left."""
    return _Control(task, RunBudget(remaining_ms), progress, deps)


class _Control:
    """:class:`RunControl` of one run: the time left is the invocation's or the task's deadline's,
    whichever ends first; asking whether to stop is a progress write (at most every progress
    interval), which renews the lease of a run that waits long on its source and finds out
    when the task was cancelled or timed out."""

    def __init__(self, task: Task, budget: RunBudget, progress: ProgressReporter, deps: WorkerDependencies) -> None:
        self._task = task
        self._budget = budget
        self._progress = progress
        self._deps = deps

    @property
    def task_id(self) -> str:
        return self._task.task_id

    def seconds_left(self) -> float | None:
        to_deadline = (self._task.deadline - self._deps.clock()).total_seconds()
        left = self._budget.seconds_left()
        return to_deadline if left is None else min(left, to_deadline)

    def stop_requested(self) -> bool:
        if self._deps.clock() >= self._task.deadline:
            return True
        try:
            self._progress.flush_if_due()
        except LostOwnership:
            return True
        return False


class _Progress:
    """Progress per page: rows against the expected count when known, else the source's own
    fraction, else rows against an estimate. :class:`ProgressReporter` writes at most every
    ``progress_interval_sec``."""

    def __init__(self, reporter: ProgressReporter, expected_rows: int | None, estimated_rows: int | None) -> None:
        self._reporter = reporter
        self._expected = expected_rows
        self._estimated = estimated_rows
        self.percent = 0

    def update(self, rows: int, fraction: float | None) -> None:
        if self._expected:
            fraction = rows / self._expected
        elif fraction is None and self._estimated:
            fraction = rows / self._estimated
        if fraction is not None:
            fraction = min(max(fraction, 0.0), 1.0)
            self.percent = int(fraction * 100)
            self._reporter.on_fraction(fraction)
        self._reporter.on_row(rows)


def run_export(
    task: Task,
    progress: ProgressReporter,
    deps: WorkerDependencies,
    remaining_ms: RemainingMs | None = None,
    planned_rows: int | None = None,
) -> ExportResult:
    """Write the file of the claimed ``task``; :class:`ExportContinues` when it goes on in a new
    invocation. ``remaining_ms``: the invocation's time left (None: unbounded, never hands over);
    progress is measured against the rows the type knows it has, else ``planned_rows`` (what the
    fan-out plan counted), else the task's ``estimated_rows``."""
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    columns = export_type.columns(filters)
    folder = f"{Results.KEY_PREFIX}/{task.task_id}"
    target = result_target(task, export_type, filters)
    files = deps.results.export_files()
    checkpoints = Checkpoints(task, export_fingerprint(task, export_type.name, columns), files, folder, deps.clock)
    tracker = _Progress(progress, export_type.expected_rows(filters) or planned_rows, task.estimated_rows)
    budget = RunBudget(remaining_ms)
    run = _Run(task, export_type, filters, columns, target, files, checkpoints, deps, budget, tracker, progress)
    return run.xlsx() if task.format is ExportFormat.XLSX else run.csv()


class _Run:
    """One invocation's share of one export."""

    def __init__(
        self,
        task: Task,
        export_type: ExportType,
        filters: Any,
        columns: list[Column],
        target: _Target,
        files: ExportFiles | None,
        checkpoints: Checkpoints,
        deps: WorkerDependencies,
        budget: RunBudget,
        tracker: _Progress,
        progress: ProgressReporter,
    ) -> None:
        self.task = task
        self.export_type = export_type
        self.filters = filters
        self.columns = columns
        self.target = target
        self.files = files
        self.checkpoints = checkpoints
        self.deps = deps
        self.budget = budget
        self.tracker = tracker
        self.progress = progress
        self.control = _Control(task, budget, progress, deps)
        # Set once S3 has the whole object: from then on a failure deletes it, nothing to abort.
        self.completed = False
        # The open upload as another invocation could pick it up (None: the store cannot).
        self.resumable: ResumableUpload | None = None

    def csv(self) -> ExportResult:
        """Stream CSV (gzipped for csv.gz), continuing from a checkpoint if there is one."""
        loaded = self.checkpoints.load()
        checkpoint, tail = loaded if loaded else (None, b"")
        if checkpoint is not None:
            # The upload goes on under the key of the attempt that started it.
            self.target = _Target(checkpoint.key, self.target.file_name, self.target.content_type)
        upload = self._open_upload(checkpoint)
        rows = checkpoint.rows if checkpoint else 0
        try:
            sink = MultipartSink(
                upload,
                self.deps.settings.upload_part_bytes,
                state=sink_state(checkpoint, tail) if checkpoint else None,
            )
            gzip = None
            out = cast(BinaryIO, sink)  # a RawIOBase: what TextIOWrapper needs of a binary file
            if self.task.format is ExportFormat.CSV_GZ:
                state = GzipState.from_json(checkpoint.gzip) if checkpoint and checkpoint.gzip else None
                gzip = GzipStream(sink, state=state)
                out = cast(BinaryIO, gzip)
            fresh = checkpoint is None
            stream = csv_writer.CsvStream(
                self.columns,
                out,
                bom=self.task.csv_bom and fresh,
                header=fresh,
                formula_guard=self.task.csv_formula_guard,
            )
            cursor = checkpoint.cursor if checkpoint else None
            copied = self.export_type.csv_rows(self.filters, cursor, self.control, self.task.csv_formula_guard)
            if copied is not None:
                stream.flush()
                rows = self._copy_rows(copied, out, sink, gzip, rows)
            for page in self.export_type.stream(self.filters, cursor, self.control) if copied is None else ():
                stream.write_rows(page.rows)
                rows += len(page.rows)
                self.tracker.update(rows, page.fraction)
                if self.budget.below(LongExports.CHECKPOINT_MARGIN_SEC):
                    stream.flush()
                    self._hand_over(sink, gzip, page.cursor, rows)
            stream.detach()
            if gzip is not None:
                gzip.finish()
            return self._finish(upload, sink, rows)
        except ExportContinues:
            raise
        except BaseException:
            self._discard(upload)
            raise

    def _copy_rows(
        self, copied: CsvRows, out: BinaryIO, sink: MultipartSink, gzip: GzipStream | None, before: int
    ) -> int:
        """The source's own CSV rows (COPY) after the header; the rows in the file."""
        try:
            for chunk in copied.chunks():
                out.write(chunk)
                self.tracker.update(before + copied.rows, None)
                if self.budget.below(LongExports.CHECKPOINT_MARGIN_SEC):
                    self._hand_over(sink, gzip, copied.checkpoint(), before + copied.rows)
            return before + copied.rows
        finally:
            copied.close()

    def _hand_over(self, sink: MultipartSink, gzip: GzipStream | None, cursor: Cursor | None, rows: int) -> None:
        """Save a checkpoint and queue the task for a new invocation; raises ExportContinues."""
        checkpoint = self.checkpoints.save(
            self.export_type.name, self.target.key, self.resumable, sink, gzip, cursor, rows
        )
        continue_later(self.progress.task, rows, self.tracker.percent, self.deps)
        logger.info(
            "export continues in a new invocation",
            extra={"rows": rows, "parts": len(checkpoint.parts), "continuation": self.task.continuations + 1},
        )
        raise ExportContinues(f"task {self.task.task_id} continues in a new invocation")

    def xlsx(self) -> ExportResult:
        """Stream a workbook; stop with XLSX_TOO_LARGE before the time runs out, or /tmp (openpyxl
        engine), or the 2 GiB a workbook may take (stream engine)."""
        engine = self.deps.settings.xlsx_engine
        upload = self._open_upload(None)
        try:
            sink = MultipartSink(upload, self.deps.settings.upload_part_bytes)
            counted = RowCount()
            pages = self.export_type.stream(self.filters, None, self.control)
            temp_files = engine == XlsxEngine.OPENPYXL
            rows = guarded_rows(pages, counted, self.tracker.update, self.budget, temp_files)
            try:
                XLSX_WRITERS[engine](self.columns, rows, sink)
            except xlsx_engine.ArchiveTooLarge as error:
                raise archive_too_large(counted.rows) from error
            except CellTooLong as error:
                raise cell_too_long(error, self.columns, counted.rows) from None
            return self._finish(upload, sink, counted.rows)
        except BaseException:
            # A checkpoint of an earlier CSV run of this task cannot exist (the key differs), but
            # a stray one must not outlive the task either.
            self._discard(upload)
            raise

    def _open_upload(self, checkpoint: ExportCheckpoint | None) -> MultipartUpload:
        if self.files is None:
            return self.deps.results.start_upload(
                self.target.key, self.target.content_type, self.target.file_name, self._metadata()
            )
        if checkpoint is not None:
            parts = [(part.number, part.etag) for part in checkpoint.parts]
            self.resumable = self.files.resume_upload(self.target.key, checkpoint.upload_id, parts)
        else:
            self.resumable = self.files.start_upload(
                self.target.key, self.target.content_type, self.target.file_name, self._metadata()
            )
        return self.resumable

    def _metadata(self) -> dict[str, str]:
        return {"task-id": self.task.task_id, "export-type": self.export_type.name, "format": self.task.format.value}

    def _finish(self, upload: MultipartUpload, sink: MultipartSink, rows: int) -> ExportResult:
        sha256 = sink.finish()
        try:
            upload.complete()
            self.completed = True
            if self.files is not None:
                tags = {"rows": str(rows), "bytes": str(sink.bytes_written), "sha256": sha256}
                self.files.tag_result(self.target.key, tags)
        except BaseException:
            # The object may exist (tagging failed, or completing landed and only its answer was
            # lost) while this attempt fails: it must not outlive the attempt.
            remove_result(self.target.key, self.deps.results)
            raise
        self.checkpoints.delete()
        return ExportResult(
            key=self.target.key,
            bytes=sink.bytes_written,
            rows=rows,
            sha256=sha256,
            content_type=self.target.content_type,
            file_name=self.target.file_name,
        )

    def _discard(self, upload: MultipartUpload) -> None:
        """Nothing partial may stay behind."""
        if not self.completed:
            abort_upload(upload)
        self.checkpoints.delete()
