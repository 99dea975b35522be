"""Running one export: pages from the source, through the writer, into parts on S3.

One claimed task runs :func:`run_export`. It streams the export type's pages into the format's
writer and a :class:`MultipartSink`, reports progress (percent against the expected rows when
the type knows them), and finishes with one complete object whose rows, bytes and sha256 are
both in the :class:`ExportResult` and in the object's tags.

Exports longer than one invocation: the worker handler states how long its invocation has left
(:func:`time_budget`). A CSV or csv.gz export that reaches
:attr:`exports.config.LongExports.CHECKPOINT_MARGIN_SEC` before the end, at a page boundary,
saves a checkpoint next to the result file, queues its task again and raises
:class:`ExportContinues`; the next invocation that claims the task appends to the same upload
from that checkpoint. An XLSX workbook is not continued: it stops with ``XLSX_TOO_LARGE`` while
there is still time to abort cleanly (and, with the openpyxl engine, which holds the workbook in
temporary files until it is saved, disk). The stream engine (``XlsxEngine.STREAM``, the default)
writes the workbook straight into the upload. A failed export aborts its upload and deletes its
checkpoint: no partial file.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, Protocol, cast, runtime_checkable

from exports.config import LongExports, Metric, Results, XlsxEngine, XlsxLimits
from exports.domain.checkpoint import (
    ExportCheckpoint,
    decode_checkpoint,
    encode_checkpoint,
    fingerprint,
    part_records,
)
from exports.domain.errors import ConditionFailed, ExportFailed, ExportsError, LostOwnership
from exports.domain.task import ExportFormat, ExportResult, Task, record_progress, suspend
from exports.export_types.base import Column, Cursor, ExportType, Row, RunControl
from exports.ports import MultipartUpload, ResultStore, TaskMessage
from exports.services.dependencies import Dependencies
from exports.services.progress import ProgressReporter
from exports.services.retries import retry_transient
from exports.writers import csv_writer, xlsx_engine, xlsx_writer
from exports.writers.gzip_stream import GzipState, GzipStream
from exports.writers.resumable_sha256 import NotResumable, Sha256State
from exports.writers.sink import MultipartSink, SinkState

logger = logging.getLogger(__name__)

EXPORT_TOO_LONG = "EXPORT_TOO_LONG"
XLSX_TOO_LARGE = "XLSX_TOO_LARGE"
CONTENT_TYPES: Mapping[ExportFormat, str] = {
    ExportFormat.CSV: csv_writer.CONTENT_TYPE,
    ExportFormat.CSV_GZ: csv_writer.GZIP_CONTENT_TYPE,
    ExportFormat.XLSX: xlsx_engine.CONTENT_TYPE,
}
# Settings.xlsx_engine -> the writer; both take (columns, rows, out).
XLSX_WRITERS: Mapping[str, Callable[..., int]] = {
    XlsxEngine.STREAM: xlsx_engine.write_xlsx_stream,
    XlsxEngine.OPENPYXL: xlsx_writer.write_xlsx,
}

RemainingMs = Callable[[], int]
_remaining_ms: ContextVar[RemainingMs | None] = ContextVar("exports_remaining_ms", default=None)


@contextlib.contextmanager
def time_budget(remaining_ms: RemainingMs) -> Iterator[None]:
    """Exports run inside this block know how long the invocation has left, e.g.
    ``with time_budget(context.get_remaining_time_in_millis): ...`` in the worker handler."""
    token = _remaining_ms.set(remaining_ms)
    try:
        yield
    finally:
        _remaining_ms.reset(token)


class ExportContinues(LostOwnership):
    """The export saved a checkpoint and handed its task to a new invocation: this invocation
    is done with the task (its upload stays open for the next one)."""

    code = "EXPORT_CONTINUES"


@runtime_checkable
class ResumableUpload(MultipartUpload, Protocol):
    """A multipart upload that tells what another invocation needs to go on with it."""

    @property
    def upload_id(self) -> str:
        """S3's id of the upload."""

    @property
    def parts(self) -> list[tuple[int, str]]:
        """Parts sent so far, as (number, ETag)."""


