"""One export written by several workers at once: each partition of its rows becomes a run of
bytes of the one file, and the assembler writes what goes between them.

A file of ``n`` partitions is laid out as ``glue[0] segment[0] glue[1] ... segment[m-1]
glue[m]``: the segments are written in parallel, by the partitions, from rows; the glue is
written by the assembler once every segment is known. Nothing is written twice, and a
segment's bytes depend only on its own rows and the plan (never on another segment's bytes).

- CSV: one segment per partition; the header (and the BOM) only in partition 0. The glue is
  empty: the segments concatenate into the single worker's file, byte for byte.
- csv.gz: each partition's segment is a complete gzip member (RFC 1952 allows several: a
  reader inflates them one after the other); decompressed, the file is the CSV above.
- XLSX: a segment is a *piece*, the rows of one partition that fall in one sheet (a partition
  spanning a sheet boundary writes two pieces, one after the other). Each piece raw-deflates
  its part of the sheet's XML as an independent segment of the sheet's deflate stream (its own
  compressor, ending on a byte boundary with a sync flush; only the sheet's last piece has the
  final block), as pigz does, and reports the CRC-32 and length of its XML. The glue is the zip
  structure (:class:`~exports.writers.xlsx_engine.zip_stream.ZipStream`, fed the segments'
  sizes with ``add_deflated``): the entries before the sheets, each sheet's local header and,
  after its last piece, its data descriptor (the CRC-32s combined), and at the end the workbook
  parts and the central directory.

Row numbers: an XLSX piece must know where its rows fall: its sheet, its first row in the
sheet (the ``r=`` of every row and cell, as the single worker writes them) and the row count of
its sheet (the autofilter's range in the sheet's tail and in the workbook's defined names). So
an XLSX plan needs each partition's row count before any partition writes
(:func:`plan_sheets`): a keyset plan gets them from its boundary query (a boundary every
``k`` rows), a date-range plan from a count per range. Rows without ``r=`` would not be enough:
where a sheet ends still depends on the rows before it. With the counts known, every sheet's
XML is exactly the single worker's, only deflated in pieces; a partition whose row count turns
out different (the data changed after planning) raises instead of writing a wrong file. CSV
needs no counts. The column widths, fitted to the export's first rows by the single worker, are
part of the plan (measured once on the first rows of partition 0).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from exports.export_types.base import Column, Row
from exports.writers.byte_sink import ByteSink, ByteStream
from exports.writers.csv_writer import CsvStream
from exports.writers.deflate import DeflateLevel, RawDeflate
from exports.writers.gzip_stream import GzipStream
from exports.writers.xlsx_engine import parts
from exports.writers.xlsx_engine.rows import header_row, rows_encoder
from exports.writers.xlsx_engine.workbook import (
    MAX_DATA_ROWS_PER_SHEET,
    ZIP_LEVEL,
    finish_package,
    sheet_name,
    sheet_start,
    start_package,
)
from exports.writers.xlsx_engine.zip_stream import ZipStream

# CSV ---------------------------------------------------------------------------------------------


def write_csv_partition(
    columns: Sequence[Column],
    pages: Iterable[Sequence[Row]],
    out: ByteStream,
    partition: int,
    gzip: bool = False,
    bom: bool = False,
    formula_guard: bool = True,
) -> int:
    """Write partition ``partition``'s rows (``pages``) into ``out`` as its segment of a CSV
    file (the header, and the BOM if ``bom``, only in partition 0), or with ``gzip`` as a
    complete gzip member of a csv.gz file. Returns the number of rows."""
    member = GzipStream(out) if gzip else None
    first = partition == 0
    stream = CsvStream(
        columns,
        member if member is not None else out,
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


# XLSX: the plan ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SheetPiece:
    """The rows of one partition that fall in one sheet."""

    partition: int
    # 1-based, as the sheets' part names.
    sheet: int
    # The sheet's data rows before this piece's first (its rows are numbered from
    # ``first_row + 2``: row 1 is the header).
    first_row: int
    rows: int
    # The data rows of the whole sheet.
    sheet_rows: int

    @property
    def opens(self) -> bool:
        """Whether this piece starts its sheet (it writes the sheet's head and header row)."""
        return self.first_row == 0

    @property
    def closes(self) -> bool:
        """Whether this piece ends its sheet (its tail, and the deflate stream's final block)."""
        return self.first_row + self.rows == self.sheet_rows


def plan_sheets(partition_rows: Sequence[int], max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET) -> list[SheetPiece]:
    """The pieces of a workbook whose partitions have ``partition_rows`` rows, in file order:
    sheets of ``max_rows_per_sheet`` data rows (the last one less) cut across the partitions
    wherever they fall. A partition without rows has no piece; an export without rows is one
    empty sheet, in partition 0."""
    if max_rows_per_sheet < 1:
        raise ValueError("a sheet holds at least one data row")
    if not partition_rows or any(rows < 0 for rows in partition_rows):
        raise ValueError("a plan has at least one partition, none of fewer than 0 rows")
    total = sum(partition_rows)
    if total == 0:
        return [SheetPiece(partition=0, sheet=1, first_row=0, rows=0, sheet_rows=0)]
    pieces = []
    start = 0  # the partition's first row in the export
    for partition, rows in enumerate(partition_rows):
        row, end = start, start + rows
        while row < end:
            sheet, first_row = divmod(row, max_rows_per_sheet)
            sheet_rows = min(max_rows_per_sheet, total - sheet * max_rows_per_sheet)
            taken = min(end - row, sheet_rows - first_row)
            pieces.append(SheetPiece(partition, sheet + 1, first_row, taken, sheet_rows))
            row += taken
        start = end
    return pieces


@dataclass(frozen=True)
class XlsxLayout:
    """What every partition of one workbook and its assembler share."""

    columns: Sequence[Column]
    # The column widths (cells.fitted_widths of the export's first rows, as the single worker).
    widths: Sequence[int]
    pieces: Sequence[SheetPiece]
    sheet_title: str = "Export"
    level: DeflateLevel = ZIP_LEVEL

    def pieces_of(self, partition: int) -> list[SheetPiece]:
        """The pieces partition ``partition`` writes, in order."""
        return [piece for piece in self.pieces if piece.partition == partition]


# XLSX: a partition -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeflatedPiece:
    """A piece as written: the CRC-32 and length of its XML, and of its deflate segment."""

    crc32: int
    size: int
    compressed: int


class XlsxPieceStream:
    """One piece's XML, deflated into ``out`` as rows come (:meth:`write_rows`); :meth:`close`
    ends the segment and tells what the assembler needs."""

    def __init__(self, layout: XlsxLayout, piece: SheetPiece, out: ByteSink) -> None:
        self._layout = layout
        self._piece = piece
        self._out = out
        self._deflate = RawDeflate(layout.level)
        self._encode = rows_encoder(layout.columns)
        self._compressed = 0
        self._written = 0
        if piece.opens:
            head_row = header_row(layout.columns).encode()
            self._put(sheet_start(layout.columns, piece.sheet, layout.widths, head_row))

    def write_rows(self, rows: Sequence[Row]) -> None:
        """Append ``rows``; more than the piece's rows raise ``ValueError``."""
        if self._written + len(rows) > self._piece.rows:
            raise ValueError(f"partition {self._piece.partition} has more rows than its plan")
        self._put(self._encode(rows, self._piece.first_row + 1 + self._written).encode())
        self._written += len(rows)

    def close(self) -> DeflatedPiece:
        """End the segment: the sheet's tail and the final block if the piece ends its sheet,
        else a sync flush (byte-aligned, no final block). Fewer rows than planned raise
        ``ValueError``."""
        piece = self._piece
        if self._written != piece.rows:
            raise ValueError(f"partition {piece.partition} has fewer rows than its plan")
        if piece.closes:
            self._put(parts.sheet_tail(len(self._layout.columns), piece.sheet_rows).encode())
        self._emit(self._deflate.flush(zlib.Z_FINISH if piece.closes else zlib.Z_SYNC_FLUSH))
        return DeflatedPiece(self._deflate.crc32, self._deflate.size, self._compressed)

    def _put(self, xml: bytes) -> None:
        self._emit(self._deflate.compress(xml))

    def _emit(self, data: bytes) -> None:
        if data:
            self._out.write(data)
            self._compressed += len(data)


def write_xlsx_partition(
    layout: XlsxLayout, partition: int, pages: Iterable[Sequence[Row]], outputs: Sequence[ByteSink]
) -> list[DeflatedPiece]:
    """Write partition ``partition``'s rows (``pages``): its pieces in order, each into its own
    output (``outputs``, one per piece of :meth:`XlsxLayout.pieces_of`). Rows other than the
    plan's count raise ``ValueError``."""
    pieces = layout.pieces_of(partition)
    if len(outputs) != len(pieces):
        raise ValueError(f"partition {partition} writes {len(pieces)} pieces")
    written: list[DeflatedPiece] = []
    if not pieces:
        for page in pages:
            if page:
                raise ValueError(f"partition {partition} has more rows than its plan")
        return written
    index = 0
    stream = XlsxPieceStream(layout, pieces[0], outputs[0])
    left = pieces[0].rows
    for page in pages:
        start = 0
        while start < len(page):
            if left == 0 and index + 1 < len(pieces):
                written.append(stream.close())
                index += 1
                stream = XlsxPieceStream(layout, pieces[index], outputs[index])
                left = pieces[index].rows
            # The last piece takes what is left, so that too many rows raise.
            end = len(page) if index + 1 == len(pieces) else min(len(page), start + left)
            stream.write_rows(page[start:end] if start or end < len(page) else page)
            left -= end - start
            start = end
    written.append(stream.close())
    if len(written) < len(pieces):
        raise ValueError(f"partition {partition} has fewer rows than its plan")
    return written


# XLSX: the assembler -----------------------------------------------------------------------------


class _Glue:
    """Where the assembler's zip stream writes: a new run of bytes at every segment."""

    def __init__(self) -> None:
        self.runs = [io.BytesIO()]

    def write(self, data: bytes) -> int:
        return self.runs[-1].write(data)

    def cut(self) -> None:
        self.runs.append(io.BytesIO())


def xlsx_glue(layout: XlsxLayout, written: Sequence[DeflatedPiece]) -> list[bytes]:
    """The bytes around the pieces (``written``, one per piece of the layout, in order):
    ``len(written) + 1`` runs, the first before piece 0, the last after the last piece. Raises
    :class:`~exports.writers.xlsx_engine.zip_stream.ArchiveTooLarge` past the limits the single
    worker keeps (a sheet's XML under 4 GiB, the file under 2 GiB: no ZIP64, see zip_stream)."""
    if len(written) != len(layout.pieces):
        raise ValueError(f"the layout has {len(layout.pieces)} pieces, {len(written)} were written")
    glue = _Glue()
    archive = ZipStream(glue, layout.level)
    start_package(archive)
    names: list[str] = []
    sheet_rows: list[int] = []
    for piece, segment in zip(layout.pieces, written, strict=True):
        if piece.opens:
            names.append(sheet_name(layout.sheet_title, piece.sheet))
            sheet_rows.append(piece.sheet_rows)
            archive.start(parts.sheet_part(piece.sheet))
        glue.cut()
        archive.add_deflated(segment.crc32, segment.size, segment.compressed)
        if piece.closes:
            archive.end()
    finish_package(archive, names, len(layout.columns), sheet_rows)
    return [run.getvalue() for run in glue.runs]
