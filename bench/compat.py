"""``make compat``: LibreOffice reads the XLSX files of both engines; their cells must agree.

Writes the same rows (every column kind, CJK and other scripts, formula-looking text, markup,
control characters, line breaks, None, booleans, dates, long text) with the stream engine and
with the openpyxl engine, three sheets each (a small sheet limit, so the rollover is read too),
has LibreOffice Calc convert every sheet of both files to CSV headless (``soffice --headless
--convert-to csv``, text cells quoted, values as shown, en-US), and compares them cell by cell:

- the stream engine's cells must be what the source rows should show (text as the writers store
  it, numbers and dates in their formats, booleans as TRUE/FALSE);
- the openpyxl engine's cells must equal the stream engine's;
- the fan-out's workbook (the same rows written as three partitions, the last one first, and
  assembled as the fan-out's assembler does, sheets cut across the partitions) must equal the
  stream engine's too.

Text like "_x0041_" is written escaped ("_x005F_x0041_") by the stream engine: Excel reads any
"_xHHHH_" as the character HHHH (ECMA-376 ST_Xstring). Calc decodes only some of them (the
escaped "_" and control characters), so both files show the text as typed here.

LibreOffice (Debian's ``libreoffice-calc``) is installed with apt-get when ``soffice`` is
missing (as root). Not part of ``make test``: it needs LibreOffice and takes a while.
Run: ``python -m bench.compat [--keep FOLDER]``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS, fitted_widths
from exports.running.writers.partitioned_xlsx import XlsxLayout, plan_sheets, write_xlsx_partition, xlsx_glue
from exports.running.writers.xlsx_engine import write_xlsx_stream
from exports.running.writers.xlsx_writer import write_xlsx

ROWS_PER_SHEET = 12
COLUMNS = [
    Column("id", "Order ID", width=12),
    Column("name", "Customer", width=22),
    Column("items", "Items", ColumnKind.INTEGER, width=7),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    # A float in a decimal column (a double precision source): every decimal shown.
    Column("ratio", "Ratio", ColumnKind.DECIMAL),
    Column("day", "Order date", ColumnKind.DATE, width=12),
    Column("at", "Created at (UTC)", ColumnKind.DATETIME, width=20),
    Column("paid", "Paid", ColumnKind.BOOLEAN, width=6),
    Column("note", "Note", width=30),
]
NAMES = ["王芳", "Emma Johnson", "Noah Müller", "Chloé Martin", "Ava O'Brien", "田中 美咲", "김민준", "Даниил", "עדי"]
NOTES = [
    None,
    "请周末送货",
    '=HYPERLINK("http://x","click")',
    "+49 30 1234",
    "-10% coupon applied",
    "@home",
    "\t=1+1",
    "a & b < c > d",
    "<b>not markup</b>",
    "Leave at\x0bthe door\x01",
    "two\nlines",
    "  padded  ",
    "emoji 😀👍🏽",
    "_x0041_ stays as typed",
    "windows\r\nline break",
    "long " + "x" * 5_000,
    "1234",
    "TRUE",
    "2025-03-01",
]


def source_rows() -> list[tuple[Any, ...]]:
    """Rows with every kind of value, None included, for three sheets."""
    rows: list[tuple[Any, ...]] = []
    start = datetime(2025, 3, 1, 8, 0, 0)
    for n in range(30):
        rows.append(
            (
                f"ORD-{n:05d}",
                NAMES[n % len(NAMES)] if n % 11 else None,
                n % 5 + 1 if n % 13 else None,
                Decimal(n * 3_719 % 100_000) / 100 * (-1 if n % 7 == 0 else 1) if n % 17 else None,
                # Eighths and ten-thousandths of a binary fraction: what the format shows is exact.
                (n * 1_234_567 % 10_000_001) / 1_024 * (-1 if n % 5 == 0 else 1) if n % 7 else None,
                date(2025, 1, 1) + timedelta(days=n * 3) if n % 19 else None,
                start + timedelta(seconds=n * 37_241) if n % 23 else None,
                [True, False, None][n % 3],
                NOTES[n % len(NOTES)],
            )
        )
    rows.append(
        ("ORD-edge", "", 0, Decimal("0.005"), 0.0, date(1999, 12, 31), datetime(2000, 2, 29, 23, 59, 59), True, "=")
    )
    rows.append(
        ("ORD-tz", " ", -42, Decimal("-1234567.89"), -0.5, date(2100, 1, 1), start.replace(tzinfo=UTC), False, "-")
    )
    return rows


def expected_text(column: Column, value: Any) -> tuple[bool, str]:
    """(quoted, text) of a cell as LibreOffice exports it: values as shown; text cells quoted,
    and any value containing the separator, a quote or a line break."""
    if value is None:
        return False, ""
    if isinstance(value, str):
        # Text exactly as given, control characters included (the stream engine writes them as
        # `_xHHHH_` escapes, which Calc decodes; a formula-looking text only gets the
        # quotePrefix style); Calc keeps a line break as LF alone.
        text = value.replace("\r\n", "\n")
        return bool(text), text
    if isinstance(value, bool):
        shown = "TRUE" if value else "FALSE"
    elif isinstance(value, float):
        # The float format: grouped, every decimal (a binary fraction's are few), at least one.
        whole, _, decimals = f"{value:,.15f}".partition(".")
        shown = f"{whole}.{decimals.rstrip('0') or '0'}"
    elif column.kind is ColumnKind.DECIMAL:
        shown = f"{Decimal(value).quantize(Decimal('0.01'), ROUND_HALF_UP):,.2f}"
    elif isinstance(value, datetime):
        shown = value.strftime("%Y-%m-%d %H:%M:%S")
    elif isinstance(value, date):
        shown = value.isoformat()
    else:
        shown = str(value)
    return any(special in shown for special in ',"\n'), shown


def read_csv(path: Path) -> list[list[tuple[bool, str]]]:
    """The cells of a CSV file as (quoted, text): quoting tells text from numbers."""
    data = path.read_bytes().decode("utf-8")  # not read_text: it would turn a CR inside a text into LF
    rows: list[list[tuple[bool, str]]] = []
    row: list[tuple[bool, str]] = []
    index, end = 0, len(data)
    while index < end:
        if data[index] == '"':
            closing = index + 1
            text = []
            while True:
                quote = data.index('"', closing)
                text.append(data[closing:quote])
                if data.startswith('""', quote):
                    text.append('"')
                    closing = quote + 2
                    continue
                index = quote + 1
                break
            row.append((True, "".join(text)))
        else:
            stop = index
            while stop < end and data[stop] not in ",\r\n":
                stop += 1
            row.append((False, data[index:stop]))
            index = stop
        if index < end and data[index] == ",":
            index += 1
            if index == end or data[index] in "\r\n":
                row.append((False, ""))
        if data.startswith("\r\n", index) or data.startswith("\n", index):
            rows.append(row)
            row = []
            index += 2 if data[index] == "\r" else 1
    if row:
        rows.append(row)
    return rows


def partitioned_workbook(
    columns: Sequence[Column],
    partitions: Sequence[Sequence[Sequence[Row]]],
    max_rows_per_sheet: int,
    order: Sequence[int] | None = None,
) -> bytes:
    """The workbook of ``partitions`` (each a list of pages of rows) written partition by
    partition in ``order`` (any) and assembled: glue, segment, glue, ..., as the fan-out does."""
    rows = [row for pages in partitions for page in pages for row in page]
    sizes = [sum(len(page) for page in pages) for pages in partitions]
    layout = XlsxLayout(
        columns, fitted_widths(columns, rows[:WIDTH_SAMPLE_ROWS]), plan_sheets(sizes, max_rows_per_sheet)
    )
    segments, written = {}, {}
    for index in order if order is not None else range(len(partitions)):
        outputs = [io.BytesIO() for _ in layout.pieces_of(index)]
        written[index] = write_xlsx_partition(layout, index, partitions[index], outputs)
        segments[index] = [out.getvalue() for out in outputs]
    glue = xlsx_glue(layout, [piece for index in range(len(partitions)) for piece in written[index]])
    bodies = [body for index in range(len(partitions)) for body in segments[index]]
    return b"".join(run + body for run, body in zip(glue, [*bodies, b""], strict=True))


def soffice() -> str:
    """The LibreOffice binary; installs Debian's libreoffice-calc when it is missing."""
    found = shutil.which("soffice") or shutil.which("libreoffice")
    if found:
        return found
    if os.geteuid() != 0:
        raise SystemExit("LibreOffice is missing: run as root, or install libreoffice-calc first")
    print("installing libreoffice-calc (apt-get; this may take minutes)", file=sys.stderr, flush=True)
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=True, env=environment)
    subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "libreoffice-calc"], check=True, env=environment
    )
    found = shutil.which("soffice") or shutil.which("libreoffice")
    if not found:
        raise SystemExit("libreoffice-calc is installed but soffice is not on the PATH")
    return found


