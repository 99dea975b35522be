"""Exports longer than one invocation, on moto: a CSV export that runs out of time hands over
through the queue and ends as one complete object; an XLSX one fails cleanly instead."""

import csv
import dataclasses
import gzip
import hashlib
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from types_boto3_sqs.type_defs import MessageTypeDef

from examples.demo_plugins.dynamodb_orders import DynamoOrdersReader
from examples.demo_plugins.orders import OrdersExport
from exports.accepting.sqs_queue import decode_message
from exports.core.aws.clients import aws_client
from exports.core.aws.s3_results import S3ResultStore
from exports.core.ids import new_task_id
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, new_task
from exports.export_types.registry import ExportTypeRegistry
from exports.running.attempt_files import CHECKPOINT_NAME
from exports.running.long_exports import CHECKPOINT_MARGIN_SEC, HANDOVER_DELAY_SEC
from exports.running.messages import process_task
from functions.submit.handler import lambda_handler as api_handler
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.polling import poll_until
from tests.unit.export_fakes import NumbersExport

PART = 5 * 1024 * 1024
PLENTY_MS = (CHECKPOINT_MARGIN_SEC + 600) * 1000
LOW_MS = (CHECKPOINT_MARGIN_SEC - 1) * 1000


class NoLimit:
    """A hot-key limiter that always lets the task run (the tests invoke the same key often)."""

    def acquire(self, hot_key: str, now: datetime) -> float:
        return 0.0


def export_deps(*extra_types: Any) -> Any:
    """The worker's real adapters with the resumable result store, 5 MiB parts and extra types
    (replacing the declared types of the same names)."""
    real = worker.dependencies()
    replaced = {export_type.name for export_type in extra_types}
    kept = [export_type for export_type in real.registry if export_type.name not in replaced]
    changes: dict[str, Any] = {
        "registry": ExportTypeRegistry([*kept, *extra_types]),
        "results": S3ResultStore(aws_client("s3"), real.settings.results_bucket),
        "settings": real.settings.model_copy(update={"upload_part_bytes": PART}),
    }
    if "limiter" in {field.name for field in dataclasses.fields(real)}:
        changes["limiter"] = NoLimit()
    return dataclasses.replace(real, **changes)


def pages_then_out_of_time(pages: int) -> Callable[[], int]:
    """An invocation with time for ``pages`` pages (the export looks at the clock once a page)."""
    looks: list[int] = []

    def remaining_ms() -> int:
        looks.append(1)
        return PLENTY_MS if len(looks) < pages else LOW_MS

    return remaining_ms


def invoke_until_done(deps: Any, task_id: str, pages: int, limit: int = 30) -> int:
    """Invoke the worker for the task until it ends; returns the number of invocations."""
    for invocation in range(1, limit + 1):
        task = deps.tasks.get(task_id)
        process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps, pages_then_out_of_time(pages))
        if deps.tasks.get(task_id).is_terminal:
            return invocation
    raise AssertionError("the export did not end")


def s3() -> Any:
    return boto3.client("s3", region_name=REGION)


def leftovers(aws: Resources) -> tuple[list[str], list[dict[str, Any]]]:
    keys = [o["Key"] for o in s3().list_objects_v2(Bucket=aws.bucket).get("Contents", [])]
    return keys, s3().list_multipart_uploads(Bucket=aws.bucket).get("Uploads", [])


def tags_of(aws: Resources, key: str) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in s3().get_object_tagging(Bucket=aws.bucket, Key=key)["TagSet"]}


def next_message(aws: Resources, within_sec: float) -> MessageTypeDef:
    """The first message that becomes visible on any lane within ``within_sec``."""
    sqs = boto3.client("sqs", region_name=REGION)

    def first_visible() -> list[MessageTypeDef]:
        for url in aws.queue_urls.values():
            if messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", []):
                return messages
        return []

    return poll_until(first_visible, timeout_sec=within_sec, fail="no message arrived")[0]


def create_task(deps: Any, export_type: str, fmt: ExportFormat) -> Any:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=fmt,
        filters={},
        now=now,
        retention=timedelta(hours=1),
    )
    deps.tasks.create(task, max_active=100)
    return task


def submit(body: dict[str, Any]) -> str:
    result = api_handler(http_event("POST", "/v1/exports", body), FakeContext())
    assert result["statusCode"] == 202, result["body"]
    return json.loads(result["body"])["task_id"]