@runtime_checkable
class ExportFiles(ResultStore, Protocol):
    """A result store that long exports can use (see :mod:`exports.adapters.s3_results`)."""

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> ResumableUpload:
        """The upload ``upload_id`` of ``key``, continuing after ``parts``."""

    def read_checkpoint(self, key: str) -> bytes | None:
        """The checkpoint object, or None."""

    def write_checkpoint(self, key: str, body: bytes) -> None:
        """Store the checkpoint object."""

    def delete_checkpoint(self, key: str) -> None:
        """Remove the checkpoint object."""

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        """Tag the finished object."""


@dataclass(frozen=True)
class _Target:
    """Where the file goes and what it is called."""

    key: str
    file_name: str
    content_type: str
    checkpoint_key: str


def result_target(task: Task, export_type: ExportType, filters: Any) -> _Target:
    """The key, download name and content type of the attempt's file, and its checkpoint's key."""
    file_name = f"{export_type.file_stem(filters)}.{task.format.value}"
    folder = f"{Results.KEY_PREFIX}/{task.task_id}"
    return _Target(
        # One key per attempt: a worker that outlived its lease can neither overwrite nor, when
        # it finds it lost the task, delete the file of the attempt that took the task over.
        key=f"{folder}/{task.attempt}/{file_name}",
        file_name=file_name,
        content_type=CONTENT_TYPES[task.format],
        checkpoint_key=f"{folder}/{LongExports.CHECKPOINT_NAME}",
    )


def run_control(task: Task, progress: ProgressReporter, deps: Dependencies) -> RunControl:
    """The :class:`RunControl` of a run of ``task`` inside the enclosing :func:`time_budget`."""
    return _Control(task, _Budget(_remaining_ms.get()), progress, deps)


class _Budget:
    """The invocation's remaining time (unbounded when nobody said)."""

    def __init__(self, remaining_ms: RemainingMs | None) -> None:
        self._remaining_ms = remaining_ms

    def seconds_left(self) -> float | None:
        return None if self._remaining_ms is None else self._remaining_ms() / 1000

    def below(self, seconds: float) -> bool:
        left = self.seconds_left()
        return left is not None and left < seconds


