"""XLSX: a workbook written in one invocation by the engine the worker's settings choose; split by
the fan-out into sheet pieces deflated apart and joined by the zip structure
(exports.running.writers.partitioned).

What stops it before it runs out of room: a workbook cannot continue in a new invocation, so it
ends with ``XLSX_TOO_LARGE`` while there is still time to abort cleanly, before the openpyxl
engine's temporary files fill /tmp, or when the stream engine's archive would pass the 2 GiB
spreadsheet programs open; a text longer than a cell holds ends it with ``XLSX_CELL_TOO_LONG``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from exports.core.config.settings import XlsxEngine
from exports.core.config.worker import Worker
from exports.core.errors import ExportFailed
from exports.core.export_type import Column, Page, Row
from exports.core.ports import ResultUpload
from exports.core.task import ExportFormat, ExportResult
from exports.running.formats.run import ExportRun, RowCount, RunBudget, batches_in_one_run
from exports.running.formats.spec import FormatSpec
from exports.running.formats.split import FileLayout, FirstRows, PartitionResult, PartitionWrite
from exports.running.writers import xlsx_engine, xlsx_limits, xlsx_writer
from exports.running.writers.cells import CellTooLong, fitted_widths
from exports.running.writers.partitioned_xlsx import XlsxLayout, plan_sheets, write_xlsx_partition, xlsx_glue
from exports.running.writers.segment_upload import SegmentSink, part_numbers
from exports.running.writers.sink import MultipartSink
from exports.running.writers.zones import ZoneStyle, xlsx_value

if TYPE_CHECKING:
    import pyarrow as pa

# WorkerSettings.xlsx_engine -> the writer; both take (columns, rows, out).
XLSX_WRITERS: Mapping[str, Callable[..., int]] = {
    XlsxEngine.STREAM: xlsx_engine.write_xlsx_stream,
    XlsxEngine.OPENPYXL: xlsx_writer.write_xlsx,
}

XLSX_TOO_LARGE = "XLSX_TOO_LARGE"
# A text longer than an XLSX cell holds (the file would have to cut it).
XLSX_CELL_TOO_LONG = "XLSX_CELL_TOO_LONG"


def out_of_time(rows: int) -> ExportFailed:
    """The error of a workbook that cannot be finished in the worker run after ``rows`` rows."""
    return ExportFailed(
        f"the workbook cannot be finished in one worker run ({rows} rows written); "
        "export CSV or csv.gz, or narrow the filters",
        code=XLSX_TOO_LARGE,
    )


def guarded_rows(
    pages: Iterable[Page],
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    temp_files: bool,
) -> Iterator[Row]:
    """The rows of ``pages``, counted; ``on_page(rows, fraction)`` after each page. Stops with
    XLSX_TOO_LARGE when the rest would not fit in the time left or, for an engine writing
    ``temp_files``, in /tmp (and their zipping in the time)."""
    temp_dir = tempfile.gettempdir()
    used_at_start = shutil.disk_usage(temp_dir).used if temp_files else 0
    for page in pages:
        yield from page.rows
        counted.rows += len(page.rows)
        on_page(counted.rows, page.fraction)
        save_sec = 0.0
        if temp_files:
            disk = shutil.disk_usage(temp_dir)
            if disk.free < xlsx_limits.TMP_RESERVE_BYTES:
                raise ExportFailed(
                    f"the workbook does not fit in the worker's temporary disk ({disk.free // 2**20} MiB left "
                    f"after {counted.rows} rows); export CSV or csv.gz, or narrow the filters",
                    code=XLSX_TOO_LARGE,
                )
            save_sec = max(0, disk.used - used_at_start) / xlsx_limits.SAVE_BYTES_PER_SEC
        if budget.below(xlsx_limits.TIME_MARGIN_SEC + save_sec):
            raise out_of_time(counted.rows)


def archive_too_large(rows: int) -> ExportFailed:
    """The error of a workbook that would pass 2 GiB after ``rows`` rows."""
    return ExportFailed(
        f"the workbook would pass 2 GiB, more than spreadsheet programs open ({rows} rows "
        "written); export CSV or csv.gz, or narrow the filters",
        code=XLSX_TOO_LARGE,
    )


def cell_too_long(error: CellTooLong, columns: Sequence[Column], rows: int) -> ExportFailed:
    """The error of a text no XLSX cell holds: which column, which row, and what to do."""
    column = columns[error.column].name if error.column is not None and error.column < len(columns) else "?"
    row = error.row - 1 if error.row is not None else rows
    return ExportFailed(
        f"column {column!r}, row {row:,}: {error}; export CSV or csv.gz, which hold any length",
        code=XLSX_CELL_TOO_LONG,
    )


def write_xlsx(run: ExportRun) -> ExportResult:
    """Stream a workbook; stop with XLSX_TOO_LARGE before the time runs out, or /tmp (openpyxl
    engine), or the 2 GiB a workbook may take (stream engine). The stream engine takes a
    source's Arrow record batches when it reads so (a PostgreSQL query through ADBC) and the
    file's date-times are UTC: the same file, its cells made a column at a time."""
    engine = run.deps.settings.xlsx_engine
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        counted = RowCount()
        batches = _arrow_batches(run) if engine == XlsxEngine.STREAM else None
        try:
            if batches is not None:
                guard = (counted, run.tracker.update, run.budget, xlsx_limits.TIME_MARGIN_SEC, out_of_time)
                xlsx_engine.write_xlsx_batches(run.columns, batches_in_one_run(batches, *guard), sink)
            else:
                temp_files = engine == XlsxEngine.OPENPYXL
                rows = guarded_rows(run.pages(None), counted, run.tracker.update, run.budget, temp_files)
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


