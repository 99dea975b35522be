"""scripts/compare_workbooks.py: equal cells pass, a changed cell or an extra row is named."""

from pathlib import Path

import openpyxl

from scripts.compare_workbooks import compare


def _book(path: Path, rows: list[list[object]]) -> str:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    book.save(path)
    return str(path)


def test_workbooks_with_the_same_cells_are_equal_and_differences_are_named(tmp_path: Path) -> None:
    rows: list[list[object]] = [["n", "text"], [1, "a"], [2, "b"]]
    first = _book(tmp_path / "first.xlsx", rows)

    assert compare(first, _book(tmp_path / "same.xlsx", rows)) is None
    assert "row 3" in str(compare(first, _book(tmp_path / "changed.xlsx", [*rows[:2], [2, "c"]])))
    assert "more than 3 rows" in str(compare(first, _book(tmp_path / "longer.xlsx", [*rows, [3, "d"]])))
