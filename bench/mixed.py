"""Our writers against outside writers on the same mixed rows (issue 34's "rows → file" goals):
12 columns of ints, floats, decimals, dates, datetimes, short, non-ASCII and long text, booleans
and NULLs, made from fixed pools in pages of 1,000.

Cases (run by ``bench.cases`` in fresh processes; their goals, CPU ratios in one run, are in
:mod:`bench.goals`):

- ``mixed_xlsx``: our XLSX engine (``XlsxStream``) into a file; its peer ``mixed_rust_xlsx``,
  rustpy-xlsxwriter (its default deflate, constant memory) on the same rows as dicts;
- ``mixed_csv``: our ``CsvStream`` (formula guard on); its peers ``mixed_arrow_csv``,
  ``pyarrow.csv`` from Arrow arrays, and ``mixed_bare_csv``, a bare ``csv.writer`` with the same
  guard done inline (text starting with a trigger gets ``'``);
- ``mixed_jsonl``: our ``JsonlStream``; its peer ``mixed_orjson_jsonl``, orjson with a dict per
  row (decimals written as their digits, as ours);
- ``mixed_parquet``: our Parquet writer (``write_parquet_stream``); its peer
  ``mixed_arrow_parquet``, pyarrow direct: ``pa.array`` per column of each row group into a
  ``ParquetWriter`` of the same schema, row group size and compression.

The Arrow peers gather the pages into batches of our row group (65,536 rows) before building
arrays, as a columnar writer would.
"""

from __future__ import annotations

import csv
import importlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from exports.core.csv_dialect import FORMULA_TRIGGERS
from exports.core.export_type import Column, ColumnKind

PAGE_ROWS = 1_000
COLUMNS = [
    Column("id", "ID", ColumnKind.INTEGER),
    Column("quantity", "Quantity", ColumnKind.INTEGER),
    # Floats in float columns, as PostgreSQL real and double precision columns give them.
    Column("ratio", "Ratio", ColumnKind.FLOAT),
    # numeric(9, 2), as a PostgreSQL column declares it (Parquet writes a decimal type).
    Column("amount", "Amount", ColumnKind.DECIMAL, precision=9, scale=2),
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


# What each case imports, imported before its clock starts (and nothing more: peak RSS is the
# case's own).
IMPORTS = {
    "mixed_rust_xlsx": ("rustpy_xlsxwriter",),
    "mixed_xlsx": ("exports.running.writers.xlsx_engine",),
    "mixed_bare_csv": (),
    "mixed_arrow_csv": ("pyarrow.csv", "exports.running.writers.parquet_writer"),
    "mixed_csv": ("exports.running.writers.csv_writer",),
    "mixed_orjson_jsonl": ("orjson",),
    "mixed_jsonl": ("exports.running.writers.jsonl_writer",),
    "mixed_arrow_parquet": ("pyarrow.parquet", "exports.running.writers.parquet_writer"),
    "mixed_parquet": ("pyarrow.parquet", "exports.running.writers.parquet_writer"),
}


def prepare(case: str) -> None:
    """Import the writers ``case`` uses (ours or the peer's) before the clock starts."""
    for module in IMPORTS[case]:
        importlib.import_module(module)


def run_xlsx(rows: int, folder: Path) -> int:
    """Our XLSX engine, pages straight into a file."""
    from exports.running.writers.xlsx_engine import XlsxStream

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
    from exports.running.writers.csv_writer import CsvStream

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


def run_jsonl(rows: int, folder: Path) -> int:
    """Our JSON Lines writer into a file."""
    from exports.running.writers.jsonl_writer import JsonlStream

    path = folder / "mixed.jsonl"
    with path.open("wb") as out:
        stream = JsonlStream(COLUMNS, out)
        for rows_of_page in pages(rows):
            stream.write_rows(rows_of_page)
        stream.detach()
    return path.stat().st_size


def _exact(value: Any) -> Any:
    """orjson's fallback: a decimal as its digits (a JSON number, exact), as our writer keeps it."""
    import orjson

    if isinstance(value, Decimal):
        return orjson.Fragment(str(value))
    raise TypeError(type(value).__name__)


def run_orjson_jsonl(rows: int, folder: Path) -> int:
    """orjson, a dict per row, a line each, written a page at a time."""
    import orjson

    names = [column.name for column in COLUMNS]
    dumps, option = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    path = folder / "mixed_orjson.jsonl"
    with path.open("wb") as out:
        for rows_of_page in pages(rows):
            out.write(
                b"".join(
                    [dumps(dict(zip(names, row, strict=True)), default=_exact, option=option) for row in rows_of_page]
                )
            )
    return path.stat().st_size


def _batches(rows: int) -> Iterator[Any]:
    """The rows as Arrow record batches of our Parquet schema, a row group's rows each."""
    import pyarrow as pa

    from exports.running.writers.parquet_writer import ROW_GROUP_ROWS, arrow_schema

    schema = arrow_schema(COLUMNS)

    def batch(group: list[tuple[Any, ...]]) -> Any:
        columns = zip(*group, strict=True)
        return pa.record_batch(
            [pa.array(values, type=field.type) for field, values in zip(schema, columns, strict=True)], schema=schema
        )

    group: list[tuple[Any, ...]] = []
    for rows_of_page in pages(rows):
        group += rows_of_page
        if len(group) >= ROW_GROUP_ROWS:
            yield batch(group[:ROW_GROUP_ROWS])
            group = group[ROW_GROUP_ROWS:]
    if group:
        yield batch(group)


def run_arrow_csv(rows: int, folder: Path) -> int:
    """``pyarrow.csv`` from arrays (no formula guard): the columnar floor of a CSV file."""
    import pyarrow.csv as pacsv

    from exports.running.writers.parquet_writer import arrow_schema

    path = folder / "mixed_arrow.csv"
    with pacsv.CSVWriter(str(path), arrow_schema(COLUMNS)) as writer:
        for batch in _batches(rows):
            writer.write_batch(batch)
    return path.stat().st_size


def run_parquet(rows: int, folder: Path) -> int:
    """Our Parquet writer into a file."""
    from exports.running.writers.parquet_writer import write_parquet_stream

    path = folder / "mixed.parquet"
    with path.open("wb") as out:
        write_parquet_stream(COLUMNS, (row for rows_of_page in pages(rows) for row in rows_of_page), out)
    return path.stat().st_size


def run_arrow_parquet(rows: int, folder: Path) -> int:
    """pyarrow direct: arrays per row group into a ``ParquetWriter`` (our compression)."""
    import pyarrow.parquet as pq

    from exports.running.writers.parquet_writer import COMPRESSION, arrow_schema

    path = folder / "mixed_arrow.parquet"
    with pq.ParquetWriter(str(path), arrow_schema(COLUMNS), compression=COMPRESSION) as writer:
        for batch in _batches(rows):
            writer.write_batch(batch)
    return path.stat().st_size


CASES = {
    "mixed_rust_xlsx": run_rust_xlsx,
    "mixed_xlsx": run_xlsx,
    "mixed_bare_csv": run_bare_csv,
    "mixed_arrow_csv": run_arrow_csv,
    "mixed_csv": run_csv,
    "mixed_orjson_jsonl": run_orjson_jsonl,
    "mixed_jsonl": run_jsonl,
    "mixed_arrow_parquet": run_arrow_parquet,
    "mixed_parquet": run_parquet,
}
