"""The parts of the OOXML package other than the rows: fixed XML, or built from a few names.

A minimal SpreadsheetML package (ECMA-376 Part 1): content types, the package relationship, the
workbook and its relationships, the styles and one part per worksheet. No theme, shared strings
or document properties: none is required, and leaving them out keeps every part small.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import quoteattr

from exports.export_types.base import Column

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


def workbook(sheet_names: Sequence[str]) -> bytes:
    """The workbook: its sheets, in order (relationship ``rId<n>`` is sheet ``n``)."""
    sheets = "".join(
        f'<sheet name={quoteattr(name)} sheetId="{number}" r:id="rId{number}"/>'
        for number, name in enumerate(sheet_names, start=1)
    )
    return (
        f'{_DECLARATION}<workbook xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}">'
        f'<bookViews><workbookView activeTab="0"/></bookViews><sheets>{sheets}</sheets></workbook>'
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


# cellXfs in the order of rows.Style: default, bold header, date, datetime, decimal. Number
# format 4 is the built-in "#,##0.00"; 164 and 165 are ours.
STYLESHEET = (
    f'{_DECLARATION}<styleSheet xmlns="{_MAIN}">'
    '<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>'
    '<numFmt numFmtId="165" formatCode="yyyy-mm-dd hh:mm:ss"/></numFmts>'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>'
    "</fills>"
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="5">'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="4" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    "</cellXfs>"
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
).encode()


def sheet_head(columns: Sequence[Column], selected: bool) -> str:
    """A worksheet up to its first row: the header frozen (rows scroll under it), the widths."""
    widths = "".join(
        f'<col min="{index}" max="{index}" width="{column.width}" customWidth="1"/>'
        for index, column in enumerate(columns, start=1)
    )
    tab = ' tabSelected="1"' if selected else ""
    return (
        f'{_DECLARATION}<worksheet xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}">'
        f'<sheetViews><sheetView{tab} workbookViewId="0">'
        '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
        '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>'
        '<sheetFormatPr defaultRowHeight="15"/>'
        f"{f'<cols>{widths}</cols>' if widths else ''}<sheetData>"
    )


SHEET_TAIL = "</sheetData></worksheet>"
