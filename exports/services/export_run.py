"""Running one export: pages from the source, through the writer, into parts on S3.

One claimed task runs :func:`run_export`. It streams the export type's pages into the format's
writer and a :class:`MultipartSink`, reports progress (percent against the expected rows when
the type knows them), and finishes with one complete object whose rows, bytes and sha256 are
both in the :class:`ExportResult` and in the object's tags.

The worker handler passes the time its invocation has left. A CSV or csv.gz export that runs
short of it continues in a new invocation from a checkpoint (:mod:`exports.services.long_exports`);
and :func:`run_export` returns :class:`HandedOver` (a value: handing over is how a long export
goes on, not a fault). An XLSX workbook cannot, and stops in time
(:mod:`exports.services.xlsx_guards`). The stream engine (``XlsxEngine.STREAM``, the default)
writes the workbook straight into the upload. A failed export aborts its upload and deletes its
checkpoint: no partial file (:class:`exports.services.attempt_files.AttemptFiles` owns them).

:data:`FORMATS` says per file format what the worker needs: its content type and extension,
whether it can hand over to a new invocation, whether the fan-out may split it, and the
writer; a new format is one entry there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from exports.domain.checkpoint import ExportCheckpoint
from exports.domain.errors import ExportFailed, LostOwnership
from exports.domain.task import ExportFormat, ExportResult, Task
from exports.domain.zones import is_utc
from exports.export_types.base import Column, CsvRows, Cursor, ExportType, Page, RunControl
from exports.ports import MultipartUpload, RemainingMs, ResumableUpload
from exports.services import parquet_guards
from exports.services.attempt_files import AttemptFiles, ResultTarget, attempt_key
from exports.services.dependencies import WorkerDependencies
from exports.services.long_exports import CHECKPOINT_MARGIN_SEC, Checkpoints, export_fingerprint, sink_state
from exports.services.one_run import batches_in_one_run, rows_in_one_run
from exports.services.pdf_guards import TIME_MARGIN_SEC as PDF_TIME_MARGIN_SEC
from exports.services.pdf_guards import heading as pdf_heading
from exports.services.pdf_guards import out_of_time as pdf_out_of_time
from exports.services.progress import ProgressReporter
from exports.services.run_budget import RunBudget
from exports.services.task_writes import continue_later
from exports.services.xlsx_guards import RowCount, archive_too_large, cell_too_long, guarded_rows
from exports.settings import XlsxEngine
from exports.writers import csv_writer, jsonl_writer, parquet_arrow, parquet_writer, pdf, xlsx_engine, xlsx_writer
from exports.writers.byte_sink import ByteSink, ByteStream
from exports.writers.cells import CellTooLong
from exports.writers.gzip_stream import GzipState, GzipStream
from exports.writers.sink import MultipartSink
from exports.writers.zones import ZonedExport

logger = logging.getLogger(__name__)

# The formats written through gzip, and those whose rows are JSON Lines (both continue from a
# checkpoint like CSV).
GZIP_FORMATS = frozenset({ExportFormat.CSV_GZ, ExportFormat.JSONL_GZ})
JSONL_FORMATS = frozenset({ExportFormat.JSONL, ExportFormat.JSONL_GZ})
# A JSON column's value that is no JSON text (a declared kind over other text).
JSON_VALUE_INVALID = "JSON_VALUE_INVALID"
# WorkerSettings.xlsx_engine -> the writer; both take (columns, rows, out).
XLSX_WRITERS: Mapping[str, Callable[..., int]] = {
    XlsxEngine.STREAM: xlsx_engine.write_xlsx_stream,
    XlsxEngine.OPENPYXL: xlsx_writer.write_xlsx,
}


@dataclass(frozen=True)
class HandedOver:
    """The export saved a checkpoint after ``rows`` rows and its task waits, queued, for a new
    invocation (the upload stays open for it)."""

    rows: int


def result_target(task: Task, export_type: ExportType, filters: BaseModel) -> ResultTarget:
    """The key, download name and content type of the attempt's file."""
    spec = FORMATS[task.format]
    file_name = f"{export_type.file_stem(filters)}.{spec.extension}"
    return ResultTarget(attempt_key(task, file_name), file_name, spec.content_type)


def upload_metadata(task: Task, export_type: ExportType) -> dict[str, str]:
    """The metadata on the attempt's upload (and so on its file)."""
    return {"task-id": task.task_id, "export-type": export_type.name, "format": task.format.value}


