"""The workbook written as a zip stream: parts go out as they are made, nothing is seeked."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import TYPE_CHECKING, Final

from exports.core.export_type import Column, Row
from exports.running.writers.byte_sink import ByteSink
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS, fitted_widths
from exports.running.writers.deflate import DeflateLevel, DeflateLibrary
from exports.running.writers.xlsx_engine import parts
from exports.running.writers.xlsx_engine.rows import header_row, rows_encoder
from exports.running.writers.xlsx_engine.zip_stream import MAX_ENTRY_BYTES, ZipStream

if TYPE_CHECKING:
    import pyarrow as pa

    from exports.running.writers.xlsx_engine.arrow_rows import ArrowRows

# The deflate of the zip entries. Measured (docs/performance.md, 200,000 mixed rows, "Third
# round"): ISA-L at level 2 takes half the CPU of zlib-ng at 2 for a sheet 1 % larger, still
# about a fifth smaller than rustpy-xlsxwriter's.
ZIP_LEVEL: Final = DeflateLevel(DeflateLibrary.ISA_L, 2)

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# Excel's hard limit is 1,048,576 rows a sheet, one of which is our header.
MAX_DATA_ROWS_PER_SHEET = 1_048_575
# A sheet also ends, and the next one starts, before its XML outgrows a zip entry without
# ZIP64 records (4 GiB; see zip_stream.py). At ~700 bytes a row that never comes before the
# row limit; rows of more than ~4 KiB of XML do.
MAX_SHEET_XML_BYTES = MAX_ENTRY_BYTES
# Rows encoded and written together when the caller gives rows one by one; every write holds
# these rows of the export (or the part of them on one side of a sheet break).
BATCH_ROWS = 1000
# Rows gathered before their cells are made through Arrow: its cost per call (some sixty kernels
# a group) is paid per group, not per page (docs/performance.md, "XLSX rows through Arrow"). A
# group smaller than ARROW_MIN_ROWS (the last one) goes to the row encoder.
GROUP_ROWS = 16_000
ARROW_MIN_ROWS = 2_000


class XlsxStream:
    """An XLSX file written into ``out`` as rows come: a bold frozen header with an autofilter,
    repeated on every printed page, column widths fitted to the first rows (capped), typed
    cells with number formats, text exactly as given; a new sheet, header repeated, past ``max_rows_per_sheet``
    data rows. Memory is one group of rows (:data:`GROUP_ROWS`) and the compressor's window,
    whatever the row count.

    ``write_rows`` takes rows (a page), :meth:`close` finishes the file (workbook, relationships,
    content types and the zip's central directory). After a failure call :meth:`discard`: nothing
    more reaches ``out``, and nothing is left to clean up (no temporary file is ever made). A file
    that would pass 2 GiB raises :class:`~exports.running.writers.xlsx_engine.zip_stream.ArchiveTooLarge`.
    """

    def __init__(
        self,
        columns: Sequence[Column],
        out: ByteSink,
        sheet_title: str = "Export",
        max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET,
        compress_level: DeflateLevel = ZIP_LEVEL,
        max_sheet_bytes: int = MAX_SHEET_XML_BYTES,
    ) -> None:
        if max_rows_per_sheet < 1:
            raise ValueError("a sheet holds at least one data row")
        # Rows given; written: rows in the file so far (the rest are gathered in _pending).
        self.rows = 0
        self._written = 0
        self._pending: list[Row] = []
        self._arrow: ArrowRows | None = None
        self._columns = list(columns)
        self._title = sheet_title
        self._max_rows = max_rows_per_sheet
        self._encode = rows_encoder(self._columns)
        self._head_row = header_row(self._columns).encode()
        self._zip = ZipStream(out, compress_level)
        self._max_bytes = max_sheet_bytes - parts.MAX_SHEET_TAIL_BYTES
        self._sheet_names: list[str] = []
        self._sheet_rows: list[int] = []
        self._widths: list[int] | None = None
        self._in_sheet = 0
        self._sheet_bytes = 0
        start_package(self._zip)

    def write_rows(self, rows: Sequence[Row]) -> None:
        """Append ``rows``; a row of the wrong length raises ``ValueError``. The widths of the
        columns are fitted to the first call's rows (up to WIDTH_SAMPLE_ROWS of them), which are
        written at once; later rows are gathered into groups of :data:`GROUP_ROWS`, whose cells
        are made a column at a time through Arrow where their values allow
        (:mod:`~exports.running.writers.xlsx_engine.arrow_rows`), and written :data:`BATCH_ROWS` of the
        export at a time: the same file whatever the calls' sizes."""
        if self._widths is None:
            self._widths = fitted_widths(self._columns, rows[:WIDTH_SAMPLE_ROWS])
            self._new_sheet()
            self.rows += len(rows)
            self._write_now(rows)
            return
        self.rows += len(rows)
        self._pending.extend(rows)
        if len(self._pending) >= GROUP_ROWS:
            self._flush()

    def write_batch(self, batch: pa.RecordBatch, rows: ArrowRows) -> None:
        """Append the rows of an Arrow record ``batch`` (as :class:`ArrowRows` reads it): the
        file :meth:`write_rows` writes for their Python values, byte for byte. The first rows
        go through :meth:`write_rows`: they fit the column widths."""
        if self._widths is None:
            raise ValueError("the first rows are written with write_rows (they fit the widths)")
        self._flush()
        self.rows += batch.num_rows
        self._write_batch_now(batch, rows, None)

    def close(self) -> int:
        """Finish the file; returns the number of data rows."""
        if self._widths is None:
            self.write_rows([])
        self._flush()
        self._end_sheet()
        finish_package(self._zip, self._sheet_names, len(self._columns), self._sheet_rows)
        return self.rows

    def discard(self) -> None:
        """Write nothing more into ``out`` (the export failed; its upload is aborted)."""
        self._pending = []
        self._zip.discard()

    def _flush(self) -> None:
        """Write the gathered rows: through Arrow when their values allow, else by the row
        encoder, in the same writes either way."""
        rows, self._pending = self._pending, []
        if not rows:
            return
        if self._arrow is None:
            from exports.running.writers.xlsx_engine.arrow_rows import ArrowRows

            self._arrow = ArrowRows(self._columns, date_texts=False)
        batch = self._arrow.batch_of(rows) if len(rows) >= ARROW_MIN_ROWS else None
        if batch is not None:
            self._write_batch_now(batch, self._arrow, rows)
            return
        at = 0
        while at < len(rows):
            stop = min(len(rows), at + BATCH_ROWS - self._written % BATCH_ROWS)
            self._write_now(rows[at:stop])
            at = stop

    def _write_now(self, rows: Sequence[Row]) -> None:
        """Write ``rows`` with the row encoder: one write, or one each side of a sheet break."""
        start, total = 0, len(rows)
        while start < total:
            if self._in_sheet == self._max_rows:
                self._new_sheet()
            end = min(total, start + self._max_rows - self._in_sheet)
            batch = rows if start == 0 and end == total else rows[start:end]
            data = self._encode(batch, self._in_sheet + 1).encode()
            if self._sheet_bytes + len(data) > self._max_bytes:
                end = start + self._write_what_fits(batch)
            else:
                self._put(data, end - start)
            start = end

    def _write_batch_now(self, batch: pa.RecordBatch, rows: ArrowRows, values: Sequence[Row] | None) -> None:
        """Write ``batch`` (whose Python rows are ``values`` when the caller has them): cut
        where :meth:`_write_now` of :data:`BATCH_ROWS` at a time would cut (deflate's output
        depends on where its input is cut)."""
        start, total = 0, batch.num_rows
        while start < total:
            if self._in_sheet == self._max_rows:
                self._new_sheet()
            # At most a group's rows encoded at once (the cells' strings of a whole driver batch
            # would be the run's peak memory), ending where a write ends.
            group_end = start + GROUP_ROWS - self._written % BATCH_ROWS
            end = min(total, start + self._max_rows - self._in_sheet, group_end)
            part = values[start:end] if values is not None else None
            encoded = rows.encode(batch.slice(start, end - start), self._in_sheet + 1, part)
            at = start
            while at < end:
                stop = min(end, at + BATCH_ROWS - self._written % BATCH_ROWS)
                data = encoded.between(at - start, stop - start)
                if self._sheet_bytes + len(data) > self._max_bytes:
                    # A new sheet: the rows after it are numbered anew (encoded again).
                    left = values[at:stop] if values is not None else rows.python_rows(batch.slice(at, stop - at))
                    at += self._write_what_fits(left)
                    break
                self._put(data, stop - at)
                at = stop
            start = at

    def _new_sheet(self) -> None:
        self._end_sheet()
        number = len(self._sheet_names) + 1
        self._sheet_names.append(sheet_name(self._title, number))
        self._zip.start(parts.sheet_part(number))
        self._in_sheet = self._sheet_bytes = 0
        self._put(sheet_start(self._columns, number, self._widths, self._head_row), 0)

    def _end_sheet(self) -> None:
        if self._sheet_names:
            self._zip.write(parts.sheet_tail(len(self._columns), self._in_sheet).encode())
            self._zip.end()
            self._sheet_rows.append(self._in_sheet)

    def _put(self, data: bytes, rows: int) -> None:
        self._zip.write(data)
        self._sheet_bytes += len(data)
        self._in_sheet += rows
        self._written += rows

    def _write_what_fits(self, rows: Sequence[Row]) -> int:
        """The rare path: ``rows`` would take the sheet past its size limit. Write them one by
        one while they fit, then start the next sheet; returns how many were written."""
        for index, row in enumerate(rows):
            data = self._encode((row,), self._in_sheet + 1).encode()
            if self._sheet_bytes + len(data) > self._max_bytes:
                if self._in_sheet == 0:
                    raise ValueError(f"row {self._written + 1} alone is more XML than a sheet may hold")
                self._new_sheet()
                return index
            self._put(data, 1)
        return len(rows)


def sheet_name(title: str, number: int) -> str:
    """The name of sheet ``number`` (1-based): the title, then ``title (2)``, ..."""
    return title if number == 1 else f"{title} ({number})"


def sheet_start(columns: Sequence[Column], number: int, widths: Sequence[int] | None, head_row: bytes) -> bytes:
    """A sheet's XML up to its first data row: the head (``widths``, the first sheet selected)
    and ``head_row``, the header row (:func:`~exports.running.writers.xlsx_engine.rows.header_row`)."""
    return parts.sheet_head(columns, selected=number == 1, widths=widths).encode() + head_row


def start_package(archive: ZipStream) -> None:
    """The entries that come before the sheets: the package's relationship and the styles."""
    archive.add(parts.PACKAGE_RELS, parts.package_rels())
    archive.add(parts.STYLES, parts.STYLESHEET)


def finish_package(archive: ZipStream, sheet_names: Sequence[str], columns: int, sheet_rows: Sequence[int]) -> None:
    """The entries after the sheets (workbook, its relationships, content types), then the
    central directory: the archive is complete."""
    archive.add(parts.WORKBOOK, parts.workbook(sheet_names, columns, sheet_rows))
    archive.add(parts.WORKBOOK_RELS, parts.workbook_rels(len(sheet_names)))
    archive.add(parts.CONTENT_TYPES, parts.content_types(len(sheet_names)))
    archive.close()


def write_xlsx_stream(
    columns: list[Column],
    rows: Iterable[Row],
    out: ByteSink,
    on_row: Callable[[int], None] | None = None,
    sheet_title: str = "Export",
    max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET,
) -> int:
    """Stream ``rows`` into an XLSX file written into ``out`` (which need not seek); the same
    call as :func:`exports.running.writers.xlsx_writer.write_xlsx`. Returns the number of data rows. If
    ``rows`` raises, nothing more is written into ``out``."""
    stream = XlsxStream(columns, out, sheet_title=sheet_title, max_rows_per_sheet=max_rows_per_sheet)
    try:
        iterator = iter(rows)
        while batch := list(islice(iterator, BATCH_ROWS)):
            stream.write_rows(batch)
            if on_row is not None:
                for count in range(stream.rows - len(batch) + 1, stream.rows + 1):
                    on_row(count)
        return stream.close()
    except BaseException:
        stream.discard()
        raise


def write_xlsx_batches(
    columns: list[Column],
    batches: Iterable[pa.RecordBatch],
    out: ByteSink,
    sheet_title: str = "Export",
    max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET,
    max_sheet_bytes: int = MAX_SHEET_XML_BYTES,
) -> int:
    """:func:`write_xlsx_stream` of Arrow record ``batches`` (as
    :class:`~exports.running.writers.xlsx_engine.arrow_rows.ArrowRows` reads them, date texts
    included): the same file as it writes of their rows. The first :data:`WIDTH_SAMPLE_ROWS`
    rows go as Python values (they fit the column widths), the rest with
    :meth:`XlsxStream.write_batch`, cut where :func:`write_xlsx_stream`'s writes are. Returns
    the number of data rows; if ``batches`` raises, nothing more is written into ``out``."""
    import pyarrow as pa

    from exports.running.writers.xlsx_engine.arrow_rows import ArrowRows

    stream = XlsxStream(
        columns, out, sheet_title=sheet_title, max_rows_per_sheet=max_rows_per_sheet, max_sheet_bytes=max_sheet_bytes
    )
    try:
        rows = ArrowRows(columns)
        iterator = iter(batches)
        head: list[pa.RecordBatch] = []
        gathered = 0
        for batch in iterator:
            head.append(batch)
            gathered += batch.num_rows
            if gathered >= WIDTH_SAMPLE_ROWS:
                break
        if head:
            whole = pa.concat_batches(head)
            stream.write_rows(rows.python_rows(whole.slice(0, WIDTH_SAMPLE_ROWS)))
            for batch in _aligned(chain((whole.slice(WIDTH_SAMPLE_ROWS),), iterator)):
                stream.write_batch(batch, rows)
        return stream.close()
    except BaseException:
        stream.discard()
        raise


def _aligned(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` cut into batches of whole multiples of :data:`BATCH_ROWS` rows (the last
    one aside): the stream's writes then hold the rows the tuple path's do (deflate's output
    depends on where its input is cut)."""
    import pyarrow as pa

    pending: pa.RecordBatch | None = None
    for given in batches:
        batch = given if pending is None else pa.concat_batches([pending, given])
        whole = batch.num_rows - batch.num_rows % BATCH_ROWS
        if whole:
            yield batch.slice(0, whole)
        pending = batch.slice(whole) if whole < batch.num_rows else None
    if pending is not None:
        yield pending
