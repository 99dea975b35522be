"""The demo declaration's ``customers_api`` type through the API and the worker on moto, reading
the demo customer service ``make run`` serves (local_stack/demo_api.py) over a real socket:
each tenant's file holds its own customers, cell for cell, and a service that is down or
changes shape ends the task with a clear error and no file."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.core.config.env import Env
from exports.core.config.names import Names
from local_stack.demo_api import DemoApi, api_customer
from local_stack.demo_customers import demo_customers
from local_stack.embedded_aws import REGION, Resources
from local_stack.stack import DEMO_API_URL_ENV
from tests.builders import http_event
from tests.http_sources.conftest import Answer, Service
from tests.integration.conftest import aws  # noqa: F401 (the fixture)
from tests.integration.test_export_continuation import export_deps, invoke_until_done
from tests.integration.test_export_types_moto import call, run_queued

SHIPPED = Path(__file__).resolve().parents[2] / "exports.toml"
TODAY = date(2025, 3, 31)
CUSTOMERS = 2_000


@pytest.fixture
def demo_api(monkeypatch: pytest.MonkeyPatch, aws: Resources) -> Iterator[list[dict[str, Any]]]:  # noqa: F811
    """The demo customer service on 127.0.0.1, its URL where the declaration reads it."""
    customers = list(demo_customers(TODAY, CUSTOMERS))
    api = DemoApi(customers)
    api.start()
    monkeypatch.setenv(Env.EXPORTS_CONFIG, str(SHIPPED))
    monkeypatch.setenv(DEMO_API_URL_ENV, api.url)
    yield customers
    api.shutdown()


def submit(tenant: str, export_format: str = "csv") -> str:
    body = {"export_type": "customers_api", "format": export_format, "filters": {}}
    status, answer = call(http_event("POST", "/v1/exports", body, user=tenant, claims={"custom:tenant_id": tenant}))
    assert status == 202, answer
    return str(answer["task_id"])


def view(task_id: str, tenant: str) -> dict[str, Any]:
    status, answer = call(http_event("GET", f"/v1/exports/{task_id}", user=tenant, claims={"custom:tenant_id": tenant}))
    assert status == 200, answer
    return dict(answer)


def objects() -> list[str]:
    """The results bucket's files, and its unfinished uploads (none may be left behind)."""
    s3 = boto3.client("s3", region_name=REGION)
    listed = s3.list_objects_v2(Bucket=Names.RESULTS_BUCKET)
    uploads = s3.list_multipart_uploads(Bucket=Names.RESULTS_BUCKET).get("Uploads", [])
    return [item["Key"] for item in listed.get("Contents", [])] + [f"upload:{item['Key']}" for item in uploads]


def file_of(task_id: str) -> bytes:
    (key,) = [key for key in objects() if task_id in key]
    return bytes(boto3.client("s3", region_name=REGION).get_object(Bucket=Names.RESULTS_BUCKET, Key=key)["Body"].read())


def test_each_tenant_exports_its_own_customers_cell_for_cell(
    aws: Resources,  # noqa: F811
    demo_api: list[dict[str, Any]],
) -> None:
    acme, globex = submit("acme"), submit("globex")

    run_queued(aws)

    for task_id, tenant in ((acme, "acme"), (globex, "globex")):
        assert view(task_id, tenant)["status"] == "COMPLETED"
        rows = list(csv.reader(io.StringIO(file_of(task_id).decode("utf-8-sig"), newline="")))
        expected = [api_customer(each) for each in demo_api if each["tenant_id"] == tenant]
        assert len(rows) - 1 == len(expected) > 200  # more than one page of 200
        assert [row[0] for row in rows[1:]] == [each["id"] for each in expected]
        assert [row[1] for row in rows[1:]] == [each["name"] for each in expected]
        assert [row[3] for row in rows[1:]] == [each["address"]["city"] for each in expected]
        assert [Decimal(row[6]) for row in rows[1:]] == [each["lifetime_value"] for each in expected]
        assert [row[7] for row in rows[1:]] == [str(each["marketing_opt_in"]) for each in expected]


def test_a_long_csv_export_hands_over_and_resumes_at_the_next_pages_cursor(
    aws: Resources,  # noqa: F811
    demo_api: list[dict[str, Any]],
) -> None:
    task_id = submit("acme")
    deps = export_deps()  # the worker's own adapters, with the shipped declaration

    invocations = invoke_until_done(deps, task_id, pages=2)

    assert invocations > 1  # it ran out of time at least once and went on from its checkpoint
    rows = list(csv.reader(io.StringIO(file_of(task_id).decode("utf-8-sig"), newline="")))
    expected = [api_customer(each)["id"] for each in demo_api if each["tenant_id"] == "acme"]
    assert [row[0] for row in rows[1:]] == expected  # every customer once, in order


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch, aws: Resources) -> Iterator[Service]:  # noqa: F811
    """A service under the demo type's URL whose answers each test chooses."""
    running = Service()
    monkeypatch.setenv(Env.EXPORTS_CONFIG, str(SHIPPED))
    monkeypatch.setenv(DEMO_API_URL_ENV, running.url)
    yield running
    running.close()


def test_a_service_that_rate_limits_past_a_runs_patience_is_retried_with_no_file(
    aws: Resources,  # noqa: F811
    broken: Service,
) -> None:
    broken.route = lambda _asked: Answer({"error": "slow down"}, status=429, headers={"Retry-After": "3600"})
    task_id = submit("acme")

    run_queued(aws)

    shown = view(task_id, "acme")
    assert shown["status"] == "PENDING" and shown["retry_count"] == 1, shown
    # The caller reads a code and a reference; the service's answer is in the worker's log only.
    assert task_id in shown["error"]["message"] and "3600" not in shown["error"]["message"]
    assert objects() == []


def test_a_page_that_changes_shape_fails_the_task_naming_the_field_with_no_file(
    aws: Resources,  # noqa: F811
    broken: Service,
) -> None:
    broken.route = lambda _asked: Answer({"data": [{"id": "C1", "name": "x"}], "next_cursor": None})
    task_id = submit("acme", "xlsx")

    run_queued(aws)

    shown = view(task_id, "acme")
    assert shown["status"] == "FAILED", shown
    assert shown["error"]["code"] == "SOURCE_DATA_INVALID"
    assert task_id in shown["error"]["message"] and "email" not in shown["error"]["message"]  # in the log
    assert objects() == []