def task_zone(task: Task, export_type: ExportType, filters: BaseModel, control: RunControl) -> ZonedExport:
    """How the task's time zone changes its file (exports.writers.zones): the type is asked
    for its instant columns only when the zone is not UTC (a SQL type describes its query)."""
    if is_utc(task.timezone):
        return ZonedExport(task.timezone, task.format, ())
    return ZonedExport(task.timezone, task.format, export_type.zoned_columns(filters, control))


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
        self.expected = expected_rows
        self._estimated = estimated_rows
        self.percent = 0

    def update(self, rows: int, fraction: float | None) -> None:
        if self.expected:
            fraction = rows / self.expected
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
) -> ExportResult | HandedOver:
    """Write the file of the claimed ``task``, or hand it over to a new invocation
    (:class:`HandedOver`). ``remaining_ms``: the invocation's time left (None: unbounded, never
    hands over); progress is measured against the rows the type knows it has, else
    ``planned_rows`` (what the fan-out plan counted), else what its source counts now, else the
    task's ``estimated_rows``."""
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    columns = export_type.columns(filters)
    attempt = AttemptFiles(task, deps.results)
    checkpoints = Checkpoints(task, export_fingerprint(task, export_type.name, columns), attempt, deps.clock)
    spec = FORMATS[task.format]
    budget = RunBudget(remaining_ms)
    control = _Control(task, budget, progress, deps)
    zoned = task_zone(task, export_type, filters, control)
    # A format that cannot hand over never goes on from a checkpoint (a stray one goes).
    resumed = checkpoints.load() if spec.resumable else None
    expected = export_type.expected_rows(filters) or planned_rows or (resumed[0].expected_rows if resumed else None)
    if expected is None:
        # Counted, not the submit's estimate: that is the mean size of the type's recent runs,
        # which for a type whose size is a filter (or another format's runs) can be off by far.
        expected = export_type.count_rows(filters, control)
    run = ExportRun(
        task=task,
        export_type=export_type,
        filters=filters,
        columns=zoned.columns(columns),
        zoned=zoned,
        target=result_target(task, export_type, filters),
        attempt=attempt,
        checkpoints=checkpoints,
        resumed=resumed,
        deps=deps,
        budget=budget,
        tracker=_Progress(progress, expected, task.estimated_rows),
        progress=progress,
    )
    return spec.write(run)


@dataclass
class ExportRun:
    """One invocation's share of one export: what the format's writer streams from and into.
    ``resumed``: the checkpoint it goes on from and its unsent bytes."""

    task: Task
    export_type: ExportType
    filters: BaseModel
    # The file's columns (in the task's zone) and how the zone changes the rows.
    columns: list[Column]
    zoned: ZonedExport
    target: ResultTarget
    attempt: AttemptFiles
    checkpoints: Checkpoints
    resumed: tuple[ExportCheckpoint, bytes] | None
    deps: WorkerDependencies
    budget: RunBudget
    tracker: _Progress
    progress: ProgressReporter
    # The open upload as another invocation could pick it up (None: the store cannot).
    resumable: ResumableUpload | None = None

    @property
    def control(self) -> RunControl:
        """The run's :class:`RunControl` for the export type's reads."""
        return _Control(self.task, self.budget, self.progress, self.deps)

    def pages(self, cursor: Cursor | None) -> Iterator[Page]:
        """The type's pages from ``cursor``, their instants in the task's zone."""
        return self.zoned.pages(self.columns, self.export_type.stream(self.filters, cursor, self.control))

    def open_upload(self, checkpoint: ExportCheckpoint | None) -> MultipartUpload:
        """The file's upload: picked up where ``checkpoint`` left it, or started."""
        if checkpoint is not None:
            parts = [(part.number, part.etag) for part in checkpoint.parts]
            self.resumable = self.attempt.resume(self.target.key, checkpoint.upload_id, parts)
            return self.resumable
        metadata = upload_metadata(self.task, self.export_type)
        if self.attempt.files is None:
            return self.attempt.start(self.target, metadata)
        self.resumable = self.attempt.start_shared(self.target, metadata)
        return self.resumable

    def finish(self, upload: MultipartUpload, sink: MultipartSink, rows: int) -> ExportResult:
        """Complete and tag the file; the export's result."""
        sha256 = sink.finish()
        tags = {"rows": str(rows), "bytes": str(sink.bytes_written), "sha256": sha256}
        self.attempt.complete(upload, self.target.key, tags)
        return ExportResult(
            key=self.target.key,
            bytes=sink.bytes_written,
            rows=rows,
            sha256=sha256,
            content_type=self.target.content_type,
            file_name=self.target.file_name,
        )