# Token 7 quotes every text cell, 9 writes values as shown, 12 (-1) writes every sheet to its own
# file "<name>-<sheet>.csv" (LibreOffice 7.2 and later); 76 is UTF-8, 1033 en-US.
CSV_FILTER = "csv:Text - txt - csv (StarCalc):44,34,76,1,,1033,true,true,true,false,false,-1"


def convert(binary: str, workbook: Path, folder: Path) -> dict[str, Path]:
    """Every sheet of ``workbook`` as CSV, by sheet name."""
    profile = folder / "profile"
    subprocess.run(
        [
            binary,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            CSV_FILTER,
            "--outdir",
            str(folder),
            str(workbook),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    prefix = f"{workbook.stem}-"
    return {path.stem.removeprefix(prefix): path for path in sorted(folder.glob(f"{prefix}*.csv"))}


def expected_sheets(rows: Sequence[tuple[Any, ...]]) -> list[list[list[tuple[bool, str]]]]:
    header = [(True, column.header) for column in COLUMNS]
    sheets = []
    for first in range(0, len(rows), ROWS_PER_SHEET):
        body = [
            [expected_text(column, value) for column, value in zip(COLUMNS, row, strict=True)]
            for row in rows[first : first + ROWS_PER_SHEET]
        ]
        sheets.append([header, *body])
    return sheets


def padded(rows: list[list[tuple[bool, str]]]) -> list[list[tuple[bool, str]]]:
    return [row + [(False, "")] * (len(COLUMNS) - len(row)) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compat", description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    options = parser.parse_args()
    binary = soffice()
    folder = options.keep or Path(tempfile.mkdtemp(prefix="exports-compat-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = source_rows()
    # A time zone is dropped (the wall time counts); openpyxl refuses one, so it gets the naive time.
    naive = [tuple(v.replace(tzinfo=None) if isinstance(v, datetime) else v for v in row) for row in rows]
    writers = {"stream": (write_xlsx_stream, rows), "openpyxl": (write_xlsx, naive)}
    read: dict[str, list[list[list[tuple[bool, str]]]]] = {}
    # Cuts inside the first and second sheets (ROWS_PER_SHEET rows each): pieces of a sheet from
    # two partitions are joined in the middle of its XML.
    partitions = [[rows[:5]], [rows[5:19]], [rows[19:]]]
    (folder / "fan-out.xlsx").write_bytes(partitioned_workbook(COLUMNS, partitions, ROWS_PER_SHEET, order=[2, 1, 0]))
    for engine in (*writers, "fan-out"):
        path = folder / f"{engine}.xlsx"
        if engine in writers:
            write, engine_rows = writers[engine]
            with path.open("wb") as out:
                write(COLUMNS, engine_rows, out, max_rows_per_sheet=ROWS_PER_SHEET)
        sheets = convert(binary, path, folder / engine)
        in_order = sorted(sheets, key=lambda name: int(name.rpartition("(")[2].rstrip(")")) if "(" in name else 1)
        print(f"{engine}: {path.stat().st_size:,} bytes, sheets {in_order}")
        read[engine] = [padded(read_csv(sheets[name])) for name in in_order]

    problems = []
    expected = expected_sheets(rows)
    if len(read["stream"]) != len(expected) or len(read["openpyxl"]) != len(expected):
        problems.append(
            f"sheets: expected {len(expected)}, stream {len(read['stream'])}, openpyxl {len(read['openpyxl'])}"
        )
    cells = 0
    for number, (want, ours, theirs) in enumerate(zip(expected, read["stream"], read["openpyxl"], strict=False), 1):
        if not (len(want) == len(ours) == len(theirs)):
            problems.append(f"sheet {number}: rows expected {len(want)}, stream {len(ours)}, openpyxl {len(theirs)}")
            continue
        for row_number, (want_row, our_row, their_row) in enumerate(zip(want, ours, theirs, strict=True), 1):
            for column, want_cell, our_cell, their_cell in zip(COLUMNS, want_row, our_row, their_row, strict=True):
                cells += 1
                where = f"sheet {number} row {row_number} {column.header}"
                if our_cell != want_cell:
                    problems.append(f"{where}: stream {our_cell!r}, expected {want_cell!r}")
                if their_cell != our_cell:
                    problems.append(f"{where}: openpyxl {their_cell!r}, stream {our_cell!r}")
    if read["fan-out"] != read["stream"]:
        problems.append("the fan-out's workbook (three partitions, assembled) differs from the stream engine's")
    print(f"compared {cells} cells of {len(expected)} sheets per engine ({version(binary)})")
    for line in problems:
        print(f"  MISMATCH {line}")
    if not options.keep:
        shutil.rmtree(folder, ignore_errors=True)
    print("compat: the engines agree" if not problems else f"compat: {len(problems)} mismatches")
    sys.exit(1 if problems else 0)


def version(binary: str) -> str:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False, timeout=120)
    return done.stdout.strip() or "unknown version"


if __name__ == "__main__":
    main()
