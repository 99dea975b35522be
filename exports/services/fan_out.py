"""One export's partitions uploaded in parallel as the parts of one multipart upload, then
assembled into one object: what each partition's worker and the assembler run (the bytes are
:mod:`exports.writers.partitioned`'s, the part numbers and sizes
:mod:`exports.writers.segment_upload`'s; docs/fan-out.md has the design).

sha256: SHA-256 cannot be combined from pieces (each block's state depends on every byte
before it) and the partitions' bytes reach S3 in any order, so no worker sees the file in
order. The assembler reads the completed object back once, in order, and hashes it (the same
:func:`~exports.writers.resumable_sha256.new_sha256` as the single worker: its state can be
saved, so a file too long to hash in one run could go on in the next). Reading back costs one
GET of the file (free inside the region; about 1 s per 100-200 MB in a Lambda function) and
checks, on the way, that the object has exactly the bytes the partitions and the glue made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol, cast

from exports.config import Worker
from exports.export_types.base import Column, Row
from exports.ports import NumberedParts
from exports.writers.partitioned import DeflatedPiece, XlsxLayout, write_csv_partition, write_xlsx_partition
from exports.writers.resumable_sha256 import new_sha256
from exports.writers.segment_upload import SegmentSink, SegmentUpload, joins, part_numbers


class AssemblyUpload(NumberedParts, Protocol):
    """The upload as the assembler sees it: it knows every part the partitions sent."""

    def complete(self) -> None:
        """Make the object visible from every part sent, in the order of their numbers."""


@dataclass(frozen=True)
class PartitionResult:
    """What one partition hands to the assembler: its rows, its segments as uploaded and, for
    XLSX, its pieces' CRC-32s and lengths (one per segment)."""

    rows: int
    segments: tuple[SegmentUpload, ...]
    pieces: tuple[DeflatedPiece, ...] = ()


@dataclass(frozen=True)
class AssembledFile:
    """The completed object: its length and sha256 (read back from it)."""

    bytes: int
    sha256: str


def upload_csv_partition(
    upload: NumberedParts,
    columns: Sequence[Column],
    partition: int,
    partitions: int,
    pages: Iterable[Sequence[Row]],
    gzip: bool = False,
    bom: bool = False,
    formula_guard: bool = True,
    part_bytes: int = Worker.UPLOAD_PART_BYTES,
    before_part: Callable[[], None] | None = None,
) -> PartitionResult:
    """Write and upload partition ``partition`` (of ``partitions``) of a CSV or csv.gz file:
    one segment, in the partition's range of part numbers."""
    sink = SegmentSink(upload, part_numbers(partition, partitions), part_bytes, before_part)
    rows = write_csv_partition(
        columns, pages, cast(BinaryIO, sink), partition, gzip=gzip, bom=bom, formula_guard=formula_guard
    )
    return PartitionResult(rows, (sink.finish(),))


def upload_xlsx_partition(
    upload: NumberedParts,
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
    written = write_xlsx_partition(layout, partition, pages, [cast(BinaryIO, sink) for sink in sinks])
    rows = sum(layout.pieces[place].rows for place in places)
    return PartitionResult(rows, tuple(sink.finish() for sink in sinks), tuple(written))


def assemble(
    upload: AssemblyUpload,
    glue: Sequence[bytes],
    segments: Sequence[SegmentUpload],
    read_back: Callable[[], Iterable[bytes]],
) -> AssembledFile:
    """Upload the joins between the segments' interior parts (``glue`` around the segments, in
    file order), complete the upload, and hash the object as ``read_back`` streams it. An object
    of another length than its parts' raises ``ValueError``."""
    for number, data in joins(glue, segments):
        upload.upload_part_number(number, data)
    upload.complete()
    sha256 = new_sha256()
    size = 0
    for chunk in read_back():
        sha256.update(chunk)
        size += len(chunk)
    expected = sum(map(len, glue)) + sum(segment.bytes for segment in segments)
    if size != expected:
        raise ValueError(f"the object has {size} bytes, its parts {expected}")
    return AssembledFile(size, sha256.hexdigest())