def write_csv(run: ExportRun) -> ExportResult | HandedOver:
    """Stream CSV or JSON Lines (gzipped for csv.gz and jsonl.gz), continuing from a checkpoint if
    there is one; hand over at a page boundary when the invocation runs short of time."""
    checkpoint, tail = run.resumed if run.resumed else (None, b"")
    if checkpoint is not None:
        # The upload goes on under the key of the attempt that started it.
        run.target = ResultTarget(checkpoint.key, run.target.file_name, run.target.content_type)
    upload = run.open_upload(checkpoint)
    rows = checkpoint.rows if checkpoint else 0
    try:
        sink = MultipartSink(
            upload, run.deps.settings.upload_part_bytes, state=sink_state(checkpoint, tail) if checkpoint else None
        )
        gzip = None
        out: ByteStream = sink
        if run.task.format in GZIP_FORMATS:
            state = GzipState.from_json(checkpoint.gzip) if checkpoint and checkpoint.gzip else None
            gzip = GzipStream(sink, state=state)
            out = gzip
        fresh = checkpoint is None
        stream: csv_writer.CsvStream | jsonl_writer.JsonlStream
        if run.task.format in JSONL_FORMATS:
            stream = jsonl_writer.JsonlStream(run.columns, out)
        else:
            stream = csv_writer.CsvStream(
                run.columns, out, bom=run.task.csv_bom and fresh, header=fresh, formula_guard=run.task.csv_formula_guard
            )
        cursor = checkpoint.cursor if checkpoint else None
        # CSV rows the source writes itself (PostgreSQL's COPY), byte-equal to the writer's.
        copied = (
            None
            if run.task.format in JSONL_FORMATS
            else run.export_type.csv_rows(
                run.filters, cursor, run.control, run.task.csv_formula_guard, run.task.timezone
            )
        )
        if copied is not None:
            stream.flush()
            copy = _copy_rows(run, copied, out, sink, gzip, rows)
            if isinstance(copy, HandedOver):
                return copy
            rows = copy
        for page in run.pages(cursor) if copied is None else ():
            stream.write_rows(page.rows)
            rows += len(page.rows)
            run.tracker.update(rows, page.fraction)
            if run.budget.below(CHECKPOINT_MARGIN_SEC):
                stream.flush()
                return _hand_over(run, sink, gzip, page.cursor, rows)
        stream.detach()
        if gzip is not None:
            gzip.finish()
        return run.finish(upload, sink, rows)
    except jsonl_writer.InvalidJson as error:
        run.attempt.discard(upload)
        raise ExportFailed(
            f"{error} after {rows} rows: a column of kind json holds other text", code=JSON_VALUE_INVALID
        ) from None
    except BaseException:
        run.attempt.discard(upload)
        raise


def _copy_rows(
    run: ExportRun, copied: CsvRows, out: ByteSink, sink: MultipartSink, gzip: GzipStream | None, before: int
) -> int | HandedOver:
    """The source's own CSV rows (COPY) after the header: the rows in the file, or the hand-over
    when the invocation runs short of time."""
    try:
        for chunk in copied.chunks():
            out.write(chunk)
            run.tracker.update(before + copied.rows, None)
            if run.budget.below(CHECKPOINT_MARGIN_SEC):
                return _hand_over(run, sink, gzip, copied.checkpoint(), before + copied.rows)
        return before + copied.rows
    finally:
        copied.close()


def _hand_over(
    run: ExportRun, sink: MultipartSink, gzip: GzipStream | None, cursor: Cursor | None, rows: int
) -> HandedOver:
    """Save a checkpoint and queue the task for a new invocation."""
    checkpoint = run.checkpoints.save(
        run.export_type.name, run.target.key, run.resumable, sink, gzip, cursor, rows, run.tracker.expected
    )
    continue_later(run.progress.task, rows, run.tracker.percent, run.deps)
    logger.info(
        "export continues in a new invocation",
        extra={"rows": rows, "parts": len(checkpoint.parts), "continuation": run.task.continuations + 1},
    )
    return HandedOver(rows)


