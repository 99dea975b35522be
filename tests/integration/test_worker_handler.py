"""The worker function with real SQS events against moto: claims, files, retries, ownership."""

import csv
import io
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

import boto3
import openpyxl
import pytest
from pydantic import BaseModel
from types_boto3_s3.type_defs import MultipartUploadTypeDef
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_items import from_item
from exports.domain.errors import RetryableError
from exports.domain.status import TaskStatus
from exports.export_types.base import Column, ColumnKind, ExportType, Row, ignore_progress
from exports.export_types.registry import ExportTypeRegistry
from exports.services import deliveries
from exports.services.deliveries import process_task
from exports.services.endings import Outcome
from functions.submit.handler import lambda_handler as api_handler
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from local_stack.worker_loop import to_sqs_event
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY


def submit(body: dict[str, Any], user: str = "alice") -> str:
    result = api_handler(http_event("POST", "/v1/exports", body, user=user), FakeContext())
    assert result["statusCode"] == 202, result["body"]
    return json.loads(result["body"])["task_id"]


def orders_request(fmt: str = "csv", days: int = 14, **filters: Any) -> dict[str, Any]:
    return {
        "export_type": "orders",
        "format": fmt,
        "filters": {
            "date_from": (SEED_DAY - timedelta(days=days - 1)).isoformat(),
            "date_to": SEED_DAY.isoformat(),
            **filters,
        },
    }


def receive(aws: Resources, wait: int = 0) -> list[MessageTypeDef]:
    sqs = boto3.client("sqs", region_name=REGION)
    return sqs.receive_message(
        QueueUrl=aws.queue_urls["normal"],
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
        WaitTimeSeconds=wait,
    ).get("Messages", [])


def run_worker(aws: Resources, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return worker.lambda_handler(
        to_sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:exports-tasks", REGION), FakeContext()
    )


def task_item(aws: Resources, task_id: str) -> dict[str, Any]:
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=aws.tasks_table, Key={"task_id": {"S": task_id}}
    )
    return from_item(item["Item"])


def get_task(task_id: str, user: str = "alice") -> dict[str, Any]:
    result = api_handler(http_event("GET", f"/v1/exports/{task_id}", user=user), FakeContext())
    return json.loads(result["body"])


def s3_objects(aws: Resources) -> list[str]:
    return [
        o["Key"] for o in boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=aws.bucket).get("Contents", [])
    ]


def open_uploads(aws: Resources) -> list[MultipartUploadTypeDef]:
    return boto3.client("s3", region_name=REGION).list_multipart_uploads(Bucket=aws.bucket).get("Uploads", [])


