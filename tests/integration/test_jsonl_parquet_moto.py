"""JSON Lines and Parquet exports through the worker on moto: jsonl.gz continues in new
invocations and ends as one object; Parquet streams row groups into the multipart upload and
stops cleanly when it would not finish in one run; neither splits."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq
import pytest

from exports.core.export_type import Column, ColumnKind, Cursor, Page
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat
from exports.running.messages import process_task
from local_stack.embedded_aws import Resources
from tests.integration.conftest import SEED_DAY
from tests.integration.test_export_continuation import (
    create_task,
    export_deps,
    invoke_until_done,
    leftovers,
    s3,
    submit,
    tags_of,
)
from tests.unit.export_fakes import NumbersExport


def test_a_jsonl_gz_export_hands_over_and_ends_as_one_object_of_one_line_per_row(aws: Resources) -> None:
    export = NumbersExport(rows_total=120_000, page_rows=10_000)
    deps = export_deps(export)
    task = create_task(deps, "numbers", ExportFormat.JSONL_GZ)

    invocations = invoke_until_done(deps, task.task_id, pages=4)

    done = deps.tasks.get(task.task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    assert invocations == 4 and done.continuations == 3
    stored = s3().get_object(Bucket=aws.bucket, Key=done.result.key)
    body = stored["Body"].read()
    records = [json.loads(line) for line in gzip.decompress(body).decode("utf-8").splitlines()]
    expected = [row for page in export.pages(None) for row in page.rows]
    assert [list(record) for record in records[:1]] == [["n", "day", "amount", "text"]]
    assert [(r["n"], date.fromisoformat(r["day"]), Decimal(str(r["amount"])), r["text"]) for r in records] == [
        tuple(row) for row in expected
    ]
    assert stored["ContentType"] == "application/gzip" and done.result.file_name.endswith(".jsonl.gz")
    assert done.result.sha256 == hashlib.sha256(body).hexdigest() == tags_of(aws, done.result.key)["sha256"]
    assert leftovers(aws) == ([done.result.key], [])


class HashesExport(NumbersExport):
    """Numbered rows with a hex digest each: text that compresses little, so the file is more
    than one part."""

    name = "hashes"

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER), Column("digest", "Digest")]

    def pages(self, filters: Any, cursor: Cursor | None = None) -> Iterator[Page]:
        for page in super().pages(filters, cursor):
            rows = [(row[0], hashlib.sha256(str(row[0]).encode()).hexdigest()) for row in page.rows]
            yield Page(rows, page.cursor, page.fraction)


def test_a_parquet_export_streams_row_groups_into_the_upload(aws: Resources, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("exports.running.writers.parquet_writer.ROW_GROUP_ROWS", 25_000)
    export = HashesExport(rows_total=200_000, page_rows=10_000)
    deps = export_deps(export)
    task = create_task(deps, "hashes", ExportFormat.PARQUET)

    assert invoke_until_done(deps, task.task_id, pages=10_000) == 1

    done = deps.tasks.get(task.task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    stored = s3().get_object(Bucket=aws.bucket, Key=done.result.key)
    body = stored["Body"].read()
    parquet = pq.ParquetFile(io.BytesIO(body))
    table = parquet.read()
    expected = [row for page in export.pages(None) for row in page.rows]
    assert parquet.metadata.num_row_groups == 8 and table.num_rows == done.result.rows == 200_000
    assert list(zip(table.column("n").to_pylist(), table.column("digest").to_pylist(), strict=True)) == expected
    # Row groups went into the upload as they were written: more than one part.
    assert s3().head_object(Bucket=aws.bucket, Key=done.result.key, PartNumber=1)["PartsCount"] >= 2
    assert stored["ContentType"] == "application/vnd.apache.parquet" and done.result.file_name.endswith(".parquet")
    assert done.result.sha256 == hashlib.sha256(body).hexdigest()
    assert leftovers(aws) == ([done.result.key], [])


def test_undeclared_decimals_are_their_exact_digits_in_parquet(aws: Resources) -> None:
    export = NumbersExport(rows_total=1_000, page_rows=100)
    deps = export_deps(export)
    task = create_task(deps, "numbers", ExportFormat.PARQUET)

    invoke_until_done(deps, task.task_id, pages=10_000)

    done = deps.tasks.get(task.task_id)
    table = pq.read_table(io.BytesIO(s3().get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()))
    expected = [row for page in export.pages(None) for row in page.rows]
    assert table.column("day").to_pylist() == [row[1] for row in expected]
    assert table.column("amount").to_pylist() == [format(row[2], "f") for row in expected]


def test_a_parquet_export_that_would_not_finish_in_time_fails_with_parquet_too_large(aws: Resources) -> None:
    deps = export_deps(NumbersExport(rows_total=100, page_rows=10))
    task = create_task(deps, "numbers", ExportFormat.PARQUET)

    process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps, lambda: 5_000)

    failed = deps.tasks.get(task.task_id)
    assert (failed.status, failed.error.code) == (TaskStatus.FAILED, "PARQUET_TOO_LARGE")
    assert "jsonl.gz or csv.gz" in failed.error.message
    assert leftovers(aws) == ([], [])


@pytest.mark.parametrize("fmt", [ExportFormat.JSONL, ExportFormat.JSONL_GZ, ExportFormat.PARQUET])
def test_the_orders_demo_exports_through_the_api_in_each_new_format(orders: Resources, fmt: ExportFormat) -> None:
    deps = export_deps()
    filters = {"date_from": (SEED_DAY - timedelta(days=6)).isoformat(), "date_to": SEED_DAY.isoformat()}
    csv_id = submit({"export_type": "orders", "format": "csv", "filters": filters})
    task_id = submit({"export_type": "orders", "format": fmt.value, "filters": filters})
    invoke_until_done(deps, csv_id, pages=10_000)

    assert invoke_until_done(deps, task_id, pages=10_000) == 1

    done = deps.tasks.get(task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result.rows == deps.tasks.get(csv_id).result.rows > 0
    body = s3().get_object(Bucket=orders.bucket, Key=done.result.key)["Body"].read()
    if fmt is ExportFormat.PARQUET:
        assert pq.read_table(io.BytesIO(body)).num_rows == done.result.rows
    else:
        text = gzip.decompress(body) if fmt is ExportFormat.JSONL_GZ else body
        assert len(text.decode("utf-8").splitlines()) == done.result.rows
