"""The export types as a user meets them: `make run`'s stack in its own process, over real HTTP,
with the repository's exports.toml on its embedded PostgreSQL."""

import csv
import gzip
import hashlib
import io
import json
import time
from decimal import Decimal
from typing import Any

import openpyxl
import psycopg
import pyarrow.parquet as pq
import pytest
import requests

from exports.core.task import ExportFormat
from local_stack.demo_orders import OrderStatus
from tests.pdf_reading import page_lines, qpdf_check, reader, render
from tests.stack_process import Stack, recent

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(postgres_stack: Stack) -> Stack:
    return postgres_stack


def export(stack: Stack, body: dict[str, Any], user: str = "alice") -> tuple[dict[str, Any], bytes]:
    """Submit as ``user``, wait until the task ends, download the file through its link."""
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
    assert answer.status_code == 202, answer.text
    return finished(stack, answer.json()["task_id"], user)


def finished(stack: Stack, task_id: str, user: str = "alice") -> tuple[dict[str, Any], bytes]:
    """Wait until ``user``'s task ends; it must be COMPLETED: its view and its file."""
    deadline = time.monotonic() + 60
    while True:
        view = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers(user), timeout=10).json()
        if view["status"] not in ("PENDING", "RUNNING") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert view["status"] == "COMPLETED", view
    download = requests.get(view["download_url"], timeout=10)
    assert download.status_code == 200
    assert view["file_name"] in download.headers["Content-Disposition"]
    assert hashlib.sha256(download.content).hexdigest() == view["sha256"]
    assert len(download.content) == view["size_bytes"]
    return view, download.content


def test_the_stack_offers_the_declared_types_with_their_schemas(stack: Stack) -> None:
    listed = requests.get(f"{stack.url}/v1/export-types", headers=stack.headers(), timeout=10).json()["items"]
    every = [fmt.value for fmt in ExportFormat]
    assert {item["name"]: item["formats"] for item in listed} == {
        "orders": every,
        "customers": every,
        "sales_report": every,
        "generated_orders": every,
        "order_changes": every,
        "orders_dynamodb": every,
        "customers_api": every,
    }
    orders = next(item for item in listed if item["name"] == "orders")["filters_schema"]
    assert sorted(orders["required"]) == ["date_from", "date_to"] and orders["additionalProperties"] is False
    assert orders["properties"]["status"]["enum"][:2] == ["pending", "paid"]


def test_orders_come_from_postgresql_exactly_as_the_database_holds_them(stack: Stack) -> None:
    filters = {"date_from": recent(30), "date_to": recent(0), "status": "delivered"}
    view, body = export(stack, {"export_type": "orders", "format": "csv", "filters": filters})

    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    with psycopg.connect(stack.database_uri) as conn:
        expected = conn.execute(
            "SELECT order_id, amount::text FROM orders WHERE tenant_id = 'acme' AND order_date BETWEEN %s AND %s"
            " AND status = 'delivered'"
            " ORDER BY order_date, order_id",
            [recent(30), recent(0)],
        ).fetchall()
    assert [(row[0], row[10]) for row in rows[1:]] == expected
    assert view["rows"] == len(expected) > 50


def test_orders_download_as_a_pdf_table_of_the_databases_rows(stack: Stack) -> None:
    filters = {
        "date_from": recent(30),
        "date_to": recent(0),
        "status": "delivered",
        "columns": ["order_id", "customer_name", "amount"],
    }
    view, body = export(stack, {"export_type": "orders", "format": "pdf", "filters": filters})

    assert view["file_name"].endswith(".pdf") and body.startswith(b"%PDF-1.7")
    assert qpdf_check(body).returncode == 0
    with psycopg.connect(stack.database_uri) as conn:
        expected = conn.execute(
            "SELECT order_id, customer_name, to_char(amount, 'FM999,999,990.00') FROM orders"
            " WHERE tenant_id = 'acme' AND order_date BETWEEN %s AND %s AND status = 'delivered'"
            " ORDER BY order_date, order_id",
            [recent(30), recent(0)],
        ).fetchall()
    document = reader(body)
    lines = [line.text for page in document.pages for line in page_lines(page)]
    assert "status = delivered" in lines[1] and lines[2].startswith("Generated: ")
    shown = [line for line in lines if line.startswith("ORD")]
    assert shown == [" ".join(row) for row in expected]
    assert view["rows"] == len(expected) > 50
    image = render(body, 1)
    assert image.dark_share(0.0, 1.0) > 0.005 and image.grey_share(0.05, 0.15) > 0.01


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "parquet"])
def test_orders_come_from_postgresql_exactly_in_json_lines_and_parquet(stack: Stack, fmt: str) -> None:
    filters = {"date_from": recent(30), "date_to": recent(0), "status": "delivered"}
    view, body = export(stack, {"export_type": "orders", "format": fmt, "filters": filters})

    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(body))
        got = list(zip(table.column("order_id").to_pylist(), table.column("amount").to_pylist(), strict=True))
    else:
        text = gzip.decompress(body) if fmt == "jsonl.gz" else body
        records = [json.loads(line, parse_float=Decimal) for line in text.decode("utf-8").splitlines()]
        got = [(record["order_id"], record["amount"]) for record in records]
    with psycopg.connect(stack.database_uri) as conn:
        expected = conn.execute(
            "SELECT order_id, amount FROM orders WHERE tenant_id = 'acme' AND order_date BETWEEN %s AND %s"
            " AND status = 'delivered' ORDER BY order_date, order_id",
            [recent(30), recent(0)],
        ).fetchall()
    assert got == expected
    assert view["rows"] == len(expected) > 50 and view["file_name"].endswith(f".{fmt}")


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"date_from": 0, "date_to": "2025-01-01"}, "filters.date_from"),
        ({"date_from": "2025-01-01T00:00:00Z", "date_to": "2025-01-02"}, "filters.date_from"),
        ({"date_from": "2025-01-02", "date_to": "2025-01-01"}, "filters.date_to"),
        ({"date_from": "2025-01-01", "date_to": "2025-01-02", "status": "lost"}, "filters.status"),
        ({"date_from": "2025-01-01", "date_to": "2025-01-02", "columns": ["nope"]}, "filters.columns"),
    ],
)
def test_declared_parameters_refuse_bad_filters_by_name(stack: Stack, filters: dict[str, Any], field: str) -> None:
    body: dict[str, Any] = {"export_type": "orders", "filters": filters}
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(), timeout=10)

    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field


