"""The writer of the formats whose rows follow one another (CSV, JSON Lines), gzipped or not: they
continue in a new invocation from a checkpoint (docs/performance.md, "Exports longer than one
Lambda run").

The file streams into a :class:`MultipartSink` (through gzip for ``.gz``), continuing from the
run's checkpoint if there is one, and hands over at a page boundary when the invocation runs
short of time (:data:`~exports.running.long_exports.CHECKPOINT_MARGIN_SEC`). A format module
gives :class:`LineWriter` what differs: its row stream, the rows its source may write itself
(PostgreSQL's COPY, CSV only), and the errors of values it refuses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from exports.core.errors import ExportFailed
from exports.core.export_type import CsvRows, Cursor, Row
from exports.core.ports import ResultUpload
from exports.core.task import ExportResult
from exports.running.attempt_files import ResultTarget
from exports.running.formats.run import ExportRun, HandedOver
from exports.running.long_exports import CHECKPOINT_MARGIN_SEC, continue_later, sink_state
from exports.running.writers.byte_sink import ByteSink, ByteStream
from exports.running.writers.gzip_stream import GzipState, GzipStream
from exports.running.writers.sink import MultipartSink

logger = logging.getLogger(__name__)


class RowStream(Protocol):
    """A format's rows written into a byte stream as they come."""

    def write_rows(self, rows: Sequence[Row]) -> None:
        """Write ``rows`` (buffered)."""

    def flush(self) -> None:
        """Write what is buffered into the byte stream."""

    def detach(self) -> None:
        """Flush, then let go of the byte stream without closing it."""


def no_source_rows(_run: ExportRun, _cursor: Cursor | None) -> CsvRows | None:
    """A format whose rows no source writes itself."""
    return None


def nothing_refused(_error: Exception, _rows: int) -> ExportFailed | None:
    """A format that writes every value."""
    return None


@dataclass(frozen=True)
class LineWriter:
    """Writes one run of a line format: ``stream(run, out, fresh)`` makes its row stream (``fresh``:
    the file starts here, not from a checkpoint); ``source_rows(run, cursor)`` the rows the
    source writes itself, byte-equal to the stream's, or None; ``refused(error, rows)`` the
    export's error for a writer's error, or None (it goes on as it is)."""

    stream: Callable[[ExportRun, ByteStream, bool], RowStream]
    gzip: bool = False
    source_rows: Callable[[ExportRun, Cursor | None], CsvRows | None] = no_source_rows
    refused: Callable[[Exception, int], ExportFailed | None] = nothing_refused

    def __call__(self, run: ExportRun) -> ExportResult | HandedOver:
        """Write the run's file, or hand it over to a new invocation."""
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
            if self.gzip:
                state = GzipState.from_json(checkpoint.gzip) if checkpoint and checkpoint.gzip else None
                gzip = GzipStream(sink, state=state)
                out = gzip
            stream = self.stream(run, out, checkpoint is None)
            cursor = checkpoint.cursor if checkpoint else None
            copied = self.source_rows(run, cursor)
            if copied is not None:
                stream.flush()
                copy = _copy_rows(run, copied, out, upload, sink, gzip, rows)
                if isinstance(copy, HandedOver):
                    return copy
                rows = copy
            for page in run.pages(cursor) if copied is None else ():
                stream.write_rows(page.rows)
                rows += len(page.rows)
                run.tracker.update(rows, page.fraction)
                if run.budget.below(CHECKPOINT_MARGIN_SEC):
                    stream.flush()
                    return _hand_over(run, upload, sink, gzip, page.cursor, rows)
            stream.detach()
            if gzip is not None:
                gzip.finish()
            return run.finish(upload, sink, rows)
        except BaseException as error:
            run.attempt.discard(upload)
            refused = self.refused(error, rows) if isinstance(error, Exception) else None
            if refused is not None:
                raise refused from None
            raise


def _copy_rows(
    run: ExportRun,
    copied: CsvRows,
    out: ByteSink,
    upload: ResultUpload,
    sink: MultipartSink,
    gzip: GzipStream | None,
    before: int,
) -> int | HandedOver:
    """The source's own rows (COPY) after the header: the rows in the file, or the hand-over
    when the invocation runs short of time."""
    try:
        for chunk in copied.chunks():
            out.write(chunk)
            run.tracker.update(before + copied.rows, None)
            if run.budget.below(CHECKPOINT_MARGIN_SEC):
                return _hand_over(run, upload, sink, gzip, copied.checkpoint(), before + copied.rows)
        return before + copied.rows
    finally:
        copied.close()


def _hand_over(
    run: ExportRun, upload: ResultUpload, sink: MultipartSink, gzip: GzipStream | None, cursor: Cursor | None, rows: int
) -> HandedOver:
    """Save a checkpoint and queue the task for a new invocation."""
    checkpoint = run.checkpoints.save(
        run.export_type.name, run.target.key, upload, sink, gzip, cursor, rows, run.tracker.expected
    )
    continue_later(run.progress.task, rows, run.tracker.percent, run.deps)
    logger.info(
        "export continues in a new invocation",
        extra={"rows": rows, "parts": len(checkpoint.parts), "continuation": run.task.continuations + 1},
    )
    return HandedOver(rows)
