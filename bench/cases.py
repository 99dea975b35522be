"""One benchmark case, run alone in its own process: ``python -m bench.cases CASE ROWS FOLDER``.

Prints one JSON line: the case, the rows, the seconds the work took (imports and set-up
excluded), the process's peak RSS and the bytes written. Every case writes the same rows: orders
like the ``orders`` export's, made from fixed pools, in pages of 1,000.

Cases:
  gen            generate the rows and drop them (the floor)
  bare_csv       csv.writer into a file
  bare_csv_gz    csv.writer into gzip.open (level 6, as csv.gz exports)
  bare_xlsx      an openpyxl write-only workbook saved to a file, values appended as they are
  bare_xlsx_stream
                 our XLSX engine (exports/running/writers/xlsx_engine) writing pages into a file
  csv, csv.gz, xlsx
                 the service's pipeline: run_export (export type pages -> writer -> sink ->
                 parts), the parts going to a file, progress going to in-memory task records;
                 xlsx with the default engine (stream)
  xlsx_openpyxl  the pipeline with the openpyxl engine (WorkerSettings.xlsx_engine = "openpyxl")
  pdf            the pipeline writing a PDF table (exports/running/writers/pdf)
  jsonl, jsonl.gz, parquet
                 the worker's pipeline in those formats (shown against csv and csv.gz)
  pg_copy        PostgreSQL's floor: COPY (the declared orders query) TO STDOUT (FORMAT csv)
                 read through psycopg into a file
  pg_read        the declared orders type's pages from PostgreSQL (stream()), dropped
  pg_csv_python  the CSV pipeline with the CSV written in Python from the type's pages (COPY off)
  mixed_*        our writers and their peers (orjson, pyarrow, rustpy-xlsxwriter, a bare
                 csv.writer) on 12 mixed columns (bench/mixed.py)
  pg_csv, pg_xlsx, pg_parquet
                 the pipeline (CSV straight from COPY) on the declared orders_all_tenants type
                 of exports.toml over PostgreSQL
                 (the database's URI in EXPORTS_SHOP_DATABASE_URL; see bench/postgres.py)
  my_client      MySQL's peer: the mariadb client's batch output of the declared query, to a file
  my_csv         the CSV pipeline on the declared mysql_orders_all_tenants type over MariaDB
                 (bench/mysql.py)
  pg_duckdb_parquet
                 not here: DuckDB's postgres scanner runs in its own interpreter
                 (bench/duckdb_peer.py)
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench import mixed, mysql, postgres
from bench.child import measure

PAGE_ROWS = 1_000
# The bench's stand-in for S3 writes a part to its file this much at a time (_FileUpload).
_WRITE_SLICE = 1024 * 1024
_BASE = datetime(2025, 1, 1, 8, 0, 0)
_DAYS = [_BASE.date() + timedelta(days=n) for n in range(365)]
_CUSTOMERS = [
    ("C00042", "王芳", "wang.fang7@example.com", "CN"),
    ("C01234", "Emma Johnson", "emma.j3@example.com", "US"),
    ("C00777", "Noah Müller", "noah.m12@example.com", "DE"),
    ("C04321", "Chloé Martin", "chloe.m@example.com", "FR"),
    ("C00999", "Ava O'Brien", "ava.ob@example.com", "IE"),
    ("C02500", "Mia Tanaka", "mia.t@example.com", "JP"),
]
_STATUSES = ("delivered", "shipped", "paid", "pending", "cancelled", "refunded")
_ITEMS = (
    "SKU-1001 机械键盘 Mechanical keyboard x1",
    "SKU-1002 无线鼠标 Wireless mouse x2; SKU-1006 笔记本支架 Laptop stand x1",
    'SKU-1003 27" 显示器 Monitor x1',
    "SKU-1008 网络摄像头 Webcam, 1080p x3",
)
_AMOUNTS = [Decimal(n * 37 % 50_000) / 100 for n in range(997)]
_NOTES = (None,) * 12 + ("请周末送货", "Leave at the door", "-10% coupon applied", '=HYPERLINK("http://x")', "@home")
_CURRENCY = {"CN": "CNY", "US": "USD", "DE": "EUR", "FR": "EUR", "IE": "EUR", "JP": "JPY"}


def page(first: int, last: int) -> list[tuple[Any, ...]]:
    """Rows ``first``..``last - 1``, typed as the orders export yields them (13 columns)."""
    rows = []
    for n in range(first, last):
        customer_id, name, email, country = _CUSTOMERS[n % 6]
        rows.append(
            (
                f"ORD-{n:07d}",
                _DAYS[n % 365],
                _BASE + timedelta(seconds=n * 37 % 86_400),
                customer_id,
                name,
                email,
                country,
                _STATUSES[n % 6],
                n % 4 + 1,
                _ITEMS[n % 4],
                _AMOUNTS[n % 997],
                _CURRENCY[country],
                _NOTES[n % 17],
            )
        )
    return rows


def pages(rows: int) -> Iterator[list[tuple[Any, ...]]]:
    for first in range(0, rows, PAGE_ROWS):
        yield page(first, min(first + PAGE_ROWS, rows))


def _columns() -> list[Any]:
    from examples.demo_plugins.orders import ORDER_COLUMNS

    return list(ORDER_COLUMNS)


# baselines ------------------------------------------------------------------------------------


def run_gen(rows: int, folder: Path) -> int:
    for _ in pages(rows):
        pass
    return 0


def run_bare_csv(rows: int, folder: Path) -> int:
    path = folder / "bare.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow([column.header for column in _columns()])
        for rows_of_page in pages(rows):
            writer.writerows(rows_of_page)
    return path.stat().st_size


def run_bare_csv_gz(rows: int, folder: Path) -> int:
    path = folder / "bare.csv.gz"
    with gzip.open(path, "wt", compresslevel=6, encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow([column.header for column in _columns()])
        for rows_of_page in pages(rows):
            writer.writerows(rows_of_page)
    return path.stat().st_size


def run_bare_xlsx(rows: int, folder: Path) -> int:
    from openpyxl import Workbook

    path = folder / "bare.xlsx"
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Export")
    sheet.append([column.header for column in _columns()])
    for rows_of_page in pages(rows):
        for row in rows_of_page:
            sheet.append(row)
    workbook.save(path)
    return path.stat().st_size


def run_bare_xlsx_stream(rows: int, folder: Path) -> int:
    from exports.running.writers.xlsx_engine import XlsxStream

    path = folder / "bare_stream.xlsx"
    with path.open("wb") as out:
        stream = XlsxStream(_columns(), out)
        for rows_of_page in pages(rows):
            stream.write_rows(rows_of_page)
        stream.close()
    return path.stat().st_size


# the pipeline ---------------------------------------------------------------------------------


class _FileUpload:
    """A multipart upload whose parts go to one file."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")
        self.upload_id = "bench"
        self.parts: list[tuple[int, str]] = []

    def upload_part(self, data: bytes) -> None:
        # In slices: one write() of a fresh 8 MiB part cost 0.9-1.2 s of system CPU on the
        # development machine (the kernel's copy into page cache), 1 MiB slices 0.07 s for the
        # same 92 MB (docs/performance.md, "Fourth round: PostgreSQL to CSV"); S3 has no such cost.
        with memoryview(data) as view:
            for start in range(0, len(view), _WRITE_SLICE):
                self._file.write(view[start : start + _WRITE_SLICE])
        self.parts.append((len(self.parts) + 1, "etag"))

    def upload_part_number(self, number: int, data: bytes) -> str:
        raise NotImplementedError  # one worker writes the file in order

    def complete(self) -> None:
        self._file.close()

    def abort(self) -> None:
        self._file.close()