def test_a_big_csv_export_hands_over_several_times_and_ends_as_one_multipart_object(aws: Resources) -> None:
    export = NumbersExport(rows_total=330_000, page_rows=10_000)
    deps = export_deps(export)
    task = create_task(deps, "numbers", ExportFormat.CSV)

    invocations = invoke_until_done(deps, task.task_id, pages=7)

    done = deps.tasks.get(task.task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    assert invocations == 5 and done.continuations == 4  # 33 pages, 7 an invocation
    body = s3().get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()
    assert s3().head_object(Bucket=aws.bucket, Key=done.result.key, PartNumber=1)["PartsCount"] == 3
    lines = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    assert len(lines) == 330_001 and [int(line[0]) for line in lines[1:]] == list(range(330_000))
    assert done.result.sha256 == hashlib.sha256(body).hexdigest()
    assert (done.result.rows, done.result.bytes) == (330_000, len(body))
    assert tags_of(aws, done.result.key) == {"rows": "330000", "bytes": str(len(body)), "sha256": done.result.sha256}
    assert leftovers(aws) == ([done.result.key], [])


def test_a_csv_gz_orders_export_continues_from_mid_day_cursors_with_the_same_content(
    orders: Resources,
) -> None:
    # The demo orders plugin reading 3 orders a page: many cursors within each day.
    deps = export_deps(OrdersExport(DynamoOrdersReader(aws_client("dynamodb"), orders.orders_table), page_rows=3))
    filters = {"date_from": (SEED_DAY - timedelta(days=29)).isoformat(), "date_to": SEED_DAY.isoformat()}
    reference_id = submit({"export_type": "orders", "format": "csv", "filters": filters})
    assert invoke_until_done(deps, reference_id, pages=10_000) == 1
    reference = deps.tasks.get(reference_id).result
    reference_body = s3().get_object(Bucket=orders.bucket, Key=reference.key)["Body"].read()

    task_id = submit({"export_type": "orders", "format": "csv.gz", "filters": filters})
    invocations = invoke_until_done(deps, task_id, pages=8)

    done = deps.tasks.get(task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    assert invocations >= 4 and done.continuations == invocations - 1
    stored = s3().get_object(Bucket=orders.bucket, Key=done.result.key)
    body = stored["Body"].read()
    assert gzip.decompress(body) == reference_body
    assert done.result.rows == reference.rows > 50
    assert done.result.sha256 == hashlib.sha256(body).hexdigest()
    assert done.result.file_name == f"orders_{filters['date_from']}_{filters['date_to']}.csv.gz"
    assert stored["ContentType"] == "application/gzip"
    assert "ContentEncoding" not in stored  # the download is the .gz file itself
    assert f'filename="{done.result.file_name}"' in stored["ContentDisposition"]
    assert stored["Metadata"] == {"task-id": task_id, "export-type": "orders", "format": "csv.gz"}
    assert tags_of(orders, done.result.key)["sha256"] == done.result.sha256
    assert sorted(leftovers(orders)[0]) == sorted([reference.key, done.result.key])
    assert leftovers(orders)[1] == []


def test_the_hand_over_message_on_the_queue_resumes_the_export(aws: Resources) -> None:
    deps = export_deps(NumbersExport(rows_total=50, page_rows=10))
    task = create_task(deps, "numbers", ExportFormat.CSV)
    process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps, pages_then_out_of_time(2))
    waiting = deps.tasks.get(task.task_id)
    assert (waiting.status, waiting.rows_written, waiting.continuations) == (TaskStatus.PENDING, 20, 1)
    assert [key.rsplit("/", 1)[1] for key in leftovers(aws)[0]] == [CHECKPOINT_NAME]
    assert len(leftovers(aws)[1]) == 1

    message = next_message(aws, within_sec=HANDOVER_DELAY_SEC + 5)
    process_task(decode_message(message["Body"]), deps)

    done = deps.tasks.get(task.task_id)
    assert (done.status, done.result.rows, done.attempt) == (TaskStatus.COMPLETED, 50, 2)
    assert leftovers(aws) == ([done.result.key], [])


def test_an_xlsx_export_that_would_not_finish_in_time_fails_with_xlsx_too_large(aws: Resources) -> None:
    deps = export_deps(NumbersExport(rows_total=100, page_rows=10))
    task = create_task(deps, "numbers", ExportFormat.XLSX)

    process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps, lambda: 5_000)

    failed = deps.tasks.get(task.task_id)
    assert (failed.status, failed.error.code) == (TaskStatus.FAILED, "XLSX_TOO_LARGE")
    assert "export CSV or csv.gz" in failed.error.message
    assert leftovers(aws) == ([], [])