def test_the_declared_dynamodb_type_reads_the_demo_table(stack: Stack) -> None:
    filters = {"date_from": recent(10), "date_to": recent(0), "status": ["paid", "shipped"]}
    view, body = export(stack, {"export_type": "orders_dynamodb", "format": "xlsx", "filters": filters})

    rows = list(openpyxl.load_workbook(io.BytesIO(body)).active.iter_rows(values_only=True))
    assert rows[0] == ("Order ID", "Order date", "Created at (UTC)", "Customer", "Status", "Amount", "Currency")
    assert len(rows) - 1 == view["rows"] > 0
    assert {row[4] for row in rows[1:]} <= {"paid", "shipped"}


def test_a_customers_list_downloads_as_csv_gz(stack: Stack) -> None:
    filters = {"signed_up_from": recent(365), "signed_up_to": recent(0), "countries": ["DE", "FR", "JP"]}
    view, body = export(stack, {"export_type": "customers", "format": "csv.gz", "filters": filters})

    rows = list(csv.reader(io.StringIO(gzip.decompress(body).decode("utf-8"), newline="")))
    assert view["file_name"] == f"customers_{recent(365)}_{recent(0)}.csv.gz"
    assert rows[0][:5] == ["Customer ID", "Name", "Email", "Phone", "Country"]
    assert len(rows) - 1 == view["rows"] > 100
    assert {row[4] for row in rows[1:]} == {"DE", "FR", "JP"}
    assert [row[6] for row in rows[1:]] == sorted(row[6] for row in rows[1:])


def test_a_sales_report_downloads_as_a_workbook_with_a_row_per_day_and_status(stack: Stack) -> None:
    filters = {"date_from": recent(20), "date_to": recent(0), "currency": "USD"}
    view, body = export(stack, {"export_type": "sales_report", "format": "xlsx", "filters": filters})

    sheet = openpyxl.load_workbook(io.BytesIO(body)).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:4] == ("Day", "Status", "Currency", "Orders")
    assert len(rows) - 1 == view["rows"] == 21 * len(OrderStatus)
    assert {row[2] for row in rows[1:]} == {"USD"}
    assert sum(row[3] for row in rows[1:]) > 0


@pytest.mark.parametrize(
    ("export_type", "field", "raw_value", "message"),
    [
        ("sales_report", "currency", '"\\ud800"', "lone surrogate"),
        ("sales_report", "currency", '"EU\\u0000R"', "NUL"),
        ("orders_dynamodb", "status", '["paid", "\\udfff"]', "lone surrogate"),
    ],
    ids=["a lone surrogate (PostgreSQL)", "a NUL (PostgreSQL)", "a lone surrogate in a list (DynamoDB)"],
)
def test_text_no_source_can_take_is_a_422_at_submit_not_a_500(
    stack: Stack, export_type: str, field: str, raw_value: str, message: str
) -> None:
    """Issue 23: a lone surrogate in a declared string filter answered 500 (the dedup key's UTF-8
    encoding), NUL was accepted and failed in the worker. The filter's own rule refuses both."""
    raw = (
        f'{{"export_type": "{export_type}", "filters": {{"date_from": "{recent(3)}", "date_to": "{recent(0)}", '
        f'"{field}": {raw_value}}}}}'
    )
    headers = {**stack.headers(), "Content-Type": "application/json"}

    answer = requests.post(f"{stack.url}/v1/exports", data=raw.encode(), headers=headers, timeout=10)

    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["field"] == f"filters.{field}"
    assert message in error["message"]
