"""Parquet: a file of typed columns written a row group at a time. Not split (docs/fan-out.md,
"Formats that do not split"): its footer lists every row group of the file. Like a workbook it
cannot continue in a new invocation (pyarrow's writer cannot be saved and resumed), so it ends
with ``PARQUET_TOO_LARGE`` while there is still time to abort cleanly; a value its column's type
cannot hold ends it with ``PARQUET_VALUE_INVALID``."""

from __future__ import annotations

from typing import Final

from exports.domain.errors import ExportFailed
from exports.domain.task import ExportFormat, ExportResult
from exports.formats.run import ExportRun, RowCount, batches_in_one_run, rows_in_one_run
from exports.formats.spec import FormatSpec
from exports.writers import parquet_arrow, parquet_writer
from exports.writers.parquet_writer import ParquetValueInvalid
from exports.writers.sink import MultipartSink
from exports.writers.zones import ZoneStyle

PARQUET_TOO_LARGE: Final = "PARQUET_TOO_LARGE"
PARQUET_VALUE_INVALID: Final = "PARQUET_VALUE_INVALID"
# Stop when less than this is left: the last row group and the footer are written in it.
TIME_MARGIN_SEC: Final = 30


def out_of_time(rows: int) -> ExportFailed:
    """The error of a Parquet file that cannot be finished in the worker run after ``rows`` rows."""
    return ExportFailed(
        f"the Parquet file cannot be finished in one worker run ({rows} rows written); "
        "export jsonl.gz or csv.gz (they continue in a new run), or narrow the filters",
        code=PARQUET_TOO_LARGE,
    )


def value_invalid(error: ParquetValueInvalid, rows: int) -> ExportFailed:
    """The error of a value no Parquet column of its type holds, and what to do."""
    return ExportFailed(
        f"{error} (after about {rows} rows); cast the column in the query (e.g. to text), "
        "or export jsonl or csv, which write every value",
        code=PARQUET_VALUE_INVALID,
    )


def write_parquet(run: ExportRun) -> ExportResult:
    """Stream a Parquet file, a row group at a time; stop with PARQUET_TOO_LARGE before the time
    runs out (it cannot continue in a new invocation)."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        counted = RowCount()
        guard = (counted, run.tracker.update, run.budget, TIME_MARGIN_SEC, out_of_time)
        # Arrow-native when the source reads so (a PostgreSQL query through ADBC): the same file.
        batches = run.export_type.arrow_batches(run.filters, run.columns, run.control)
        try:
            if batches is not None:
                parquet_arrow.write_parquet_batches(run.columns, batches_in_one_run(batches, *guard), sink)
            else:
                parquet_writer.write_parquet_stream(run.columns, rows_in_one_run(run.pages(None), *guard), sink)
        except ParquetValueInvalid as error:
            raise value_invalid(error, counted.rows) from None
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        run.attempt.discard(upload)
        raise


SPEC = FormatSpec(
    format=ExportFormat.PARQUET,
    extension="parquet",
    content_type=parquet_writer.CONTENT_TYPE,
    write=write_parquet,
    # The values stay UTC instants: the column's type (timestamp(us, tz=<zone>)) has the zone;
    # a date-time without zone is a timestamp(us) with none (a wall time, not an instant).
    zone_style=ZoneStyle(None, types_wall_times=True),
)
