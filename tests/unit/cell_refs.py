"""Sheet XML with every cell's reference written out, as a reader places the cells."""

import re

from exports.running.writers.xlsx_engine.rows import column_index, column_letter

_CELL_OR_ROW = re.compile(r'<row r="(\d+)"|<c( r="([A-Z]+)\d+")?')


def with_references(xml: str) -> str:
    """``xml`` with ``r`` on every cell: a cell without one is the one after the previous cell
    of its row (the first column when it comes first), as ECMA-376 and every reader have it."""
    row, column = "", -1

    def place(match: re.Match[str]) -> str:
        nonlocal row, column
        if match.group(1):
            row, column = match.group(1), -1
            return match.group()
        column = column_index(match.group(3)) if match.group(2) else column + 1
        return f'<c r="{column_letter(column)}{row}"'

    return _CELL_OR_ROW.sub(place, xml)