class _Control:
    """:class:`RunControl` of one run: the time left is the invocation's or the task's deadline's,
    whichever ends first; asking whether to stop is a progress write (at most every progress
    interval), which renews the lease of a run that waits long on its source and finds out
    when the task was cancelled or timed out."""

    def __init__(self, task: Task, budget: _Budget, progress: ProgressReporter, deps: Dependencies) -> None:
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
    fraction. :class:`ProgressReporter` writes at most every ``progress_interval_sec``."""

    def __init__(self, reporter: ProgressReporter, expected_rows: int | None) -> None:
        self._reporter = reporter
        self._expected = expected_rows
        self.percent = 0

    def update(self, rows: int, fraction: float | None) -> None:
        if self._expected:
            fraction = rows / self._expected
        if fraction is not None:
            fraction = min(max(fraction, 0.0), 1.0)
            self.percent = int(fraction * 100)
            self._reporter.on_fraction(fraction)
        self._reporter.on_row(rows)


def run_export(
    task: Task, progress: ProgressReporter, deps: Dependencies, remaining_ms: RemainingMs | None = None
) -> ExportResult:
    """Write the file of the claimed ``task``; :class:`ExportContinues` when it goes on in a new
    invocation. ``remaining_ms`` defaults to the enclosing :func:`time_budget`."""
    export_type = deps.registry.get(task.export_type)
    filters = export_type.parse_filters(task.filters)
    columns = export_type.columns(filters)
    target = result_target(task, export_type, filters)
    files = deps.results if isinstance(deps.results, ExportFiles) else None
    budget = _Budget(remaining_ms or _remaining_ms.get())
    tracker = _Progress(progress, export_type.expected_rows(filters))
    run = _Run(task, export_type, filters, columns, target, files, deps, budget, tracker, progress)
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
        deps: Dependencies,
        budget: _Budget,
        tracker: _Progress,
        progress: ProgressReporter,
    ) -> None:
        self.task = task
        self.export_type = export_type
        self.filters = filters
        self.columns = columns
        self.target = target
        self.files = files
        self.deps = deps
        self.budget = budget
        self.tracker = tracker
        self.progress = progress
        self.control = _Control(task, budget, progress, deps)
        # Set once S3 has the whole object: from then on a failure deletes it, nothing to abort.
        self.completed = False
        self.fingerprint = fingerprint(
            {
                "export_type": export_type.name,
                "format": task.format.value,
                "filters": task.filters,
                "csv_bom": task.csv_bom,
                "csv_formula_guard": task.csv_formula_guard,
                "columns": [[column.name, column.header, column.kind.value] for column in columns],
            }
        )

    # CSV and csv.gz ------------------------------------------------------------------------

    def csv(self) -> ExportResult:
        """Stream CSV (gzipped for csv.gz), continuing from a checkpoint if there is one."""
        checkpoint, tail = self._load_checkpoint()
        upload = self._open_upload(checkpoint)
        rows = checkpoint.rows if checkpoint else 0
        try:
            sink = MultipartSink(
                upload,
                self.deps.settings.upload_part_bytes,
                state=_sink_state(checkpoint, tail) if checkpoint else None,
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
            for page in self.export_type.stream(self.filters, cursor, self.control):
                stream.write_rows(page.rows)
                rows += len(page.rows)
                self.tracker.update(rows, page.fraction)
                if self.budget.below(LongExports.CHECKPOINT_MARGIN_SEC):
                    stream.flush()
                    self._hand_over(upload, sink, gzip, page.cursor, rows)
            stream.detach()
            if gzip is not None:
                gzip.finish()
            return self._finish(upload, sink, rows)
        except ExportContinues:
            raise
        except BaseException:
            self._discard(upload)
            raise

    def _hand_over(
        self,
        upload: ResumableUpload | MultipartUpload,
        sink: MultipartSink,
        gzip: GzipStream | None,
        cursor: Cursor | None,
        rows: int,
    ) -> None:
        """Save a checkpoint and queue the task for a new invocation; raises ExportContinues."""
        files, upload = self._resumable(upload, cursor)
        gzip_state = gzip.suspend() if gzip is not None else None
        try:
            state = sink.snapshot()
        except NotResumable as error:
            raise ExportFailed(
                "the export does not fit in one worker run and its sha256 cannot be carried over", code=EXPORT_TOO_LONG
            ) from error
        checkpoint = ExportCheckpoint(
            task_id=self.task.task_id,
            fingerprint=self.fingerprint,
            key=self.target.key,
            upload_id=upload.upload_id,
            parts=part_records(upload.parts),
            rows=rows,
            bytes=state.bytes_written,
            sha256=state.sha256.to_json(),
            gzip=gzip_state.to_json() if gzip_state else None,
            cursor=cursor,
            saved_at=self.deps.clock(),
        )
        files.write_checkpoint(self.target.checkpoint_key, encode_checkpoint(checkpoint, state.tail))
        continue_later(self.progress.task, rows, self.tracker.percent, self.deps)
        logger.info(
            "export continues in a new invocation",
            extra={"rows": rows, "parts": len(checkpoint.parts), "continuation": self.task.continuations + 1},
        )
        raise ExportContinues(f"task {self.task.task_id} continues in a new invocation")

    def _resumable(
        self, upload: ResumableUpload | MultipartUpload, cursor: Cursor | None
    ) -> tuple[ExportFiles, ResumableUpload]:
        """The store and upload to continue with; EXPORT_TOO_LONG if the export cannot."""
        if cursor is None:
            why = f"export type {self.export_type.name} cannot continue in a new one"
        elif self.files is None or not isinstance(upload, ResumableUpload):
            why = "the result store cannot continue uploads"
        elif self.task.continuations >= LongExports.MAX_CONTINUATIONS:
            why = f"it has already continued {self.task.continuations} times"
        else:
            return self.files, upload
        raise ExportFailed(f"the export does not fit in one worker run and {why}", code=EXPORT_TOO_LONG)

    def _load_checkpoint(self) -> tuple[ExportCheckpoint | None, bytes]:
        """The checkpoint this export left, if it fits; one that does not is thrown away."""
        if self.files is None:
            return None, b""
        blob = self.files.read_checkpoint(self.target.checkpoint_key)
        if blob is None:
            return None, b""
        try:
            checkpoint, tail = decode_checkpoint(blob)
            Sha256State.from_json(checkpoint.sha256)
        except (ValueError, KeyError, TypeError):
            logger.warning("unreadable checkpoint discarded")
            self._delete_checkpoint()
            return None, b""
        folder = self.target.checkpoint_key.rpartition("/")[0]
        if (
            checkpoint.task_id != self.task.task_id
            or checkpoint.fingerprint != self.fingerprint
            or not checkpoint.key.startswith(f"{folder}/")
        ):
            logger.warning("checkpoint of another export discarded")
            with contextlib.suppress(ExportsError):
                retry_transient(self.files.resume_upload(checkpoint.key, checkpoint.upload_id, ()).abort)
            self._delete_checkpoint()
            return None, b""
        # The upload goes on under the key of the attempt that started it.
        self.target = replace(self.target, key=checkpoint.key)
        return checkpoint, tail

    # XLSX -----------------------------------------------------------------------------------

    def xlsx(self) -> ExportResult:
        """Stream a workbook; stop with XLSX_TOO_LARGE before the time runs out, or /tmp (openpyxl
        engine), or the 2 GiB a workbook may take (stream engine)."""
        # A checkpoint of an earlier CSV run of this task cannot exist (the key differs), but a
        # stray one must not outlive the task either.
        engine = self.deps.settings.xlsx_engine
        upload = self._open_upload(None)
        try:
            sink = MultipartSink(upload, self.deps.settings.upload_part_bytes)
            counted = _Counter()
            rows = self._guarded_rows(counted, temp_files=engine == XlsxEngine.OPENPYXL)
            try:
                XLSX_WRITERS[engine](self.columns, rows, sink)
            except xlsx_engine.ArchiveTooLarge as error:
                raise ExportFailed(
                    f"the workbook would pass 2 GiB, more than spreadsheet programs open ({counted.rows} rows "
                    "written); export CSV or csv.gz, or narrow the filters",
                    code=XLSX_TOO_LARGE,
                ) from error
            return self._finish(upload, sink, counted.rows)
        except BaseException:
            self._discard(upload)
            raise

    def _guarded_rows(self, counted: _Counter, temp_files: bool) -> Iterator[Row]:
        """The rows, stopping with XLSX_TOO_LARGE when the rest would not fit in the time left
        or, for an engine writing ``temp_files``, in /tmp (and their zipping in the time)."""
        temp_dir = tempfile.gettempdir()
        used_at_start = shutil.disk_usage(temp_dir).used if temp_files else 0
        for page in self.export_type.stream(self.filters, None, self.control):
            yield from page.rows
            counted.rows += len(page.rows)
            self.tracker.update(counted.rows, page.fraction)
            save_sec = 0.0
            if temp_files:
                disk = shutil.disk_usage(temp_dir)
                if disk.free < XlsxLimits.TMP_RESERVE_BYTES:
                    raise ExportFailed(
                        f"the workbook does not fit in the worker's temporary disk ({disk.free // 2**20} MiB left "
                        f"after {counted.rows} rows); export CSV or csv.gz, or narrow the filters",
                        code=XLSX_TOO_LARGE,
                    )
                save_sec = max(0, disk.used - used_at_start) / XlsxLimits.SAVE_BYTES_PER_SEC
            if self.budget.below(XlsxLimits.TIME_MARGIN_SEC + save_sec):
                raise ExportFailed(
                    f"the workbook cannot be finished in one worker run ({counted.rows} rows written); "
                    "export CSV or csv.gz, or narrow the filters",
                    code=XLSX_TOO_LARGE,
                )

    # Shared ---------------------------------------------------------------------------------

    def _open_upload(self, checkpoint: ExportCheckpoint | None) -> ResumableUpload | MultipartUpload:
        if checkpoint is not None and self.files is not None:
            parts = [(part.number, part.etag) for part in checkpoint.parts]
            return self.files.resume_upload(self.target.key, checkpoint.upload_id, parts)
        metadata = {
            "task-id": self.task.task_id,
            "export-type": self.export_type.name,
            "format": self.task.format.value,
        }
        return self.deps.results.start_upload(
            self.target.key, self.target.content_type, self.target.file_name, metadata
        )

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
            remove_result(self.target.key, self.deps)
            raise
        if self.files is not None:
            with contextlib.suppress(ExportsError):
                # Left behind, it is removed with the result files by the bucket's expiry rule.
                self.files.delete_checkpoint(self.target.checkpoint_key)
        return ExportResult(
            key=self.target.key,
            bytes=sink.bytes_written,
            rows=rows,
            sha256=sha256,
            content_type=self.target.content_type,
            file_name=self.target.file_name,
        )

    def _discard(self, upload: MultipartUpload) -> None:
        """Nothing partial may stay behind (S3 keeps, and bills, the parts of an upload until it is
        aborted); an abort that keeps failing is left to the bucket's lifecycle rule."""
        if not self.completed:
            try:
                retry_transient(upload.abort)
            except ExportsError:
                logger.warning("could not abort the upload; the bucket's lifecycle rule will", exc_info=True)
        self._delete_checkpoint()

    def _delete_checkpoint(self) -> None:
        if self.files is not None:
            with contextlib.suppress(ExportsError):
                self.files.delete_checkpoint(self.target.checkpoint_key)


