"""One export written by several workers at once: each partition of its rows becomes a run of
bytes of the one file, and the assembler writes what goes between them. This module describes
the layout and holds the records a split workbook's plan and partitions exchange; the writing is
:mod:`exports.running.writers.partitioned_csv`'s and :mod:`exports.running.writers.partitioned_xlsx`'s, each
imported by its own format only.

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
  structure (:class:`~exports.running.writers.xlsx_engine.zip_stream.ZipStream`, fed the segments'
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

from dataclasses import dataclass


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


@dataclass(frozen=True)
class DeflatedPiece:
    """A piece as written: the CRC-32 and length of its XML, and of its deflate segment."""

    crc32: int
    size: int
    compressed: int