def _arrow_batches(run: ExportRun) -> Iterator[pa.RecordBatch] | None:
    """The export's Arrow record batches with their date texts, when its source reads them
    and nothing is shown in another zone (the tuple path turns those values)."""
    if run.zoned.changes or not run.columns:
        return None
    return run.export_type.arrow_batches(run.filters, run.columns, run.control, date_texts=True)


def upload_xlsx_partition(
    upload: ResultUpload,
    layout: XlsxLayout,
    partition: int,
    pages: Iterable[Sequence[Row]],
    part_bytes: int = Worker.UPLOAD_PART_BYTES,
    before_part: Callable[[], None] | None = None,
) -> PartitionResult:
    """Write and upload partition ``partition`` of a workbook: one segment per piece, each in
    the range of part numbers of its place among all the workbook's pieces."""
    places = [index for index, piece in enumerate(layout.pieces) if piece.partition == partition]
    sinks = [SegmentSink(upload, part_numbers(place, len(layout.pieces)), part_bytes, before_part) for place in places]
    written = write_xlsx_partition(layout, partition, pages, sinks)
    rows = sum(layout.pieces[place].rows for place in places)
    return PartitionResult(rows, tuple(sink.finish() for sink in sinks), tuple(written))


class XlsxSplit:
    """A workbook in partitions: the plan fixes the column widths and where the sheets cut."""

    def plan(self, first_rows: Callable[[], FirstRows], partition_rows: Sequence[int]) -> FileLayout:
        """The single worker fits the widths to the export's first rows: so does the plan."""
        first = first_rows()
        return FileLayout(fitted_widths(first.columns, first.rows), plan_sheets(partition_rows))

    def write_partition(self, part: PartitionWrite) -> PartitionResult:
        """The partition's sheet pieces."""
        layout = XlsxLayout(part.columns, part.layout.widths, part.layout.pieces)
        try:
            return upload_xlsx_partition(
                part.upload, layout, part.partition, part.pages, part.part_bytes, part.before_part
            )
        except CellTooLong as error:
            raise cell_too_long(error, layout.columns, 0) from None

    def glue(self, layout: FileLayout, results: Sequence[PartitionResult]) -> list[bytes]:
        """The zip structure around the pieces."""
        pieces = [piece for result in results for piece in result.pieces]
        return xlsx_glue(XlsxLayout([], layout.widths, layout.pieces), pieces)


SPEC = FormatSpec(
    format=ExportFormat.XLSX,
    extension="xlsx",
    content_type=xlsx_engine.CONTENT_TYPE,
    write=write_xlsx,
    # Excel has no zones: the wall time, the header naming the zone.
    zone_style=ZoneStyle(xlsx_value, label=True),
    split=XlsxSplit(),
)
