"""The export types on moto: listed by the API, run by the worker handler from SQS, their files
checked against the tables; and the example of docs/export-types.md run end to end."""

import csv
import io
import json
import re
import sys
import types
from collections import defaultdict
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import openpyxl
import pytest

from examples.demo_plugins.customers import CustomersExport, CustomersFilters
from examples.demo_plugins.dynamodb_customers import DynamoCustomersReader
from examples.demo_plugins.dynamodb_orders import DynamoOrdersReader
from exports.core.aws.dynamodb_items import from_item
from exports.core.config.names import Names
from exports.core.export_type import Cursor, Row
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat
from exports.running.messages import process_task
from functions.submit.handler import lambda_handler as api_handler
from functions.worker import handler as worker
from local_stack.demo_customers import demo_customers
from local_stack.demo_orders import OrderStatus
from local_stack.embedded_aws import REGION, Resources, put_items
from local_stack.worker_loop import to_sqs_event
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.integration.test_export_continuation import export_deps

DOCS = Path(__file__).resolve().parents[2] / "docs" / "export-types.md"
CUSTOMERS = 1_500


@pytest.fixture
def shop(orders: Resources) -> Resources:
    """Demo orders and demo customers in moto."""
    put_items(orders.customers_table, demo_customers(SEED_DAY, CUSTOMERS))
    return orders


def call(event: dict[str, Any]) -> tuple[int, Any]:
    result = api_handler(event, FakeContext())
    return result["statusCode"], json.loads(result["body"])


def submit(body: dict[str, Any]) -> str:
    status, answer = call(http_event("POST", "/v1/exports", body))
    assert status == 202, answer
    return answer["task_id"]


def run_queued(aws: Resources) -> None:
    """Deliver every queued message to the worker handler, as the event source would."""
    sqs = boto3.client("sqs", region_name=REGION)
    for url in aws.queue_urls.values():
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])
        if messages:
            event = to_sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:exports-tasks", REGION)
            assert worker.lambda_handler(event, FakeContext()) == {"batchItemFailures": []}


def finished(task_id: str) -> tuple[dict[str, Any], bytes]:
    status, view = call(http_event("GET", f"/v1/exports/{task_id}"))
    assert status == 200 and view["status"] == "COMPLETED", view
    record = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=Names.TASKS_TABLE, Key={"task_id": {"S": task_id}}
    )["Item"]
    key = from_item(record)["result"]["key"]
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=Names.RESULTS_BUCKET, Key=key)["Body"].read()
    return view, body


def scan(table: str) -> Iterator[dict[str, Any]]:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for page in dynamodb.get_paginator("scan").paginate(TableName=table):
        yield from (from_item(item, exact=True) for item in page["Items"])


def test_the_api_lists_every_type_with_its_formats_and_filter_schema(aws: Resources) -> None:
    status, body = call(http_event("GET", "/v1/export-types"))

    assert status == 200
    listed = {item["name"]: item for item in body["items"]}
    assert set(listed) == {"orders", "customers", "sales_report"}
    assert all(item["formats"] == [fmt.value for fmt in ExportFormat] for item in listed.values())
    assert set(listed["customers"]["filters_schema"]["required"]) == {"signed_up_from", "signed_up_to"}
    assert "countries" in listed["customers"]["filters_schema"]["properties"]
    assert set(listed["sales_report"]["filters_schema"]["required"]) == {"date_from", "date_to", "currency"}


def test_submit_refuses_bad_customers_filters_naming_the_field(aws: Resources) -> None:
    filters = {"signed_up_from": "2025-01-01", "signed_up_to": "2025-01-02", "countries": ["de"]}
    status, answer = call(http_event("POST", "/v1/exports", {"export_type": "customers", "filters": filters}))
    assert (status, answer["error"]["field"]) == (422, "filters.countries")


def test_a_customers_export_holds_the_customers_of_the_range_and_countries(shop: Resources) -> None:
    filters = {"signed_up_from": (SEED_DAY - timedelta(days=400)).isoformat(), "signed_up_to": SEED_DAY.isoformat()}
    task_id = submit({"export_type": "customers", "format": "csv", "filters": {**filters, "countries": ["DE", "CN"]}})

    run_queued(shop)

    view, body = finished(task_id)
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    expected = sorted(
        (
            c
            for c in scan(shop.customers_table)
            if filters["signed_up_from"] <= c["signup_day"] <= filters["signed_up_to"] and c["country"] in ("DE", "CN")
        ),
        key=lambda c: (c["signup_day"], c["signed_up_at"]),
    )
    assert rows[0] == ["Customer ID", "Name", "Email", "Phone", "Country", "City", "Sign-up date",
                       "Signed up at (UTC)", "Plan", "Marketing opt-in"]  # fmt: skip
    assert [row[0] for row in rows[1:]] == [c["customer_id"] for c in expected]
    assert view["rows"] == len(expected) > 100
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["Phone"] == "'" + expected[0]["phone"]  # "+49 ..." would be a formula in a spreadsheet
    assert first["Signed up at (UTC)"] == expected[0]["signed_up_at"].replace("T", " ").removesuffix("+00:00")
    assert view["file_name"] == f"customers_{filters['signed_up_from']}_{filters['signed_up_to']}.csv"


