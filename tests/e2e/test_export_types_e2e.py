"""The export types as a user meets them: `make run`'s stack in its own process, over real HTTP."""

import csv
import gzip
import hashlib
import io
import time
from collections.abc import Iterator
from typing import Any

import openpyxl
import pytest
import requests

from exports.export_types.orders import OrderStatus
from tests.stack_process import Stack, recent, running_stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=2000) as running:
        yield running


def export(stack: Stack, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Submit, wait until the task ends, download the file through its link."""
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(), timeout=10)
    assert answer.status_code == 202, answer.text
    task_id = answer.json()["task_id"]
    deadline = time.monotonic() + 60
    while True:
        view = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers(), timeout=10).json()
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


def test_the_stack_offers_the_three_types(stack: Stack) -> None:
    listed = requests.get(f"{stack.url}/v1/export-types", headers=stack.headers(), timeout=10).json()["items"]
    assert {item["name"]: item["formats"] for item in listed} == {
        "orders": ["csv", "csv.gz", "xlsx"],
        "customers": ["csv", "csv.gz", "xlsx"],
        "sales_report": ["csv", "csv.gz", "xlsx"],
    }


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
