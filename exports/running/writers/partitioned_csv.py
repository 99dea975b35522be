"""A CSV or csv.gz file written in partitions (the layout: :mod:`exports.running.writers.partitioned`):
one segment per partition, the header and the BOM only in partition 0, a gzip member each for
csv.gz, and no glue."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.export_type import Column, Row
from exports.running.writers.byte_sink import ByteStream
from exports.running.writers.csv_writer import csv_stream
from exports.running.writers.gzip_stream import GzipStream


def write_csv_partition(
    columns: Sequence[Column],
    pages: Iterable[Sequence[Row]],
    out: ByteStream,
    partition: int,
    gzip: bool = False,
    bom: bool = False,
    formula_guard: bool = True,
    dialect: CsvDialect = DEFAULT_DIALECT,
) -> int:
    """Write partition ``partition``'s rows (``pages``) into ``out`` as its segment of a CSV
    file (the header, and the BOM if ``bom``, only in partition 0), or with ``gzip`` as a
    complete gzip member of a csv.gz file. Returns the number of rows."""
    member = GzipStream(out) if gzip else None
    first = partition == 0
    stream = csv_stream(
        columns,
        member if member is not None else out,
        dialect,
        bom=bom and first,
        header=first,
        formula_guard=formula_guard,
    )
    rows = 0
    for page in pages:
        stream.write_rows(page)
        rows += len(page)
    stream.detach()
    if member is not None:
        member.finish()
    return rows


def csv_glue(partitions: int) -> list[bytes]:
    """The glue of a CSV or csv.gz file of ``partitions`` segments: nothing, the segments are the
    whole file."""
    return [b""] * (partitions + 1)
