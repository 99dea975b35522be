"""XLSX with openpyxl in write-only mode: bold frozen header, typed cells, column widths."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from exports.export_types.base import Column, ColumnKind, Row
from exports.writers.cells import neutralise, xml_safe

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# Excel's hard limit is 1,048,576 rows a sheet, one of which is our header.
MAX_DATA_ROWS_PER_SHEET = 1_048_575
_NUMBER_FORMATS = {
    ColumnKind.DECIMAL: "#,##0.00",
    ColumnKind.DATE: "yyyy-mm-dd",
    ColumnKind.DATETIME: "yyyy-mm-dd hh:mm:ss",
}


def write_xlsx(
    columns: list[Column],
    rows: Iterable[Row],
    out: BinaryIO,
    on_row: Callable[[int], None] | None = None,
    sheet_title: str = "Export",
    max_rows_per_sheet: int = MAX_DATA_ROWS_PER_SHEET,
) -> int:
    """Stream ``rows`` into a workbook saved to ``out``; past ``max_rows_per_sheet`` rows the
    export continues on a new sheet with the header repeated. Returns the number of data rows."""
    # Imported here: only the XLSX path pays for openpyxl.
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    workbook = Workbook(write_only=True)
    bold = Font(bold=True)
    formats = [_NUMBER_FORMATS.get(column.kind) for column in columns]

    def new_sheet(number: int) -> Any:
        sheet = workbook.create_sheet(sheet_title if number == 1 else f"{sheet_title} ({number})")
        sheet.freeze_panes = "A2"
        for index, column in enumerate(columns, start=1):
            sheet.column_dimensions[get_column_letter(index)].width = column.width
        header = []
        for column in columns:
            cell = WriteOnlyCell(sheet, value=column.header)
            cell.font = bold
            header.append(cell)
        sheet.append(header)
        return sheet

    def typed(sheet: Any, value: Any, number_format: str | None) -> Any:
        if number_format is None or value is None:
            return neutralise(xml_safe(value))
        cell = WriteOnlyCell(sheet, value=value)
        cell.number_format = number_format
        return cell

    sheets = 1
    sheet = new_sheet(sheets)
    count = in_sheet = 0
    for row in rows:
        if in_sheet == max_rows_per_sheet:
            sheets += 1
            sheet = new_sheet(sheets)
            in_sheet = 0
        sheet.append([typed(sheet, value, fmt) for value, fmt in zip(row, formats, strict=True)])
        count += 1
        in_sheet += 1
        if on_row:
            on_row(count)
    workbook.save(out)
    return count