class _Counter:
    rows = 0


def _sink_state(checkpoint: ExportCheckpoint, tail: bytes) -> SinkState:
    return SinkState(
        bytes_written=checkpoint.bytes,
        parts_sent=len(checkpoint.parts),
        sha256=Sha256State.from_json(checkpoint.sha256),
        tail=tail,
    )


def remove_result(key: str, deps: Dependencies) -> None:
    """Delete a result file that must not outlive its attempt, again on transient faults; one
    that stays anyway is logged and left to the bucket's expiry rule."""
    try:
        retry_transient(lambda: deps.results.delete(key))
    except ExportsError:
        logger.error("could not delete a result file its task does not own", extra={"key": key}, exc_info=True)


def continue_later(task: Task, rows: int, percent: int, deps: Dependencies) -> None:
    """Hand the RUNNING ``task`` to a new invocation: queue it (delayed a little), then make it
    PENDING again with its rows so far, spending no retry. :class:`LostOwnership` if the task
    changed meanwhile (then the queued message finds it not claimable and is dropped)."""
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority),
        delay_sec=LongExports.HANDOVER_DELAY_SEC,
    )
    now = deps.clock()
    current = record_progress(task, rows, percent, now, deps.settings.lease)
    try:
        deps.tasks.update(task, suspend(current))
    except ConditionFailed as error:
        raise LostOwnership(f"task {task.task_id} is no longer ours") from error
    deps.metrics.add(Metric.CONTINUED)
