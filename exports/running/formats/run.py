"""What a format's writer works with: one invocation's share of one export (:class:`ExportRun`),
its time (:class:`RunBudget`, :class:`TaskRunControl`) and progress (:class:`PageProgress`), the
rows of a file that must be written in one run (:func:`rows_in_one_run`), and the value a run
that continues in a new invocation returns (:class:`HandedOver`).

:func:`exports.running.export_run.run_export` builds the run; the format's
:attr:`~exports.running.formats.spec.FormatSpec.write` streams the type's pages from it into its upload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

from exports.core.errors import ExportFailed, LostOwnership
from exports.core.export_type import AnyExportType, Column, Cursor, Page, Row
from exports.core.ports import RemainingMs, ResultUpload
from exports.core.task import ExportResult, Task
from exports.running.attempt_files import AttemptFiles, ResultTarget
from exports.running.checkpoint import ExportCheckpoint
from exports.running.dependencies import WorkerDependencies
from exports.running.long_exports import Checkpoints
from exports.running.progress import ProgressReporter
from exports.running.writers.part_sender import PartsInBackground
from exports.running.writers.sink import MultipartSink
from exports.running.writers.zones import ZonedExport

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class HandedOver:
    """The export saved a checkpoint after ``rows`` rows and its task waits, queued, for a new
    invocation (the upload stays open for it)."""

    rows: int


class RunBudget:
    """The invocation's remaining time (unbounded when the caller gave none: tests, benchmarks)."""

    def __init__(self, remaining_ms: RemainingMs | None) -> None:
        self._remaining_ms = remaining_ms

    def seconds_left(self) -> float | None:
        """Seconds until the invocation ends, or None when unbounded."""
        return None if self._remaining_ms is None else self._remaining_ms() / 1000

    def below(self, seconds: float) -> bool:
        """Whether less than ``seconds`` are left (never, when unbounded)."""
        left = self.seconds_left()
        return left is not None and left < seconds


class TaskRunControl:
    """:class:`~exports.core.export_type.RunControl` of one run: the time left is the
    invocation's or the task's deadline's, whichever ends first; asking whether to stop is a
    progress write (at most every progress interval), which renews the lease of a run that waits
    long on its source and finds out when the task was cancelled or timed out."""

    def __init__(self, task: Task, budget: RunBudget, progress: ProgressReporter, deps: WorkerDependencies) -> None:
        self._task = task
        self._budget = budget
        self._progress = progress
        self._deps = deps

    @property
    def task_id(self) -> str:
        """The task the run writes."""
        return self._task.task_id

    def seconds_left(self) -> float | None:
        """Seconds until the invocation or the task's deadline ends, whichever is first."""
        to_deadline = (self._task.deadline - self._deps.clock()).total_seconds()
        left = self._budget.seconds_left()
        return to_deadline if left is None else min(left, to_deadline)

    def stop_requested(self) -> bool:
        """Whether the task is past its deadline, cancelled or taken over (a progress write finds out)."""
        if self._deps.clock() >= self._task.deadline:
            return True
        try:
            self._progress.flush_if_due()
        except LostOwnership:
            return True
        return False


class PageProgress:
    """Progress per page: rows against the expected count when known, else the source's own
    fraction, else rows against an estimate. :class:`ProgressReporter` writes at most every
    ``progress_interval_sec``."""

    def __init__(self, reporter: ProgressReporter, expected_rows: int | None, estimated_rows: int | None) -> None:
        self._reporter = reporter
        self.expected = expected_rows
        self._estimated = estimated_rows
        self.percent = 0

    def update(self, rows: int, fraction: float | None) -> None:
        """``rows`` are written (``fraction``: the source's own measure of the work done)."""
        if self.expected:
            fraction = rows / self.expected
        elif fraction is None and self._estimated:
            fraction = rows / self._estimated
        if fraction is not None:
            fraction = min(max(fraction, 0.0), 1.0)
            self.percent = int(fraction * 100)
            self._reporter.on_fraction(fraction)
        self._reporter.on_row(rows)


class RowCount:
    """Rows handed to the file's writer so far."""

    rows = 0


def rows_in_one_run(
    pages: Iterable[Page],
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> Iterator[Row]:
    """The rows of a file written in one worker run (PDF, Parquet: neither can go on in a new
    invocation), counted; ``on_page(rows, fraction)`` after each page. Raises
    ``out_of_time(rows)`` when less than ``margin_sec`` is left of the run, while there is still
    time to finish the file and abort cleanly."""
    for page in pages:
        yield from page.rows
        _passed(len(page.rows), page.fraction, counted, on_page, budget, margin_sec, out_of_time)


def batches_in_one_run(
    batches: Iterable[pa.RecordBatch],
    counted: RowCount,
    on_batch: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> Iterator[pa.RecordBatch]:
    """:func:`rows_in_one_run` of Arrow record batches (a batch counts as a page)."""
    for batch in batches:
        yield batch
        _passed(batch.num_rows, None, counted, on_batch, budget, margin_sec, out_of_time)


def _passed(
    rows: int,
    fraction: float | None,
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> None:
    """Count a page's ``rows`` and report them; raise ``out_of_time`` when the run's time is short."""
    counted.rows += rows
    on_page(counted.rows, fraction)
    if budget.below(margin_sec):
        raise out_of_time(counted.rows)


@dataclass
class ExportRun:
    """One invocation's share of one export: what the format's writer streams from and into.
    ``resumed``: the checkpoint it goes on from and its unsent bytes."""

    task: Task
    export_type: AnyExportType
    filters: BaseModel
    # The file's columns (in the task's zone) and how the zone changes the rows.
    columns: list[Column]
    zoned: ZonedExport
    target: ResultTarget
    # The upload's metadata (and so the file's).
    metadata: dict[str, str]
    attempt: AttemptFiles
    checkpoints: Checkpoints
    resumed: tuple[ExportCheckpoint, bytes] | None
    deps: WorkerDependencies
    budget: RunBudget
    # The run's control for the export type's reads.
    control: TaskRunControl
    tracker: PageProgress
    progress: ProgressReporter

    def pages(self, cursor: Cursor | None) -> Iterator[Page]:
        """The type's pages from ``cursor``, their instants in the task's zone."""
        return self.zoned.pages(self.columns, self.export_type.stream(self.filters, cursor, self.control))

    def open_upload(self, checkpoint: ExportCheckpoint | None) -> ResultUpload:
        """The file's upload: picked up where ``checkpoint`` left it, or started; its parts
        sent while the writer goes on (:class:`PartsInBackground`)."""
        if checkpoint is None:
            return PartsInBackground(self.attempt.start(self.target, self.metadata))
        parts = [(part.number, part.etag) for part in checkpoint.parts]
        return PartsInBackground(self.attempt.resume(self.target.key, checkpoint.upload_id, parts))

    def finish(self, upload: ResultUpload, sink: MultipartSink, rows: int) -> ExportResult:
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
