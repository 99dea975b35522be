"""Parquet: a file of typed columns written a row group at a time in one worker run and stopped
in time (:mod:`exports.services.parquet_guards`). Not split (docs/fan-out.md, "Formats that do
not split"): its footer lists every row group of the file."""

from __future__ import annotations

from exports.domain.task import ExportFormat, ExportResult
from exports.formats.run import ExportRun
from exports.formats.spec import FormatSpec
from exports.services import parquet_guards
from exports.services.one_run import rows_in_one_run
from exports.services.xlsx_guards import RowCount
from exports.writers import parquet_writer
from exports.writers.sink import MultipartSink
from exports.writers.zones import ZoneStyle


def write_parquet(run: ExportRun) -> ExportResult:
    """Stream a Parquet file, a row group at a time; stop with PARQUET_TOO_LARGE before the time
    runs out (it cannot continue in a new invocation)."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        counted = RowCount()
        pages = run.pages(None)
        rows = rows_in_one_run(
            pages, counted, run.tracker.update, run.budget, parquet_guards.TIME_MARGIN_SEC, parquet_guards.out_of_time
        )
        try:
            parquet_writer.write_parquet_stream(run.columns, rows, sink)
        except parquet_writer.ParquetValueInvalid as error:
            raise parquet_guards.value_invalid(error, counted.rows) from None
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        run.attempt.discard(upload)
        raise


SPEC = FormatSpec(
    format=ExportFormat.PARQUET,
    extension="parquet",
    content_type=parquet_writer.CONTENT_TYPE,
    write=write_parquet,
    # The values stay UTC instants: the column's type (timestamp(us, tz=<zone>)) has the zone.
    zone_style=ZoneStyle(None),
)
