"""Tenancy as an attacker meets it: `make run`'s stack in its own process over real HTTP, the
repository's exports.toml on its embedded PostgreSQL. alice (tenant acme), bob (globex) and
carol (initech, admin group) are local-users.toml's; dave's token carries no tenant claim.

Every file's rows are checked against the database read independently: no row of another
tenant ever appears, whatever a caller puts in the request."""

import csv
import io
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
import requests
from boto3.dynamodb.types import TypeDeserializer

from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import Stack, recent

pytestmark = pytest.mark.e2e

TENANTS = {"alice": "acme", "bob": "globex", "carol": "initech"}
DAYS = {"date_from": recent(20), "date_to": recent(0)}
ORDERS_SQL = "SELECT order_id FROM orders WHERE tenant_id = %s AND order_date BETWEEN %s AND %s"


@pytest.fixture(scope="module")
def stack(postgres_stack: Stack) -> Stack:
    return postgres_stack


def csv_rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"), newline="")))[1:]


def db(stack: Stack, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(stack.database_uri) as conn:
        return conn.execute(query, params).fetchall()


def post(stack: Stack, user: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(
        f"{stack.url}/v1/exports", json=body, headers={**stack.headers(user), **(headers or {})}, timeout=10
    )


def task_count(stack: Stack, user: str) -> int:
    answer = requests.get(f"{stack.url}/v1/exports?limit=100", headers=stack.headers(user), timeout=10)
    return len(answer.json()["items"])


def dynamodb_orders(stack: Stack, tenant: str, statuses: set[str]) -> set[str]:
    """The demo DynamoDB orders of ``tenant`` in DAYS, read with boto3."""
    items = stack.client("dynamodb").scan(TableName="exports-demo-orders")["Items"]
    plain = [{name: TypeDeserializer().deserialize(value) for name, value in item.items()} for item in items]
    return {
        item["order_id"]
        for item in plain
        if item["tenant_id"] == tenant
        and DAYS["date_from"] <= item["order_day"] <= DAYS["date_to"]
        and item["status"] in statuses
    }


# Each scoped type: a request, and the order ids (or first cells) the tenant's file must hold.
CASES: dict[str, tuple[dict[str, Any], Callable[[Stack, str], list[Any]]]] = {
    "orders with an enum and chosen columns": (
        {"export_type": "orders", "filters": {**DAYS, "status": "paid", "columns": ["status", "order_id"]}},
        lambda stack, tenant: [
            ("paid", row[0])
            for row in db(
                stack,
                ORDERS_SQL + " AND status = 'paid' ORDER BY order_date, order_id",
                tenant,
                DAYS["date_from"],
                DAYS["date_to"],
            )
        ],
    ),
    "customers with a list parameter": (
        {
            "export_type": "customers",
            "filters": {"signed_up_from": recent(365), "signed_up_to": recent(0), "countries": ["CN", "US", "DE"]},
        },
        lambda stack, tenant: [
            row[0]
            for row in db(
                stack,
                "SELECT customer_id FROM customers WHERE tenant_id = %s AND signup_date BETWEEN %s AND %s "
                "AND country = ANY(%s) ORDER BY signup_date, customer_id",
                tenant,
                recent(365),
                recent(0),
                ["CN", "US", "DE"],
            )
        ],
    ),
    "a sales report with a string parameter": (
        {"export_type": "sales_report", "filters": {**DAYS, "currency": "EUR"}},
        lambda stack, tenant: [
            db(
                stack,
                "SELECT count(*) FROM orders WHERE tenant_id = %s AND order_date BETWEEN %s AND %s "
                "AND currency = 'EUR'",
                tenant,
                DAYS["date_from"],
                DAYS["date_to"],
            )[0][0]
        ],
    ),
    "generated orders": (
        {"export_type": "generated_orders", "filters": {"rows": 30}},
        lambda stack, tenant: [f"{tenant}-GEN-{n:08d}" for n in range(1, 31)],
    ),
}


def file_values(case: str, body: bytes) -> list[Any]:
    rows = csv_rows(body)
    if case.startswith("orders"):
        return [tuple(row) for row in rows]
    if case.startswith("a sales report"):
        return [sum(int(row[3]) for row in rows)]
    if case.startswith("generated"):
        return [row[1] for row in rows]
    return [row[0] for row in rows]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_request_gives_each_tenant_exactly_its_own_rows(stack: Stack, case: str) -> None:
    request, expected = CASES[case]
    files = {}
    for user in ("alice", "bob"):
        headers = stack.headers(user)
        answer = requests.post(
            f"{stack.url}/v1/exports", json={**request, "format": "csv"}, headers=headers, timeout=10
        )
        assert answer.status_code == 202, answer.text
        files[user] = file_values(case, finished(stack, answer.json()["task_id"], user)[1])
        assert files[user] == expected(stack, TENANTS[user]), (case, user)
    assert files["alice"] != files["bob"]


def test_the_dynamodb_type_gives_each_tenant_its_own_items(stack: Stack) -> None:
    statuses = ["paid", "shipped", "delivered"]
    for user in ("alice", "bob"):
        request = {"export_type": "orders_dynamodb", "format": "csv", "filters": {**DAYS, "status": statuses}}
        answer = post(stack, user, request)
        assert answer.status_code == 202, answer.text
        ids = {row[0] for row in csv_rows(finished(stack, answer.json()["task_id"], user)[1])}
        assert ids == dynamodb_orders(stack, TENANTS[user], set(statuses)) and ids, user


def test_the_http_type_gives_each_tenant_its_own_customers(stack: Stack) -> None:
    for user in ("alice", "bob"):
        answer = post(stack, user, {"export_type": "customers_api", "format": "csv", "filters": {"country": "DE"}})
        assert answer.status_code == 202, answer.text
        ids = [row[0] for row in csv_rows(finished(stack, answer.json()["task_id"], user)[1])]
        # The demo customer service serves the customers the demo database holds.
        query = "SELECT customer_id FROM customers WHERE tenant_id = %s AND country = 'DE' ORDER BY customer_id"
        assert ids == [row[0] for row in db(stack, query, TENANTS[user])] and ids, user


@pytest.mark.parametrize(
    "export_type", ["orders", "customers", "sales_report", "generated_orders", "orders_dynamodb", "customers_api"]
)
def test_a_tenant_claim_in_the_filters_is_refused_by_name_and_stores_nothing(stack: Stack, export_type: str) -> None:
    before = task_count(stack, "alice")
    schema = requests.get(f"{stack.url}/v1/export-types/{export_type}", headers=stack.headers(), timeout=10).json()
    assert "tenant_id" not in schema["filters_schema"]["properties"]
    assert "tenant_id" not in schema["filters_schema"].get("required", [])

    answer = post(stack, "alice", {"export_type": export_type, "filters": {"tenant_id": "globex"}})

    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "filters.tenant_id"
    assert task_count(stack, "alice") == before


def test_a_token_without_the_tenant_claim_is_refused_with_403_and_nothing_is_stored(stack: Stack) -> None:
    answer = post(stack, "dave", {"export_type": "orders", "filters": DAYS})

    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "CLAIM_MISSING"
    assert "custom:tenant_id" in answer.json()["error"]["message"]
    assert task_count(stack, "dave") == 0


def test_an_idempotency_key_reused_by_another_tenant_is_a_request_of_their_own(stack: Stack) -> None:
    body = {"export_type": "orders", "format": "csv", "filters": {**DAYS, "status": "refunded"}}
    key = {"Idempotency-Key": f"shared-{time.time_ns()}"}
    alice, bob = post(stack, "alice", body, key), post(stack, "bob", body, key)
    assert alice.status_code == bob.status_code == 202
    assert alice.json()["task_id"] != bob.json()["task_id"]
    assert "Idempotent-Replayed" not in bob.headers
    ids = {row[0] for row in csv_rows(finished(stack, bob.json()["task_id"], "bob")[1])}
    expected = db(stack, ORDERS_SQL + " AND status = 'refunded'", "globex", DAYS["date_from"], DAYS["date_to"])
    assert ids == {row[0] for row in expected}


def test_another_tenants_task_cannot_be_read_retried_cancelled_or_downloaded(stack: Stack) -> None:
    answer = post(stack, "alice", {"export_type": "orders", "format": "csv", "filters": {**DAYS, "status": "pending"}})
    task_id = answer.json()["task_id"]
    finished(stack, task_id)
    for method, path in [
        ("get", ""),
        ("get", "/download"),
        ("post", "/retry"),
        ("post", "/cancel"),
    ]:
        stolen = requests.request(
            method,
            f"{stack.url}/v1/exports/{task_id}{path}",
            headers=stack.headers("bob"),
            timeout=10,
            allow_redirects=False,
        )
        assert stolen.status_code == 404, (method, path, stolen.text)


def test_the_admin_type_is_invisible_to_callers_outside_its_group(stack: Stack) -> None:
    listed = requests.get(f"{stack.url}/v1/export-types", headers=stack.headers("alice"), timeout=10).json()["items"]
    assert "orders_all_tenants" not in {item["name"] for item in listed}
    one = requests.get(f"{stack.url}/v1/export-types/orders_all_tenants", headers=stack.headers("alice"), timeout=10)
    unknown = requests.get(f"{stack.url}/v1/export-types/no_such_type", headers=stack.headers("alice"), timeout=10)
    assert one.status_code == unknown.status_code == 404
    assert one.json()["error"]["code"] == unknown.json()["error"]["code"] == "UNKNOWN_EXPORT_TYPE"

    refused = post(stack, "alice", {"export_type": "orders_all_tenants", "filters": DAYS})
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "UNKNOWN_EXPORT_TYPE"
    assert "orders_all_tenants" not in refused.json()["error"]["message"].split("known types:")[1]


def test_the_admin_group_exports_every_tenants_rows_with_their_tenant(stack: Stack) -> None:
    listed = requests.get(f"{stack.url}/v1/export-types", headers=stack.headers("carol"), timeout=10).json()["items"]
    assert "orders_all_tenants" in {item["name"] for item in listed}

    answer = post(stack, "carol", {"export_type": "orders_all_tenants", "format": "csv", "filters": DAYS})
    assert answer.status_code == 202, answer.text
    rows = csv_rows(finished(stack, answer.json()["task_id"], "carol")[1])

    expected = db(
        stack,
        "SELECT tenant_id, order_id FROM orders WHERE order_date BETWEEN %s AND %s ORDER BY order_date, order_id",
        DAYS["date_from"],
        DAYS["date_to"],
    )
    assert [(row[0], row[1]) for row in rows] == [tuple(row) for row in expected]
    assert {row[0] for row in rows} == set(TENANTS.values())
