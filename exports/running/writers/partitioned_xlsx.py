"""An XLSX file written in partitions (the layout: :mod:`exports.running.writers.partitioned`): the plan
of its sheets cut across the partitions, one partition's pieces (independent deflate segments of
their sheets), and the zip structure the assembler writes around them."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from exports.core.export_type import Column, Row
from exports.running.writers.byte_sink import ByteSink
from exports.running.writers.deflate import DeflateLevel, RawDeflate
from exports.running.writers.partitioned import DeflatedPiece, SheetPiece
from exports.running.writers.xlsx_engine import parts
from exports.running.writers.xlsx_engine.rows import header_row, rows_encoder
from exports.running.writers.xlsx_engine.workbook import (
    MAX_DATA_ROWS_PER_SHEET,
    ZIP_LEVEL,
    finish_package,
    sheet_name,
    sheet_start,
    start_package,
)
from exports.running.writers.xlsx_engine.zip_stream import ZipStream

# The plan ------------------------------------------------------------------------------------------


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


# A partition -----------------------------------------------------------------------------------------


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


# The assembler --------------------------------------------------------------------------------------


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
    :class:`~exports.running.writers.xlsx_engine.zip_stream.ArchiveTooLarge` past the limits the single
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
