"""CSV: rows in one upload, continued from a checkpoint in a new invocation when long, written by
PostgreSQL's COPY when it can write them byte-equal (docs/formats.md), split by the fan-out into
one segment per partition with no glue (exports.running.writers.partitioned)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from exports.core.config.worker import Worker
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.errors import ExportFailed
from exports.core.export_type import Column, CsvRows, Cursor, Row
from exports.core.ports import ResultUpload
from exports.core.task import ExportFormat, Task
from exports.running.formats.lines import LineWriter, RowStream
from exports.running.formats.run import ExportRun
from exports.running.formats.spec import FormatSpec
from exports.running.formats.split import FileLayout, FirstRows, PartitionResult, PartitionWrite
from exports.running.writers import csv_writer
from exports.running.writers.byte_sink import ByteStream
from exports.running.writers.partitioned_csv import csv_glue, write_csv_partition
from exports.running.writers.segment_upload import SegmentSink, part_numbers
from exports.running.writers.zones import ZoneStyle, csv_text

# A value the task's CSV encoding cannot hold (csv_dialect.unencodable = "fail", the default).
CSV_UNENCODABLE: Final = "CSV_UNENCODABLE"


def csv_stream(run: ExportRun, out: ByteStream, fresh: bool) -> RowStream:
    """The task's CSV rows into ``out`` in its dialect: the BOM (if asked) and the header only at
    the file's start."""
    task = run.task
    return csv_writer.csv_stream(
        run.columns,
        out,
        task.csv_dialect,
        bom=task.csv_bom and fresh,
        header=fresh,
        formula_guard=task.csv_formula_guard,
    )


def copied_rows(run: ExportRun, cursor: Cursor | None) -> CsvRows | None:
    """The CSV rows the source writes itself (PostgreSQL's COPY), byte-equal to the writer's:
    only in the default dialect, the one COPY writes."""
    task = run.task
    if not task.csv_dialect.is_default:
        return None
    return run.export_type.csv_rows(run.filters, cursor, run.control, task.csv_formula_guard, task.timezone)


def unencodable(error: Exception, rows: int) -> ExportFailed | None:
    """The export's error for a value the task's encoding cannot hold (``rows``: the data rows
    before the page it is in)."""
    if not isinstance(error, csv_writer.UnencodableValue):
        return None
    return ExportFailed(error.message(rows), code=CSV_UNENCODABLE)


def content_type(task: Task) -> str:
    """``text/csv`` with the charset of the task's encoding."""
    return f"text/csv; charset={task.csv_dialect.charset}"


def upload_csv_partition(
    upload: ResultUpload,
    columns: Sequence[Column],
    partition: int,
    partitions: int,
    pages: Iterable[Sequence[Row]],
    gzip: bool = False,
    bom: bool = False,
    formula_guard: bool = True,
    dialect: CsvDialect = DEFAULT_DIALECT,
    part_bytes: int = Worker.UPLOAD_PART_BYTES,
    before_part: Callable[[], None] | None = None,
) -> PartitionResult:
    """Write and upload partition ``partition`` (of ``partitions``) of a CSV or csv.gz file:
    one segment, in the partition's range of part numbers."""
    sink = SegmentSink(upload, part_numbers(partition, partitions), part_bytes, before_part)
    try:
        rows = write_csv_partition(
            columns, pages, sink, partition, gzip=gzip, bom=bom, formula_guard=formula_guard, dialect=dialect
        )
    except csv_writer.UnencodableValue as error:
        raise ExportFailed(f"partition {partition + 1}: {error}", code=CSV_UNENCODABLE) from None
    return PartitionResult(rows, (sink.finish(),))


class CsvSplit:
    """A CSV (``gzip``: csv.gz) file in partitions: segment 0 has the header, the glue is empty."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip

    def plan(self, first_rows: Callable[[], FirstRows], partition_rows: Sequence[int]) -> FileLayout:
        """Nothing to plan: a segment needs neither widths nor counts."""
        return FileLayout()

    def write_partition(self, part: PartitionWrite) -> PartitionResult:
        """One segment of the partition's rows."""
        return upload_csv_partition(
            part.upload,
            part.columns,
            part.partition,
            part.partitions,
            part.pages,
            gzip=self._gzip,
            bom=part.task.csv_bom,
            formula_guard=part.task.csv_formula_guard,
            dialect=part.task.csv_dialect,
            part_bytes=part.part_bytes,
            before_part=part.before_part,
        )

    def glue(self, layout: FileLayout, results: Sequence[PartitionResult]) -> list[bytes]:
        """Nothing between the segments."""
        return csv_glue(sum(len(result.segments) for result in results))


def csv_format(gzip: bool) -> FormatSpec:
    """CSV, or (``gzip``) csv.gz: one gzip member, or one per partition of a split file."""
    return FormatSpec(
        format=ExportFormat.CSV_GZ if gzip else ExportFormat.CSV,
        extension="csv.gz" if gzip else "csv",
        content_type=csv_writer.GZIP_CONTENT_TYPE if gzip else csv_writer.CONTENT_TYPE,
        write=LineWriter(csv_stream, gzip=gzip, source_rows=copied_rows, refused=unencodable),
        zone_style=ZoneStyle(csv_text),
        resumable=True,
        split=CsvSplit(gzip),
        task_content_type=None if gzip else content_type,
    )


SPEC = csv_format(gzip=False)
