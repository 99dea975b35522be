"""The writers against outside writers on the same mixed rows (issue 25, "XLSX and CSV ahead of
the Rust and Arrow writers again"): 12 columns of ints, floats, decimals, dates, datetimes,
short, non-ASCII and long text, booleans and NULLs, made from fixed pools in pages of 1,000.

Cases (run by ``bench.cases`` in fresh processes; the goals are CPU ratios in one run):

- ``mixed_xlsx``: our XLSX engine (``XlsxStream``) into a file, against ``mixed_rust_xlsx``,
  rustpy-xlsxwriter (its default deflate, constant memory) on the same rows as dicts: at most
  0.8x its CPU at an equal or smaller file;
- ``mixed_csv``: our ``CsvStream`` (formula guard on), against ``mixed_bare_csv``, a bare
  ``csv.writer`` with the same guard done inline (text starting with a trigger gets ``'``): at
  most 1.0x its CPU.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from exports.export_types.base import Column, ColumnKind
from exports.writers.cells import FORMULA_TRIGGERS

PAGE_ROWS = 1_000
COLUMNS = [
    Column("id", "ID", ColumnKind.INTEGER),
    Column("quantity", "Quantity", ColumnKind.INTEGER),
    # Floats in float columns, as PostgreSQL real and double precision columns give them.
    Column("ratio", "Ratio", ColumnKind.FLOAT),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    Column("day", "Day", ColumnKind.DATE),
    Column("at", "At", ColumnKind.DATETIME),
    Column("code", "Code", ColumnKind.STRING),
    Column("name", "Name", ColumnKind.STRING),
    Column("description", "Description", ColumnKind.STRING),
    Column("active", "Active", ColumnKind.BOOLEAN),
    Column("note", "Note", ColumnKind.STRING),
    Column("score", "Score", ColumnKind.FLOAT),
]
_BASE = datetime(2025, 1, 1, 8, 0, 0)
_DAYS = [_BASE.date() + timedelta(days=n) for n in range(365)]
_RATIOS = [n / 7 + 0.001 * n for n in range(1_009)]
_AMOUNTS = [Decimal(n * 37 % 50_000) / 100 for n in range(997)]
_CODES = ("A-17", "B-204", "C-3", "D-4410", "E-55")
_NAMES = ("王芳", "Noah Müller", "Chloé Martin", "Иван Петров", "Γιώργος", "Mia Tanaka")
_LONG = (
    "SKU-1002 无线鼠标 Wireless mouse x2; SKU-1006 笔记本支架 Laptop stand x1; delivered to the back door, "
    "ring twice, the dog is friendly",
    "Long free text about an order: " + "lorem ipsum dolor sit amet " * 6,
    'SKU-1003 27" 显示器 Monitor x1, gift wrapped, with a card that says "Happy birthday"',
)
_NOTES = (None,) * 5 + ("请周末送货", "-10% coupon applied", '=HYPERLINK("http://x")', "@home")


def page(first: int, last: int) -> list[tuple[Any, ...]]:
    """Rows ``first``..``last - 1`` (12 columns, NULLs among them)."""
    return [
        (
            n,
            n % 9 - 4 if n % 11 else None,
            _RATIOS[n % 1_009] if n % 13 else None,
            _AMOUNTS[n % 997],
            _DAYS[n % 365],
            _BASE + timedelta(seconds=n * 37 % 86_400),
            _CODES[n % 5],
            _NAMES[n % 6],
            _LONG[n % 3],
            n % 3 == 0,
            _NOTES[n % 9],
            _RATIOS[n * 7 % 1_009] * 1000,
        )
        for n in range(first, last)
    ]


def pages(rows: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows in pages of :data:`PAGE_ROWS`."""
    for first in range(0, rows, PAGE_ROWS):
        yield page(first, min(first + PAGE_ROWS, rows))


def run_xlsx(rows: int, folder: Path) -> int:
    """Our XLSX engine, pages straight into a file."""
    from exports.writers.xlsx_engine import XlsxStream

    path = folder / "mixed.xlsx"
    with path.open("wb") as out:
        stream = XlsxStream(COLUMNS, out)
        for rows_of_page in pages(rows):
            stream.write_rows(rows_of_page)
        stream.close()
    return path.stat().st_size


def run_rust_xlsx(rows: int, folder: Path) -> int:
    """rustpy-xlsxwriter on the same rows, as the dicts it takes, streamed from a generator."""
    from rustpy_xlsxwriter import write_worksheet

    headers = [column.header for column in COLUMNS]
    path = folder / "mixed_rust.xlsx"
    records = (dict(zip(headers, row, strict=True)) for rows_of_page in pages(rows) for row in rows_of_page)
    write_worksheet(records, str(path), sheet_name="Export")
    return path.stat().st_size


def run_csv(rows: int, folder: Path) -> int:
    """Our CSV writer (formula guard on) into a file."""
    from exports.writers.csv_writer import CsvStream

    path = folder / "mixed.csv"
    with path.open("wb") as out:
        stream = CsvStream(COLUMNS, out)
        for rows_of_page in pages(rows):
            stream.write_rows(rows_of_page)
        stream.flush()
        stream.detach()
    return path.stat().st_size


def run_bare_csv(rows: int, folder: Path) -> int:
    """A bare ``csv.writer`` with the formula guard inline: the floor of a guarded CSV."""
    triggers = FORMULA_TRIGGERS
    path = folder / "mixed_bare.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow([column.header for column in COLUMNS])
        for rows_of_page in pages(rows):
            writer.writerows(
                [
                    ["'" + value if value.__class__ is str and value.startswith(triggers) else value for value in row]
                    for row in rows_of_page
                ]
            )
    return path.stat().st_size


CASES = {
    "mixed_rust_xlsx": run_rust_xlsx,
    "mixed_xlsx": run_xlsx,
    "mixed_bare_csv": run_bare_csv,
    "mixed_csv": run_csv,
}
# Case -> (baseline, at most this many times its CPU seconds, whether the file may not be larger).
CPU_LIMITS = {"mixed_xlsx": ("mixed_rust_xlsx", 0.8, True), "mixed_csv": ("mixed_bare_csv", 1.0, False)}