class _FileResults:
    """A result store writing the one file to disk (no checkpoints: the bench has no deadline, its
    exports never hand over)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path: Path | None = None

    def start_upload(self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]) -> _FileUpload:
        self.path = self.folder / file_name
        return _FileUpload(self.path)

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def presign_download(self, key: str, file_name: str, ttl_sec: int) -> str:
        raise NotImplementedError

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> _FileUpload:
        raise NotImplementedError

    def read_result(self, key: str) -> Iterator[bytes]:
        raise NotImplementedError

    def read_checkpoint(self, key: str) -> bytes | None:
        return None

    def write_checkpoint(self, key: str, body: bytes) -> None:
        raise NotImplementedError

    def delete_checkpoint(self, key: str) -> None:
        pass

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        pass


class _Tasks:
    def __init__(self) -> None:
        self.tasks: dict[str, Any] = {}

    def get(self, task_id: str) -> Any:
        return self.tasks.get(task_id)

    def update(self, before: Any, after: Any) -> None:
        self.tasks[after.task_id] = after

    def record_progress(self, task: Any) -> None:
        self.tasks[task.task_id] = task


def _bench_type(rows: int) -> Any:
    from pydantic import BaseModel

    from exports.core.export_type import Column, Cursor, ExportType, Page

    class NoFilters(BaseModel):
        pass

    class BenchOrders(ExportType[NoFilters]):
        name = "bench"
        description = "Generated orders."
        filters_model = NoFilters

        def columns(self, filters: NoFilters) -> list[Column]:
            return _columns()

        def pages(self, filters: NoFilters, cursor: Cursor | None = None) -> Iterator[Page]:
            start = cursor["next"] if cursor else 0
            for first in range(start, rows, PAGE_ROWS):
                last = min(first + PAGE_ROWS, rows)
                yield Page(page(first, last), {"next": last}, last / rows)

        def file_stem(self, filters: NoFilters) -> str:
            return "pipeline"

    return BenchOrders()


def run_pipeline(
    rows: int,
    folder: Path,
    fmt: str,
    xlsx_engine: str | None = None,
    source: tuple[Any, str, dict[str, Any]] | None = None,
) -> int:
    """``run_export`` of a claimed task in ``fmt`` into a file in ``folder``; returns its bytes.
    ``source`` is (registry, export type, task filters); by default the generated rows."""
    from exports.core.config.settings import WorkerSettings, XlsxEngine
    from exports.core.config.worker import Worker
    from exports.core.task import ExportFormat, claim, new_task
    from exports.export_types.registry import ExportTypeRegistry
    from exports.running.dependencies import WorkerDependencies
    from exports.running.export_run import run_export
    from exports.running.formats.run import HandedOver
    from exports.running.progress import ProgressReporter

    registry, export_type, filters = source or (ExportTypeRegistry([_bench_type(rows)]), "bench", {})
    results, tasks = _FileResults(folder), _Tasks()
    # Only the settings an export run reads (no tables, queues or buckets: the fakes stand in).
    read: dict[str, Any] = {
        "progress_interval_sec": Worker.PROGRESS_INTERVAL_SEC,
        "lease_sec": Worker.LEASE_SEC,
        "upload_part_bytes": Worker.UPLOAD_PART_BYTES,
        "xlsx_engine": xlsx_engine or XlsxEngine.DEFAULT,
    }
    given: dict[str, Any] = {
        "settings": WorkerSettings.model_construct(**read),
        "tasks": tasks,
        "results": results,
        "registry": registry,
    }
    # The ports a run does not use stay None: a call to one would fail the benchmark loudly.
    unused: dict[str, Any] = {
        field.name: None
        for field in dataclasses.fields(WorkerDependencies)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }
    deps = WorkerDependencies(**{**unused, **given})
    now = datetime.now(UTC)
    task = new_task(
        task_id="exp_bench",
        user_id="bench",
        export_type=export_type,
        format=ExportFormat(fmt),
        filters=filters,
        now=now,
        retention=timedelta(hours=1),
    )
    task = claim(task, now, timedelta(seconds=Worker.LEASE_SEC))
    tasks.tasks[task.task_id] = task
    result = run_export(task, ProgressReporter(task, deps), deps)
    assert not isinstance(result, HandedOver)  # unbounded time: it never hands over
    assert result.rows == rows and results.path is not None and results.path.stat().st_size == result.bytes
    return result.bytes


CASES: dict[str, Callable[[int, Path], int]] = {
    "gen": run_gen,
    "bare_csv": run_bare_csv,
    "bare_csv_gz": run_bare_csv_gz,
    "bare_xlsx": run_bare_xlsx,
    "csv": lambda rows, folder: run_pipeline(rows, folder, "csv"),
    "csv.gz": lambda rows, folder: run_pipeline(rows, folder, "csv.gz"),
    "bare_xlsx_stream": run_bare_xlsx_stream,
    "xlsx": lambda rows, folder: run_pipeline(rows, folder, "xlsx"),
    "xlsx_openpyxl": lambda rows, folder: run_pipeline(rows, folder, "xlsx", "openpyxl"),
    "pdf": lambda rows, folder: run_pipeline(rows, folder, "pdf"),
    "jsonl": lambda rows, folder: run_pipeline(rows, folder, "jsonl"),
    "jsonl.gz": lambda rows, folder: run_pipeline(rows, folder, "jsonl.gz"),
    "parquet": lambda rows, folder: run_pipeline(rows, folder, "parquet"),
    # PostgreSQL (bench/postgres.py): the database's URI comes in the source's variable.
    "pg_copy": postgres.copy_floor,
    "pg_read": lambda rows, folder: postgres.read_rows(rows),
    "pg_csv_python": lambda rows, folder: run_pipeline(rows, folder, "csv", source=postgres.pipeline_inputs(False)),
    "pg_csv": lambda rows, folder: run_pipeline(rows, folder, "csv", source=postgres.pipeline_inputs()),
    "pg_xlsx": lambda rows, folder: run_pipeline(rows, folder, "xlsx", source=postgres.pipeline_inputs()),
    "pg_parquet": lambda rows, folder: run_pipeline(rows, folder, "parquet", source=postgres.pipeline_inputs()),
    # MySQL (bench/mysql.py): the database's URL in the source's variable, the socket for the client.
    "my_client": mysql.client_peer,
    "my_csv": lambda rows, folder: run_pipeline(rows, folder, "csv", source=mysql.pipeline_inputs()),
    # Our writers against outside ones on 12 mixed columns (bench/mixed.py).
    **mixed.CASES,
}


def main(argv: Sequence[str]) -> None:
    case, rows, folder = argv[0], int(argv[1]), Path(argv[2])
    # Import what the case needs before the clock starts, as a warm worker would have.
    import openpyxl  # noqa: F401

    import exports.running.export_run  # noqa: F401
    from exports.running.formats.registry import every_format

    every_format()  # each format's module, loaded on a worker's first export of it

    if case in postgres.CASES:
        postgres.prepare(case)
    if case in mixed.CASES:
        mixed.prepare(case)
    if case == "my_client":
        mysql.prepare_client()
    elif case in mysql.CASES:
        mysql.prepare()

    print(json.dumps(measure(case, rows, lambda: CASES[case](rows, folder))))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: nothing to measure there


if __name__ == "__main__":
    main(sys.argv[1:])
