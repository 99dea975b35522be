"""The stream XLSX engine in the worker on moto: a workbook of several multipart parts written
straight into S3, and the openpyxl engine chosen by the function's environment."""

import base64
import hashlib
import io
import random
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from openpyxl import load_workbook
from pydantic import BaseModel

from exports.core.config.env import Env
from exports.core.export_type import Column, ColumnKind, Cursor, ExportType, Page
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat
from exports.running.messages import process_task
from functions.worker import handler as worker
from local_stack.embedded_aws import Resources
from tests.integration.test_export_continuation import create_task, export_deps, leftovers, s3, tags_of
from tests.unit.export_fakes import NumbersExport


class NoFilters(BaseModel):
    pass


class RandomTextExport(ExportType):
    """Rows of random text: deflate cannot shrink them much, so the file spans several parts."""

    name = "random_text"
    description = "Random text."
    filters_model = NoFilters

    def __init__(self, rows_total: int) -> None:
        self.rows_total = rows_total

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text", width=40)]

    def pages(self, filters: Any, cursor: Cursor | None = None) -> Iterator[Page]:
        rng = random.Random(7)
        for first in range(0, self.rows_total, 1000):
            last = min(first + 1000, self.rows_total)
            rows = [(n, base64.b64encode(rng.randbytes(192)).decode()) for n in range(first, last)]
            yield Page(rows, {"next": last}, last / self.rows_total)

    def file_stem(self, filters: Any) -> str:
        return "random_text"


def run_task(deps: Any, export_type: str) -> Any:
    task = create_task(deps, export_type, ExportFormat.XLSX)
    process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps)
    return deps.tasks.get(task.task_id)


def test_a_workbook_of_several_parts_streams_into_one_s3_object(aws: Resources) -> None:
    deps = export_deps(RandomTextExport(rows_total=70_000))

    done = run_task(deps, "random_text")

    assert done.status is TaskStatus.COMPLETED, done.error
    body = s3().get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()
    assert s3().head_object(Bucket=aws.bucket, Key=done.result.key, PartNumber=1)["PartsCount"] >= 3
    archive = zipfile.ZipFile(io.BytesIO(body))
    assert archive.testzip() is None
    assert archive.read("xl/worksheets/sheet1.xml").count(b"</row>") == 70_001
    assert done.result.sha256 == hashlib.sha256(body).hexdigest() == tags_of(aws, done.result.key)["sha256"]
    assert (done.result.rows, done.result.bytes) == (70_000, len(body))
    sheet = load_workbook(io.BytesIO(body), read_only=True).active
    first = next(sheet.iter_rows(min_row=2, max_row=2, values_only=True))
    assert first[0] == 0 and len(first[1]) == 256
    assert leftovers(aws) == ([done.result.key], [])


@pytest.mark.parametrize(("engine", "openpyxl_parts"), [(None, False), ("stream", False), ("openpyxl", True)])
def test_the_functions_environment_chooses_the_engine(
    aws: Resources, monkeypatch: pytest.MonkeyPatch, engine: str | None, openpyxl_parts: bool
) -> None:
    if engine:
        monkeypatch.setenv(Env.XLSX_ENGINE, engine)
    worker.dependencies.cache_clear()
    deps = export_deps(NumbersExport(rows_total=25, page_rows=10))

    done = run_task(deps, "numbers")

    assert done.status is TaskStatus.COMPLETED, done.error
    body = s3().get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()
    assert ("docProps/app.xml" in zipfile.ZipFile(io.BytesIO(body)).namelist()) is openpyxl_parts
    rows = list(load_workbook(io.BytesIO(body)).active.iter_rows(values_only=True))
    assert len(rows) == 26 and rows[0] == ("N", "Day", "Amount", "Text")