def write_xlsx(run: ExportRun) -> ExportResult:
    """Stream a workbook; stop with XLSX_TOO_LARGE before the time runs out, or /tmp (openpyxl
    engine), or the 2 GiB a workbook may take (stream engine)."""
    engine = run.deps.settings.xlsx_engine
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        counted = RowCount()
        pages = run.pages(None)
        temp_files = engine == XlsxEngine.OPENPYXL
        rows = guarded_rows(pages, counted, run.tracker.update, run.budget, temp_files)
        try:
            XLSX_WRITERS[engine](run.columns, rows, sink)
        except xlsx_engine.ArchiveTooLarge as error:
            raise archive_too_large(counted.rows) from error
        except CellTooLong as error:
            raise cell_too_long(error, run.columns, counted.rows) from None
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        # A checkpoint of an earlier CSV run of this task cannot exist (the key differs), but
        # a stray one must not outlive the task either.
        run.attempt.discard(upload)
        raise


def write_pdf(run: ExportRun) -> ExportResult:
    """Stream a PDF table in one pass; stop with PDF_TOO_LARGE before the time runs out."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        title = run.export_type.description or run.export_type.name
        # The stored filters: the caller-bound values are not filters the caller chose.
        heading = pdf_heading(title, run.task.filters, run.deps.clock(), run.task.timezone)
        counted = RowCount()
        pages = run.pages(None)
        rows = rows_in_one_run(pages, counted, run.tracker.update, run.budget, PDF_TIME_MARGIN_SEC, pdf_out_of_time)
        pdf.write_pdf_stream(run.columns, rows, sink, heading)
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        run.attempt.discard(upload)
        raise


def write_parquet(run: ExportRun) -> ExportResult:
    """Stream a Parquet file, a row group at a time; stop with PARQUET_TOO_LARGE before the time
    runs out (it cannot continue in a new invocation)."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        counted = RowCount()
        guard = (counted, run.tracker.update, run.budget, parquet_guards.TIME_MARGIN_SEC, parquet_guards.out_of_time)
        # Arrow-native when the source reads so (a PostgreSQL query through ADBC): the same file.
        batches = run.export_type.parquet_batches(run.filters, run.columns, run.control)
        try:
            if batches is not None:
                parquet_arrow.write_parquet_batches(run.columns, batches_in_one_run(batches, *guard), sink)
            else:
                parquet_writer.write_parquet_stream(run.columns, rows_in_one_run(run.pages(None), *guard), sink)
        except parquet_writer.ParquetValueInvalid as error:
            raise parquet_guards.value_invalid(error, counted.rows) from None
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        run.attempt.discard(upload)
        raise


@dataclass(frozen=True)
class FormatSpec:
    """What the worker knows of one file format."""

    content_type: str
    # The download name's extension (after the type's file stem).
    extension: str
    # A long export of it hands over to a new invocation from a checkpoint (else it must fit
    # in one invocation, and stops in time when it does not).
    resumable: bool
    # The fan-out may write it in partitions at once (exports.fan_out).
    splittable: bool
    # Writes the file of one run (exports.services.export_run.ExportRun).
    write: Callable[[ExportRun], ExportResult | HandedOver]


FORMATS: Mapping[ExportFormat, FormatSpec] = {
    ExportFormat.CSV: FormatSpec(csv_writer.CONTENT_TYPE, "csv", resumable=True, splittable=True, write=write_csv),
    ExportFormat.CSV_GZ: FormatSpec(
        csv_writer.GZIP_CONTENT_TYPE, "csv.gz", resumable=True, splittable=True, write=write_csv
    ),
    ExportFormat.XLSX: FormatSpec(xlsx_engine.CONTENT_TYPE, "xlsx", resumable=False, splittable=True, write=write_xlsx),
    # Not split: page numbers ("3 / 1,204"), the font subset, the page tree and the offsets of
    # the cross-reference table span the whole file (docs/fan-out.md, "PDF").
    ExportFormat.PDF: FormatSpec(pdf.CONTENT_TYPE, "pdf", resumable=False, splittable=False, write=write_pdf),
    # Not split (docs/fan-out.md, "Formats that do not split"): JSON Lines continues from
    # checkpoints instead; a Parquet footer lists every row group of the file.
    ExportFormat.JSONL: FormatSpec(
        jsonl_writer.CONTENT_TYPE, "jsonl", resumable=True, splittable=False, write=write_csv
    ),
    ExportFormat.JSONL_GZ: FormatSpec(
        jsonl_writer.GZIP_CONTENT_TYPE, "jsonl.gz", resumable=True, splittable=False, write=write_csv
    ),
    ExportFormat.PARQUET: FormatSpec(
        parquet_writer.CONTENT_TYPE, "parquet", resumable=False, splittable=False, write=write_parquet
    ),
}
