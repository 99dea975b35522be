"""XLSX with openpyxl in write-only mode: bold frozen header with an autofilter, repeated on
printed pages, typed cells, text exactly as given, column widths fitted to the first rows.

openpyxl streams each sheet's XML into a temporary file (lxml does the writing when it is
installed) and zips the sheets into ``out`` on save; memory stays flat, the temporary files grow
with the rows. They are removed when the workbook is saved, and by :func:`write_xlsx` when the
export stops early, so a warm worker never carries them into its next export.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from itertools import chain, islice
from typing import Any

from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.byte_sink import ByteStream
from exports.running.writers.cells import (
    FLOAT_NUMBER_FORMAT,
    WIDTH_SAMPLE_ROWS,
    CellTooLong,
    exact_double,
    fitted_widths,
    looks_like_formula,
    spreadsheet_value,
)

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# Excel's hard limit is 1,048,576 rows a sheet, one of which is our header.
MAX_DATA_ROWS_PER_SHEET = 1_048_575
_NUMBER_FORMATS = {
    ColumnKind.DECIMAL: "#,##0.00",
    ColumnKind.FLOAT: FLOAT_NUMBER_FORMAT,
    ColumnKind.DATE: "yyyy-mm-dd",
    ColumnKind.DATETIME: "yyyy-mm-dd hh:mm:ss",
}
# A date and time with sub-seconds, shown to the millisecond (the stream engine's style too).
_MILLISECONDS_FORMAT = "yyyy-mm-dd hh:mm:ss.000"


def _row_converter(sheet: Any, columns: Sequence[Column]) -> Callable[[Row], list[Any]]:
    """A function turning a row into what the sheet appends. A formatted column reuses one
    styled cell: write-only sheets serialise each row as it is appended, so the cell is free
    again for the next row, and the style is registered once instead of once per value."""
    from openpyxl.cell import WriteOnlyCell

    _append_prepared_rows(sheet)

    def text_converter() -> Callable[[Any], Any]:
        # Text that looks like a formula is stored as text (never a formula), exactly as given,
        # in a cell styled quotePrefix so it stays text when edited; one such cell per column.
        quoted = WriteOnlyCell(sheet)
        quoted.quotePrefix = True

        def convert(value: Any) -> Any:
            value = spreadsheet_value(value)
            if value.__class__ is not str or not looks_like_formula(value):
                return value
            quoted.value = value
            quoted.data_type = "s"
            return quoted

        return convert

    def formatted(number_format: str) -> Callable[[Any], Any]:
        cell = WriteOnlyCell(sheet)
        cell.number_format = number_format
        with_milliseconds = WriteOnlyCell(sheet)
        with_milliseconds.number_format = _MILLISECONDS_FORMAT
        # A float in a decimal column: every decimal it has (the stream engine's style too).
        as_float = WriteOnlyCell(sheet)
        as_float.number_format = (
            FLOAT_NUMBER_FORMAT if number_format == _NUMBER_FORMATS[ColumnKind.DECIMAL] else number_format
        )

        text = text_converter()

        def convert(value: Any) -> Any:
            if value is None or value.__class__ is str:
                return text(value)
            value = spreadsheet_value(value)
            if value.__class__ is str:  # a number or date no cell holds: its text (nothing to escape)
                return text(value)
            chosen = with_milliseconds if isinstance(value, datetime) and value.microsecond else cell
            if value.__class__ is float:
                chosen = as_float
            if isinstance(value, float | Decimal):
                # openpyxl writes numbers with 16 digits, a double may need 17: its exact text.
                chosen.value = exact_double(value)
                chosen.data_type = "n"
            else:
                chosen.value = value
            return chosen

        return convert

    converters = [
        formatted(_NUMBER_FORMATS[column.kind]) if column.kind in _NUMBER_FORMATS else text_converter()
        for column in columns
    ]

    def convert_row(row: Row) -> list[Any]:
        try:
            return [convert(value) for convert, value in zip(converters, row, strict=True)]
        except CellTooLong as error:
            lengths = [len(value) if isinstance(value, str) else 0 for value in row]
            raise CellTooLong(error.length, lengths.index(max(lengths))) from None

    return convert_row


def _append_prepared_rows(sheet: Any) -> None:
    """Let ``sheet`` take rows of prepared values and styled cells without re-checking them.

    openpyxl's write-only sheet turns each appended value into a cell by assigning it to a
    shared cell and, when the value is already a cell, catching the ``ValueError`` that raises;
    for the styled cells of every date and amount that exception costs more than writing the
    cell. This replaces, on this sheet only, the method doing it (``_values_to_row``, private
    but stable in the pinned openpyxl) with one that takes cells as they are. With another
    openpyxl that lacks the method, the sheet is left as it is: slower, same file.
    """
    from openpyxl.cell.cell import Cell
    from openpyxl.worksheet._write_only import WriteOnlyWorksheet

    if not callable(getattr(WriteOnlyWorksheet, "_values_to_row", None)):
        return
    plain = [Cell(sheet)]

    def values_to_row(values: Row, row_index: int) -> Iterator[Any]:
        cell = plain[0]
        for column_index, value in enumerate(values, 1):
            if value is None:
                continue
            if value.__class__ is Cell:
                value.column, value.row = column_index, row_index
                yield value
                continue
            cell.value = value
            cell.column, cell.row = column_index, row_index
            yield cell
            if cell.has_style:  # a date got its default format: the next value needs a clean cell
                cell = plain[0] = Cell(sheet)

    sheet._values_to_row = values_to_row


def write_xlsx(
    columns: list[Column],
    rows: Iterable[Row],
    out: ByteStream,
    on_row: Callable[[int], None] | None = None,
    sheet_title: str = "Export",
    max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET,
) -> int:
    """Stream ``rows`` into a workbook saved to ``out``; past ``max_rows_per_sheet`` rows the
    export continues on a new sheet with the header repeated. Returns the number of data rows.
    If ``rows`` raises, nothing is saved and the temporary sheet files are removed."""
    # Imported here: only the XLSX path pays for openpyxl.
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    workbook = Workbook(write_only=True)
    bold = Font(bold=True)
    sheets: list[Any] = []
    iterator = iter(rows)
    # The widths are written before the first row: measure them on the first rows, then write those.
    first = list(islice(iterator, WIDTH_SAMPLE_ROWS))
    widths = fitted_widths(columns, first)
    last_column = get_column_letter(len(columns)) if columns else ""

    def end_sheet(sheet: Any, data_rows: int) -> None:
        if columns:
            sheet.auto_filter.ref = f"A1:{last_column}{data_rows + 1}"

    def new_sheet() -> tuple[Any, Callable[[Row], list[Any]]]:
        number = len(sheets) + 1
        sheet = workbook.create_sheet(sheet_title if number == 1 else f"{sheet_title} ({number})")
        sheets.append(sheet)
        sheet.freeze_panes = "A2"
        sheet.print_title_rows = "1:1"
        for index, width in enumerate(widths, start=1):
            sheet.column_dimensions[get_column_letter(index)].width = width
        header = []
        for column in columns:
            cell = WriteOnlyCell(sheet, value=column.header)
            cell.font = bold
            header.append(cell)
        sheet.append(header)
        return sheet, _row_converter(sheet, columns)

    try:
        sheet, convert = new_sheet()
        count = in_sheet = 0
        for row in chain(first, iterator):
            if in_sheet == max_rows_per_sheet:
                end_sheet(sheet, in_sheet)
                sheet, convert = new_sheet()
                in_sheet = 0
            sheet.append(convert(row))
            count += 1
            in_sheet += 1
            if on_row:
                on_row(count)
        end_sheet(sheet, in_sheet)
        workbook.save(out)
    except BaseException:
        _remove_temporary_files(sheets)
        raise
    return count


def _remove_temporary_files(sheets: list[Any]) -> None:
    """Close and delete the temporary files of sheets that were never saved."""
    from openpyxl.worksheet._writer import ALL_TEMP_FILES

    for sheet in sheets:
        writer = sheet._writer
        if writer is None:
            continue
        with contextlib.suppress(Exception):
            if sheet._rows is not None:
                sheet._rows.close()
            writer.xf.close()
        with contextlib.suppress(OSError):
            os.remove(writer.out)
        with contextlib.suppress(ValueError):
            ALL_TEMP_FILES.remove(writer.out)
