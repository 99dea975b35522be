"""`make run`'s stack as a new user meets it: a separate process, driven over real HTTP."""

import base64
import csv
import hashlib
import hmac
import io
import json
import signal
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

import openpyxl
import pytest
import requests

from exports.core.aws.dynamodb_items import from_item
from exports.core.config.names import Names
from exports.core.config.queues import LANES
from tests.receiver import receiver
from tests.stack_process import WEBHOOK_SECRET, Stack, recent, running_stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=1000, environment={"EXPORTS_WEBHOOK_SECRET": WEBHOOK_SECRET}) as running:
        yield running


def submit(stack: Stack, body: dict[str, Any], user: str = "alice") -> requests.Response:
    return requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)


def wait_until_done(stack: Stack, task_id: str, user: str = "alice") -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        task = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers(user), timeout=10).json()
        if task["status"] not in ("PENDING", "RUNNING"):
            return task
        time.sleep(0.3)
    pytest.fail(f"task {task_id} did not finish")


def source_orders(stack: Stack, date_from: str, date_to: str) -> list[dict[str, Any]]:
    pages = stack.client("dynamodb").get_paginator("scan").paginate(TableName=Names.ORDERS_TABLE)
    orders = [from_item(item, exact=True) for page in pages for item in page["Items"]]
    chosen = [o for o in orders if date_from <= o["order_day"] <= date_to]
    return sorted(chosen, key=lambda o: (o["order_day"], o["created_at"]))


def counts(stack: Stack) -> tuple[int, int]:
    """Items in the tasks table (tasks and admission records) and messages over all lanes."""
    items = stack.client("dynamodb").scan(TableName=Names.TASKS_TABLE, Select="COUNT")["Count"]
    sqs = stack.client("sqs")
    messages = 0
    for lane in LANES:
        url = sqs.get_queue_url(QueueName=lane.queue_name)["QueueUrl"]
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        messages += sum(int(value) for value in attributes.values())
    return items, messages


def neutralised(text: str | None) -> str:
    return "'" + text if text and text[0] in "=+-@\t\r" else (text or "")


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_submit_poll_download_and_every_row_matches_the_source(stack: Stack, fmt: str) -> None:
    date_from, date_to = recent(20), recent(0)
    accepted = submit(
        stack,
        {
            "export_type": "orders",
            "format": fmt,
            "csv_bom": True,
            "filters": {"date_from": date_from, "date_to": date_to},
        },
    )
    assert accepted.status_code == 202
    task_id = accepted.json()["task_id"]
    assert accepted.headers["Location"] == f"/v1/exports/{task_id}"

    task = wait_until_done(stack, task_id)
    assert task["status"] == "COMPLETED"
    assert task["progress"] == 100

    # The presigned link works for a plain HTTP client, like curl on the host.
    direct = requests.get(task["download_url"], timeout=10)
    assert direct.status_code == 200
    redirected = requests.get(f"{stack.url}/v1/exports/{task_id}/download", headers=stack.headers(), timeout=10)
    assert redirected.history[0].status_code == 302
    assert redirected.content == direct.content
    assert f'filename="orders_{date_from}_{date_to}.{fmt}"' in redirected.headers["Content-Disposition"]
    assert len(direct.content) == task["size_bytes"]

    expected = source_orders(stack, date_from, date_to)
    assert task["rows"] == len(expected) > 100
    if fmt == "csv":
        assert direct.content.startswith(b"\xef\xbb\xbf")
        rows: list[Any] = list(csv.reader(io.StringIO(direct.content.decode("utf-8-sig"))))[1:]
        got: list[tuple[Any, ...]] = [
            (r[0], r[1], r[2], r[4], r[7], int(r[8]), r[9], Decimal(r[10]), r[11], r[12]) for r in rows
        ]
    else:
        sheet = openpyxl.load_workbook(io.BytesIO(direct.content)).active
        rows = list(sheet.iter_rows(min_row=2, values_only=True))
        got = [
            (
                r[0],
                r[1].date().isoformat(),
                r[2].strftime("%Y-%m-%d %H:%M:%S"),
                r[4],
                r[7],
                r[8],
                r[9],
                Decimal(str(r[10])).quantize(Decimal("0.01")),
                r[11],
                r[12] or "",
            )
            for r in rows
        ]
    assert got == [
        (
            o["order_id"],
            o["order_day"],
            datetime.fromisoformat(o["created_at"]).strftime("%Y-%m-%d %H:%M:%S"),
            o["customer_name"],
            o["status"],
            int(o["item_count"]),
            o["items"],
            o["amount"],
            o["currency"],
            # CSV's formula guard prefixes '; XLSX holds the text exactly (quotePrefix style).
            neutralised(o.get("note")) if fmt == "csv" else (o.get("note") or ""),
        )
        for o in expected
    ]