def source_orders(aws: Resources, day_from: date, day_to: date) -> list[dict[str, Any]]:
    """Every order of the range, straight from the table (a scan is fine in a test)."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    items = [
        from_item(i, exact=True)
        for page in dynamodb.get_paginator("scan").paginate(TableName=aws.orders_table)
        for i in page["Items"]
    ]
    chosen = [i for i in items if day_from.isoformat() <= i["order_day"] <= day_to.isoformat()]
    return sorted(chosen, key=lambda i: (i["order_day"], i["created_at"], i["order_id"]))


def neutralised(text: str | None) -> str | None:
    return "'" + text if text and text[0] in "=+-@\t\r" else text


def test_csv_export_completes_with_every_source_row(orders: Resources) -> None:
    task_id = submit(orders_request("csv"))

    assert run_worker(orders, receive(orders)) == {"batchItemFailures": []}

    item = task_item(orders, task_id)
    assert item["status"] == "COMPLETED"
    assert item["progress"] == 100
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=orders.bucket, Key=item["result"]["key"])
    data = body["Body"].read()
    assert item["result"]["bytes"] == len(data)
    assert body["ContentType"].startswith("text/csv")
    assert 'filename="orders_2025-03-18_2025-03-31.csv"' in body["ContentDisposition"]
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    expected = source_orders(orders, SEED_DAY - timedelta(days=13), SEED_DAY)
    assert len(rows) - 1 == len(expected) == item["result"]["rows"] > 0
    for row, order in zip(rows[1:], expected, strict=True):
        assert row[0] == order["order_id"]
        assert row[1] == order["order_day"]
        assert row[4] == order["customer_name"]
        assert row[9] == order["items"]
        assert Decimal(row[10]) == order["amount"]
        assert row[12] == (neutralised(order.get("note")) or "")
    assert not open_uploads(orders)


def test_xlsx_export_has_typed_cells_and_the_requested_columns(orders: Resources) -> None:
    task_id = submit(orders_request("xlsx", columns=["amount", "order_id", "created_at", "status"], status="delivered"))
    run_worker(orders, receive(orders))

    item = task_item(orders, task_id)
    assert item["status"] == "COMPLETED"
    data = (
        boto3.client("s3", region_name=REGION)
        .get_object(Bucket=orders.bucket, Key=item["result"]["key"])["Body"]
        .read()
    )
    sheet = openpyxl.load_workbook(io.BytesIO(data)).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("Amount", "Order ID", "Created at (UTC)", "Status")
    expected = [o for o in source_orders(orders, SEED_DAY - timedelta(days=13), SEED_DAY) if o["status"] == "delivered"]
    assert [(Decimal(str(r[0])), r[1], r[2], r[3]) for r in rows[1:]] == [
        (o["amount"], o["order_id"], datetime.fromisoformat(o["created_at"]).replace(tzinfo=None), "delivered")
        for o in expected
    ]
    assert sheet.freeze_panes == "A2"


def test_get_after_completion_has_a_fresh_download_link(orders: Resources) -> None:
    task_id = submit(orders_request("csv"))
    run_worker(orders, receive(orders))

    view = get_task(task_id)
    assert view["status"] == "COMPLETED"
    assert view["rows"] == view["rows_written"] > 0
    assert len(view["sha256"]) == 64
    assert "response-content-disposition" in view["download_url"]
    assert datetime.fromisoformat(view["download_expires_at"]) > datetime.now(UTC)
    redirect = api_handler(http_event("GET", f"/v1/exports/{task_id}/download"), FakeContext())
    assert redirect["statusCode"] == 302
    assert redirect["headers"]["Location"].startswith("https://")


def test_a_duplicate_delivery_is_acknowledged_without_a_second_export(orders: Resources) -> None:
    task_id = submit(orders_request("csv"))
    messages = receive(orders)
    run_worker(orders, messages)
    first = task_item(orders, task_id)

    assert run_worker(orders, messages) == {"batchItemFailures": []}

    assert task_item(orders, task_id) == first
    assert len(s3_objects(orders)) == 1


class NoFilters(BaseModel):
    """Test export types take no filters."""


class FlakyExport(ExportType):
    """Fails like a throttled data source a given number of times, then works."""

    name = "flaky"
    description = "test"
    filters_model = NoFilters
    failures: ClassVar[int] = 0

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER)]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        if FlakyExport.failures > 0:
            FlakyExport.failures -= 1
            raise RetryableError("source throttled")
        yield from ((n,) for n in range(10))

    def file_stem(self, filters: Any) -> str:
        return "flaky"


class HugeExport(ExportType):
    """Enough rows for several 5 MiB parts; calls ``hook`` once after ``hook_after`` rows."""

    name = "huge"
    description = "test"
    filters_model = NoFilters
    hook: ClassVar[Callable[[], None] | None] = None
    hook_after: ClassVar[int] = 30_000

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text")]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        for n in range(120_000):
            if n == HugeExport.hook_after and HugeExport.hook:
                HugeExport.hook()
            yield (n, "x" * 120)

    def file_stem(self, filters: Any) -> str:
        return "huge"


@pytest.fixture
def deps(aws: Resources) -> Any:
    """The worker's real adapters, with extra export types and small parts."""
    real = worker.dependencies()
    registry = ExportTypeRegistry([*real.registry, FlakyExport(), HugeExport()])
    return replace(
        real,
        registry=registry,
        settings=real.settings.model_copy(update={"upload_part_bytes": 5 * 1024 * 1024}),
        random=lambda: 0.0,
    )


