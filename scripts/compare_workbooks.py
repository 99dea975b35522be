"""Whether two XLSX files hold the same cells: both opened with python-calamine, every row of
every sheet compared in order, one sheet at a time (a split export's workbook against the single
worker's, docs/fan-out.md). Prints each sheet's row count; exits 1 at the first difference.

``python scripts/compare_workbooks.py A.xlsx B.xlsx``
"""

from __future__ import annotations

import argparse
import sys
import time

import python_calamine


def compare(first: str, second: str) -> str | None:
    """None if the workbooks' sheets and cells are equal, else where they first differ."""
    books = [python_calamine.CalamineWorkbook.from_path(path) for path in (first, second)]
    if books[0].sheet_names != books[1].sheet_names:
        return f"sheets differ: {books[0].sheet_names} and {books[1].sheet_names}"
    for name in books[0].sheet_names:
        sheets = [book.get_sheet_by_name(name).iter_rows() for book in books]
        count = 0
        for count, (row, other) in enumerate(zip(*sheets, strict=False), start=1):
            if row != other:
                return f"{name}, row {count}: {row!r} and {other!r}"
        if next(sheets[0], None) is not None or next(sheets[1], None) is not None:
            return f"{name}: one sheet has more than {count} rows"
        print(f"{name}: {count:,} rows equal", flush=True)
    return None


def main() -> int:
    """Compare the two workbooks named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args()
    started = time.monotonic()
    difference = compare(args.first, args.second)
    if difference is not None:
        print(f"different: {difference}", file=sys.stderr)
        return 1
    print(f"cell-equal ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
