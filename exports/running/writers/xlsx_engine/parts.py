"""The parts of the OOXML package other than the rows: fixed XML, or built from a few names.

A minimal SpreadsheetML package (ECMA-376 Part 1): content types, the package relationship, the
workbook and its relationships, the styles and one part per worksheet. No theme, shared strings
or document properties: none is required, and leaving them out keeps every part small.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape as xml_text
from xml.sax.saxutils import quoteattr

from exports.core.export_type import Column
from exports.running.writers.cells import FLOAT_NUMBER_FORMAT
from exports.running.writers.xlsx_engine.rows import column_letter

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_SPREADSHEETML = "application/vnd.openxmlformats-officedocument.spreadsheetml"

CONTENT_TYPES = "[Content_Types].xml"
PACKAGE_RELS = "_rels/.rels"
WORKBOOK = "xl/workbook.xml"
WORKBOOK_RELS = "xl/_rels/workbook.xml.rels"
STYLES = "xl/styles.xml"


def sheet_part(number: int) -> str:
    """The zip entry of worksheet ``number`` (1-based)."""
    return f"xl/worksheets/sheet{number}.xml"


def content_types(sheets: int) -> bytes:
    """Which content type each part has."""
    overrides = "".join(
        f'<Override PartName="/{sheet_part(number)}" ContentType="{_SPREADSHEETML}.worksheet+xml"/>'
        for number in range(1, sheets + 1)
    )
    return (
        f'{_DECLARATION}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/{WORKBOOK}" ContentType="{_SPREADSHEETML}.sheet.main+xml"/>'
        f'<Override PartName="/{STYLES}" ContentType="{_SPREADSHEETML}.styles+xml"/>'
        f"{overrides}</Types>"
    ).encode()


def package_rels() -> bytes:
    """The package's one relationship: its main part, the workbook."""
    return (
        f'{_DECLARATION}<Relationships xmlns="{_PACKAGE_RELATIONSHIPS}">'
        f'<Relationship Id="rId1" Type="{_RELATIONSHIPS}/officeDocument" Target="{WORKBOOK}"/>'
        "</Relationships>"
    ).encode()


def _sheet_reference(name: str) -> str:
    """A sheet name as a formula refers to it: quoted, with quotes doubled."""
    return "'" + name.replace("'", "''") + "'"


def filter_range(columns: int, rows: int) -> str:
    """The autofilter's range: the header row and ``rows`` data rows (``A1:F101``)."""
    return f"A1:{column_letter(columns - 1)}{rows + 1}"


def workbook(sheet_names: Sequence[str], columns: int = 0, sheet_rows: Sequence[int] = ()) -> bytes:
    """The workbook: its sheets, in order (relationship ``rId<n>`` is sheet ``n``), and per sheet
    the defined names Excel keeps for its autofilter (``_xlnm._FilterDatabase``, over the header
    and the ``sheet_rows`` data rows) and its print titles (``_xlnm.Print_Titles``: row 1 repeats
    on every printed page)."""
    sheets = "".join(
        f'<sheet name={quoteattr(name)} sheetId="{number}" r:id="rId{number}"/>'
        for number, name in enumerate(sheet_names, start=1)
    )
    names = ""
    if columns:
        for index, (name, rows) in enumerate(zip(sheet_names, sheet_rows, strict=True)):
            sheet = xml_text(_sheet_reference(name))
            names += (
                f'<definedName name="_xlnm._FilterDatabase" localSheetId="{index}" hidden="1">'
                f"{sheet}!$A$1:${column_letter(columns - 1)}${rows + 1}</definedName>"
                f'<definedName name="_xlnm.Print_Titles" localSheetId="{index}">{sheet}!$1:$1</definedName>'
            )
    defined = f"<definedNames>{names}</definedNames>" if names else ""
    return (
        f'{_DECLARATION}<workbook xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}">'
        f'<bookViews><workbookView activeTab="0"/></bookViews><sheets>{sheets}</sheets>{defined}</workbook>'
    ).encode()


def workbook_rels(sheets: int) -> bytes:
    """The workbook's parts: the sheets (``rId1``..``rId<sheets>``), then the styles."""
    relationships = "".join(
        f'<Relationship Id="rId{number}" Type="{_RELATIONSHIPS}/worksheet" Target="worksheets/sheet{number}.xml"/>'
        for number in range(1, sheets + 1)
    )
    return (
        f'{_DECLARATION}<Relationships xmlns="{_PACKAGE_RELATIONSHIPS}">{relationships}'
        f'<Relationship Id="rId{sheets + 1}" Type="{_RELATIONSHIPS}/styles" Target="styles.xml"/>'
        "</Relationships>"
    ).encode()


# cellXfs in the order of rows.Style: default, bold header, date, datetime, decimal, quoted text,
# datetime with milliseconds, float. Number format 4 is the built-in "#,##0.00"; 164 to 167 are
# ours (167: a float shows every decimal it has, up to the 15 digits Excel keeps).
STYLESHEET = (
    f'{_DECLARATION}<styleSheet xmlns="{_MAIN}">'
    '<numFmts count="4"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>'
    '<numFmt numFmtId="165" formatCode="yyyy-mm-dd hh:mm:ss"/>'
    '<numFmt numFmtId="166" formatCode="yyyy-mm-dd hh:mm:ss.000"/>'
    f'<numFmt numFmtId="167" formatCode="{FLOAT_NUMBER_FORMAT}"/></numFmts>'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>'
    "</fills>"
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="8">'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="4" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" quotePrefix="1"/>'
    '<xf numFmtId="166" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="167" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    "</cellXfs>"
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
).encode()


def sheet_head(columns: Sequence[Column], selected: bool, widths: Sequence[int] | None = None) -> str:
    """A worksheet up to its first row: the header frozen (rows scroll under it), the widths
    (``widths``, else each column's declared width)."""
    cols = "".join(
        f'<col min="{index}" max="{index}" width="{width}" customWidth="1"/>'
        for index, width in enumerate(widths or [column.width for column in columns], start=1)
    )
    tab = ' tabSelected="1"' if selected else ""
    return (
        f'{_DECLARATION}<worksheet xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}">'
        f'<sheetViews><sheetView{tab} workbookViewId="0">'
        '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
        '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>'
        '<sheetFormatPr defaultRowHeight="15"/>'
        f"{f'<cols>{cols}</cols>' if cols else ''}<sheetData>"
    )


# The most a sheet's tail takes (its autofilter range has at most 3 column letters, 7 digits).
MAX_SHEET_TAIL_BYTES = 64


def sheet_tail(columns: int, rows: int) -> str:
    """The end of a worksheet after its rows: an autofilter on the header row over the data."""
    auto_filter = f'<autoFilter ref="{filter_range(columns, rows)}"/>' if columns else ""
    return f"</sheetData>{auto_filter}</worksheet>"