def put_task(deps: Any, export_type: str, **fields: Any) -> Any:
    from exports.domain.ids import new_task_id
    from exports.domain.task import ExportFormat, new_task

    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=ExportFormat.CSV,
        filters={},
        now=now,
        retention=timedelta(hours=1),
    )
    task = task.model_copy(update=fields)
    deps.tasks.create(task, max_active=100)
    return task


def message_for(task: Any) -> Any:
    from exports.ports import TaskMessage

    return TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority)


def test_a_transient_failure_requeues_with_backoff_until_the_budget_is_spent(aws: Resources, deps: Any) -> None:
    FlakyExport.failures = 10
    task = put_task(deps, "flaky", max_retries=2)

    assert process_task(message_for(task), deps) is Outcome.RETRY_SCHEDULED
    again = deps.tasks.get(task.task_id)
    assert (again.status, again.retry_count, again.error.code) == (TaskStatus.PENDING, 1, "TRANSIENT_ERROR")
    # Queued again, delayed by the backoff (half of 15 s at the lowest draw): not visible yet.
    assert receive(aws) == []
    attributes = boto3.client("sqs", region_name=REGION).get_queue_attributes(
        QueueUrl=aws.queue_urls["normal"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "1"

    assert process_task(message_for(task), deps) is Outcome.RETRY_SCHEDULED
    assert process_task(message_for(task), deps) is Outcome.FAILED
    final = deps.tasks.get(task.task_id)
    assert (final.status, final.retry_count, final.attempt) == (TaskStatus.FAILED, 2, 3)
    assert final.error.code == "TRANSIENT_ERROR"
    assert not open_uploads(aws) and not s3_objects(aws)


def test_a_retry_that_succeeds_completes_the_task(aws: Resources, deps: Any) -> None:
    FlakyExport.failures = 1
    task = put_task(deps, "flaky")
    assert process_task(message_for(task), deps) is Outcome.RETRY_SCHEDULED
    assert process_task(message_for(task), deps) is Outcome.COMPLETED
    done = deps.tasks.get(task.task_id)
    assert (done.status, done.retry_count, done.result.rows) == (TaskStatus.COMPLETED, 1, 10)


def test_a_running_task_under_a_live_lease_is_not_run_twice(aws: Resources, deps: Any) -> None:
    now = datetime.now(UTC)
    task = put_task(deps, "flaky", status=TaskStatus.RUNNING, attempt=1, lease_expires_at=now + timedelta(minutes=1))
    assert process_task(message_for(task), deps) is Outcome.SKIPPED
    assert deps.tasks.get(task.task_id) == task


def test_a_task_whose_worker_died_is_reclaimed_after_its_lease(aws: Resources, deps: Any) -> None:
    FlakyExport.failures = 0
    now = datetime.now(UTC)
    task = put_task(deps, "flaky", status=TaskStatus.RUNNING, attempt=1, lease_expires_at=now - timedelta(seconds=1))
    assert process_task(message_for(task), deps) is Outcome.COMPLETED
    assert deps.tasks.get(task.task_id).attempt == 2


def test_a_task_past_its_deadline_times_out_instead_of_running(aws: Resources, deps: Any) -> None:
    task = put_task(deps, "flaky", created_at=datetime.now(UTC) - timedelta(seconds=400), timeout_sec=300)
    assert process_task(message_for(task), deps) is Outcome.TIMED_OUT
    stored = deps.tasks.get(task.task_id)
    assert (stored.status, stored.error.code) == (TaskStatus.TIMEOUT, "DEADLINE_PASSED")
    assert not s3_objects(aws)


def test_a_task_taken_away_mid_export_leaves_no_object_and_no_upload(aws: Resources, deps: Any) -> None:
    task = put_task(deps, "huge")

    def cancel_behind_the_workers_back() -> None:
        current = deps.tasks.get(task.task_id)
        deps.tasks.update(current, current.model_copy(update={"status": TaskStatus.CANCELLED}))

    HugeExport.hook = cancel_behind_the_workers_back
    try:
        assert process_task(message_for(task), deps) is Outcome.LOST_OWNERSHIP
    finally:
        HugeExport.hook = None
    assert deps.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert s3_objects(aws) == []
    assert open_uploads(aws) == []


def test_a_big_export_is_uploaded_in_several_parts(aws: Resources, deps: Any) -> None:
    task = put_task(deps, "huge")
    assert process_task(message_for(task), deps) is Outcome.COMPLETED
    done = deps.tasks.get(task.task_id)
    head = boto3.client("s3", region_name=REGION).head_object(Bucket=aws.bucket, Key=done.result.key, PartNumber=1)
    assert head["PartsCount"] >= 2
    assert done.result.bytes > 10 * 1024 * 1024


@pytest.mark.parametrize(
    "body", ["not json", json.dumps({"no": "task id"}), json.dumps({"task_id": "exp_01JUNKJUNKJUNKJUNKJUNKJUNK"})]
)
def test_poison_messages_fail_alone_and_go_back_to_sqs(orders: Resources, body: str) -> None:
    good_id = submit(orders_request("csv", days=1))
    good = receive(orders)
    poison = dict(good[0], MessageId="poison-1", Body=body)

    result = run_worker(orders, [poison, *good])

    assert result == {"batchItemFailures": [{"itemIdentifier": "poison-1"}]}
    assert task_item(orders, good_id)["status"] == "COMPLETED"


def test_invocations_running_at_once_in_one_process_answer_for_their_own_batch(orders: Resources) -> None:
    """Local mode polls every lane from threads of one process, so two invocations of the worker
    function overlap: while one waits in its export, another fails a poison message. Each must
    report its own failures (Powertools' batch processor holds a batch's state)."""
    slow_id, quick_id = submit(orders_request("csv", days=1)), submit(orders_request("csv", days=2))
    messages = receive(orders)
    slow_batch = [m for m in messages if slow_id in m["Body"]]
    quick_batch = [m for m in messages if quick_id in m["Body"]]
    poison = dict(quick_batch[0], MessageId="poison-1", Body="not json")
    arrived, release = threading.Event(), threading.Event()
    results: list[dict[str, Any]] = []

    def pause_the_export(**_: Any) -> None:
        if threading.current_thread().name == "slow-invocation":
            arrived.set()
            release.wait(10)

    events = aws_client("s3").meta.events
    events.register("before-parameter-build.s3.CreateMultipartUpload", pause_the_export)
    try:
        slow = threading.Thread(target=lambda: results.append(run_worker(orders, slow_batch)), name="slow-invocation")
        slow.start()
        assert arrived.wait(10)
        quick = run_worker(orders, [poison, *quick_batch])
    finally:
        release.set()
        slow.join(30)
        events.unregister("before-parameter-build.s3.CreateMultipartUpload", pause_the_export)

    assert quick == {"batchItemFailures": [{"itemIdentifier": "poison-1"}]}
    assert results == [{"batchItemFailures": []}]
    assert [task_item(orders, task_id)["status"] for task_id in (slow_id, quick_id)] == ["COMPLETED"] * 2


def test_the_handler_hands_the_invocations_remaining_time_to_each_delivery(
    orders: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []

    def process_delivery(message, delivery, deps, remaining_ms):
        seen.append(remaining_ms())
        return Outcome.SKIPPED

    # The handler imports it where it uses it (at each record), so the service module's is replaced.
    monkeypatch.setattr(deliveries, "process_delivery", process_delivery)
    submit(orders_request())
    run_worker(orders, receive(orders))
    assert seen == [FakeContext.get_remaining_time_in_millis()]