def test_the_customers_reader_resumes_from_dynamodb_keys_mid_day(shop: Resources) -> None:
    reader = DynamoCustomersReader(boto3.client("dynamodb", region_name=REGION), shop.customers_table)
    filters = CustomersFilters(signed_up_from=SEED_DAY - timedelta(days=60), signed_up_to=SEED_DAY)
    whole = [row for page in CustomersExport(reader).pages(filters) for row in page.rows]
    export = CustomersExport(reader, page_rows=1)

    resumed: list[Row] = []
    cursor: Cursor | None = None
    mid_day = 0
    while (page := next(export.pages(filters, cursor), None)) is not None:
        resumed += page.rows
        cursor = page.cursor
        assert cursor is not None  # each page of this reader says where to go on from
        mid_day += cursor["key"] is not None

    assert resumed == whole and len(whole) > 20
    assert mid_day >= len(whole) - 61  # every row but a day's last was followed by a mid-day key


def test_a_sales_report_xlsx_totals_the_orders_table_per_day_and_status(orders: Resources) -> None:
    day_from, day_to = SEED_DAY - timedelta(days=29), SEED_DAY
    filters = {"date_from": day_from.isoformat(), "date_to": day_to.isoformat(), "currency": "CNY"}
    task_id = submit({"export_type": "sales_report", "format": "xlsx", "filters": filters})

    run_queued(orders)

    view, body = finished(task_id)
    sheet = openpyxl.load_workbook(io.BytesIO(body)).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("Day", "Status", "Currency", "Orders", "Items", "Amount", "Average order")
    assert len(rows) - 1 == view["rows"] == 30 * len(OrderStatus)
    totals: dict[tuple[date, str], list[Any]] = defaultdict(lambda: [0, 0, Decimal(0)])
    for order in scan(orders.orders_table):
        if order["currency"] == "CNY" and day_from.isoformat() <= order["order_day"] <= day_to.isoformat():
            total = totals[(date.fromisoformat(order["order_day"]), order["status"])]
            total[0] += 1
            total[1] += int(order["item_count"])
            total[2] += order["amount"]
    for day_cell, status, currency, count, items, amount, average in rows[1:]:
        expected = totals[(day_cell.date(), status)]
        assert (currency, count, items, Decimal(str(amount))) == ("CNY", *expected)
        assert (average is None) == (count == 0)
    assert sum(row[3] for row in rows[1:]) > 20
    assert sheet["F2"].number_format == "#,##0.00" and sheet["A2"].number_format == "yyyy-mm-dd"
    assert sheet.freeze_panes == "A2"


def load_docs_example() -> types.ModuleType:
    """The python block under ``<!-- example: refunds -->`` in docs/export-types.md, as a module."""
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: refunds -->\n```python\n(.*?)```", text, re.DOTALL)
    assert match, "the example is missing from docs/export-types.md"
    module = types.ModuleType("refunds_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(match.group(1), str(DOCS), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def test_the_documented_example_type_runs_end_to_end_through_the_worker(orders: Resources) -> None:
    example = load_docs_example()
    reader = DynamoOrdersReader(boto3.client("dynamodb", region_name=REGION), orders.orders_table)
    deps = export_deps(example.RefundsExport(reader))
    day_from = SEED_DAY - timedelta(days=59)
    task = deps.tasks.get(
        submit_with(deps, "refunds", {"date_from": day_from.isoformat(), "date_to": SEED_DAY.isoformat()})
    )

    process_task(TaskMessage(task.task_id, task.export_type, task.priority), deps)

    done = deps.tasks.get(task.task_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=orders.bucket, Key=done.result.key)["Body"].read()
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    refunded = sorted(
        (o for o in scan(orders.orders_table) if o["status"] == "refunded" and o["order_day"] >= day_from.isoformat()),
        key=lambda o: (o["order_day"], o["created_at"]),
    )
    assert rows[0] == ["Order ID", "Order date", "Customer", "Refunded", "Currency"]
    assert [(r[0], r[3]) for r in rows[1:]] == [(o["order_id"], format(o["amount"], "f")) for o in refunded]
    assert done.result.rows == len(refunded) > 0
    assert done.result.file_name == f"refunds_{day_from.isoformat()}_{SEED_DAY.isoformat()}.csv"
    assert example.RefundsExport(reader).resumable


def submit_with(deps: Any, export_type: str, filters: dict[str, Any]) -> str:
    """A task of a type only ``deps`` knows (the API function has the built-in types)."""
    from exports.core.ids import new_task_id
    from exports.core.task import ExportFormat, new_task

    now = datetime.now().astimezone()
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=ExportFormat.CSV,
        filters=filters,
        now=now,
        retention=timedelta(hours=1),
    )
    deps.tasks.create(task, max_active=100)
    return task.task_id