def test_one_user_cannot_see_list_or_download_anothers_task(stack: Stack) -> None:
    task_id = submit(
        stack, {"export_type": "orders", "filters": {"date_from": recent(1), "date_to": recent(0)}}
    ).json()["task_id"]
    wait_until_done(stack, task_id)
    for path in (f"/v1/exports/{task_id}", f"/v1/exports/{task_id}/download"):
        response = requests.get(f"{stack.url}{path}", headers=stack.headers("bob"), timeout=10, allow_redirects=False)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "TASK_NOT_FOUND"
    listed = requests.get(f"{stack.url}/v1/exports", headers=stack.headers("bob"), timeout=10).json()
    assert task_id not in {t["task_id"] for t in listed["items"]}
    mine = requests.get(f"{stack.url}/v1/exports", headers=stack.headers("alice"), timeout=10).json()
    assert task_id in {t["task_id"] for t in mine["items"]}


@pytest.mark.parametrize(
    ("request_kwargs", "status", "field"),
    [
        ({"json": {"export_type": "invoices", "filters": {}}}, 422, "export_type"),
        (
            {"json": {"export_type": "orders", "filters": {"date_from": "2025-13-01", "date_to": "2025-01-02"}}},
            422,
            "filters.date_from",
        ),
        (
            {"json": {"export_type": "orders", "filters": {"date_from": "2025-03-02", "date_to": "2025-03-01"}}},
            422,
            "filters.date_to",
        ),
        (
            {"json": {"export_type": "orders", "filters": {"date_from": "2024-01-01", "date_to": "2025-03-01"}}},
            422,
            "filters.date_to",
        ),
        ({"json": {"export_type": "orders", "format": "docx", "filters": {}}}, 422, "format"),
        ({"json": {"export_type": "orders", "priority": 0, "filters": {}}}, 422, "priority"),
        ({"json": {"export_type": "orders", "priority": 11, "filters": {}}}, 422, "priority"),
        ({"data": "export_type=orders", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 415, None),
        ({"data": "{", "headers": {"Content-Type": "application/json"}}, 400, None),
    ],
)
def test_invalid_requests_get_a_json_error_and_change_nothing(
    stack: Stack, request_kwargs: dict[str, Any], status: int, field: str | None
) -> None:
    before = counts(stack)
    headers = {**stack.headers(), **request_kwargs.pop("headers", {})}
    response = requests.post(f"{stack.url}/v1/exports", headers=headers, timeout=10, **request_kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] and error["message"]
    assert error.get("field") == field
    assert counts(stack) == before


def test_no_or_unknown_token_is_401(stack: Stack) -> None:
    body: dict[str, Any] = {"export_type": "orders", "filters": {"date_from": recent(1), "date_to": recent(0)}}
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic YWxpY2U6eA=="}):
        before = counts(stack)
        response = requests.post(f"{stack.url}/v1/exports", json=body, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
        assert counts(stack) == before


def test_other_methods_get_405_with_allow_and_only_get_of_the_docs_is_public(stack: Stack) -> None:
    """As API Gateway routes it (``$default`` behind the authorizer, the docs' GET routes public)."""
    response = requests.delete(f"{stack.url}/v1/exports", headers=stack.headers("alice"), timeout=10)
    assert (response.status_code, response.headers["Allow"]) == (405, "GET, POST")
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    response = requests.get(f"{stack.url}/v1/nothing-here", headers=stack.headers("alice"), timeout=10)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "NOT_FOUND")
    assert requests.get(f"{stack.url}/openapi.json", timeout=10).status_code == 200
    for method in ("POST", "DELETE"):
        assert requests.request(method, f"{stack.url}/openapi.json", timeout=10).status_code == 401


def test_a_callback_reaches_a_receiver_on_the_developers_machine_signed(stack: Stack) -> None:
    with receiver([503, 204]) as hook:
        body = {
            "export_type": "orders",
            "callback_url": hook.url,
            "filters": {"date_from": recent(3), "date_to": recent(0)},
        }
        task_id = submit(stack, body).json()["task_id"]
        calls = hook.wait_for(2)
    assert [json.loads(c.body)["data"]["status"] for c in calls] == ["COMPLETED", "COMPLETED"]
    assert calls[0].headers["webhook-id"] == calls[1].headers["webhook-id"]
    key = base64.b64decode(WEBHOOK_SECRET.removeprefix("whsec_"))
    for call in calls:
        signed = f"{call.headers['webhook-id']}.{call.headers['webhook-timestamp']}.".encode() + call.body
        assert (
            call.headers["webhook-signature"]
            == "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        )
    payload = json.loads(calls[-1].body)["data"]
    assert payload["task_id"] == task_id
    assert requests.get(payload["download_url"], timeout=10).status_code == 200
    task = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers(), timeout=10).json()
    assert task["callback"] == {"status": "DELIVERED", "attempts": 2, "last_error": None}


def test_cancel_and_retry_over_http(stack: Stack) -> None:
    body = {"export_type": "orders", "filters": {"date_from": recent(80), "date_to": recent(0)}}
    # Cancel races the worker; a task that finished first is simply not cancellable. A few tries
    # make sure the cancel itself is exercised.
    for _ in range(5):
        task_id = submit(stack, body).json()["task_id"]
        cancelled = requests.post(f"{stack.url}/v1/exports/{task_id}/cancel", headers=stack.headers(), timeout=10)
        if cancelled.status_code == 200:
            break
        assert (cancelled.status_code, cancelled.json()["error"]["code"]) == (409, "TASK_NOT_CANCELLABLE")
    assert cancelled.json()["status"] == "CANCELLED"
    assert wait_until_done(stack, task_id)["status"] == "CANCELLED"
    retried = requests.post(f"{stack.url}/v1/exports/{task_id}/retry", headers=stack.headers(), timeout=10)
    assert retried.status_code == 202
    new_task = wait_until_done(stack, retried.json()["task_id"])
    assert (new_task["status"], new_task["retry_of"]) == ("COMPLETED", task_id)
    foreign = requests.post(f"{stack.url}/v1/exports/{task_id}/retry", headers=stack.headers("bob"), timeout=10)
    assert foreign.status_code == 404


def test_identical_requests_merge_and_idempotency_keys_replay(stack: Stack) -> None:
    # 300 days of day-by-day index reads keep the first task busy for seconds: it is still active.
    body = {"export_type": "orders", "format": "xlsx", "filters": {"date_from": recent(300), "date_to": recent(0)}}
    first = submit(stack, body, user="bob").json()
    second = submit(stack, {**body, "filters": {"date_to": recent(0), "date_from": recent(300)}}, user="bob").json()
    assert (second["task_id"], second["deduplicated"]) == (first["task_id"], True)

    headers = {**stack.headers(), "Idempotency-Key": "e2e-key-1"}
    keyed: dict[str, Any] = {"export_type": "orders", "filters": {"date_from": recent(5), "date_to": recent(4)}}
    once = requests.post(f"{stack.url}/v1/exports", json=keyed, headers=headers, timeout=10)
    twice = requests.post(f"{stack.url}/v1/exports", json=keyed, headers=headers, timeout=10)
    assert once.json()["task_id"] == twice.json()["task_id"]
    assert twice.headers["Idempotent-Replayed"] == "true"
    other = requests.post(f"{stack.url}/v1/exports", json={**keyed, "format": "xlsx"}, headers=headers, timeout=10)
    assert (other.status_code, other.json()["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")


def test_docs_are_public_and_the_banner_tells_a_newcomer_what_to_do(stack: Stack) -> None:
    assert requests.get(f"{stack.url}/docs", timeout=10).status_code == 200
    deadline = time.monotonic() + 30
    # Ctrl-C with an export in flight: the stack stops at once rather than after the export.
    body = {"export_type": "orders", "format": "xlsx", "filters": {"date_from": recent(89), "date_to": recent(0)}}
    task_id = submit(stack, body).json()["task_id"]
    while (
        requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers("alice"), timeout=10).json()["status"]
        == "PENDING"
        and time.monotonic() < deadline + 30
    ):
        time.sleep(0.1)
    asked = time.monotonic()
    stack.process.send_signal(signal.SIGINT)
    stack.process.wait(timeout=30)
    assert time.monotonic() - asked < 15
    output = stack.output()
    assert stack.process.returncode == 0
    assert stack.url in output
    assert "alice-token" in output
    assert "curl" in output
    assert "stopping" in output
