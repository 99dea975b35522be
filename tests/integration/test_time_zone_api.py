"""``timezone`` on POST /v1/exports against moto: validated (422 naming the field and saying what
is accepted), recorded on the task and its view, part of the dedup key and of the body an
Idempotency-Key is bound to."""

import csv
import io
import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from exports.accepting.admission_rules import dedup_key
from functions.submit import handler as api
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.integration.test_export_types_moto import finished, run_queued, scan, shop  # noqa: F401  (the fixture)
from tests.integration.test_export_types_moto import submit as moto_submit

BODY: dict[str, Any] = {
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
}


def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    result = api.lambda_handler(http_event(method, path, body, user="alice", headers=headers), FakeContext())
    answer_headers = {name.lower(): value for name, value in (result.get("headers") or {}).items()}
    return {"http": result["statusCode"], "headers": answer_headers, **json.loads(result["body"] or "{}")}


def submit(body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    return call("POST", "/v1/exports", body, headers)


def task_items(aws: Resources) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=aws.tasks_table)["Items"]
    return [item for item in items if "user_id" in item]


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "europe/berlin", "", "localtime", "Factory", "../../etc/passwd", "CET ", 7, None]
)
def test_an_unknown_zone_is_a_422_naming_timezone_and_what_is_accepted(aws: Resources, zone: Any) -> None:
    answer = submit({**BODY, "timezone": zone})

    assert answer["http"] == 422
    assert answer["error"]["field"] == "timezone"
    if isinstance(zone, str) and zone:
        message = answer["error"]["message"]
        assert "IANA time zone name from the tz database" in message
        assert "Europe/Berlin" in message and "Etc/UTC" in message
    assert task_items(aws) == []


def test_the_task_records_its_zone_and_its_view_shows_it(aws: Resources) -> None:
    accepted = submit({**BODY, "timezone": "Asia/Kathmandu"})
    default = submit({**BODY, "format": "xlsx"})

    assert accepted["http"] == default["http"] == 202
    stored = {item["task_id"]["S"]: item for item in task_items(aws)}
    assert stored[accepted["task_id"]]["timezone"] == {"S": "Asia/Kathmandu"}
    assert stored[default["task_id"]]["timezone"] == {"S": "Etc/UTC"}
    assert call("GET", f"/v1/exports/{accepted['task_id']}")["timezone"] == "Asia/Kathmandu"
    assert call("GET", f"/v1/exports/{default['task_id']}")["timezone"] == "Etc/UTC"


def test_an_alias_of_utc_is_the_default_zone(aws: Resources) -> None:
    first = submit({**BODY, "timezone": "UTC"})
    second = submit(BODY)

    assert call("GET", f"/v1/exports/{first['task_id']}")["timezone"] == "Etc/UTC"
    assert second["task_id"] == first["task_id"] and second["deduplicated"] is True


def test_two_zones_are_two_exports_one_zone_is_one(aws: Resources) -> None:
    berlin = submit({**BODY, "timezone": "Europe/Berlin"})
    kathmandu = submit({**BODY, "timezone": "Asia/Kathmandu"})
    utc = submit(BODY)
    berlin_again = submit({**BODY, "timezone": "Europe/Berlin"})

    assert len({berlin["task_id"], kathmandu["task_id"], utc["task_id"]}) == 3
    assert berlin_again["task_id"] == berlin["task_id"] and berlin_again["deduplicated"] is True
    assert len(task_items(aws)) == 3


def test_the_dedup_key_of_the_default_zone_is_the_key_of_before_zones() -> None:
    before = dedup_key("alice", "orders", "csv", {"date_from": "2025-03-30"}, False, timeout_sec=300)
    assert dedup_key("alice", "orders", "csv", {"date_from": "2025-03-30"}, False, 300, timezone="Etc/UTC") == before
    assert dedup_key("alice", "orders", "csv", {"date_from": "2025-03-30"}, False, 300, timezone="UTC") == before
    berlin = dedup_key("alice", "orders", "csv", {"date_from": "2025-03-30"}, False, 300, timezone="Europe/Berlin")
    assert berlin != before


def test_an_idempotency_key_is_bound_to_the_zone(aws: Resources) -> None:
    key = {"Idempotency-Key": "tz-1"}
    first = submit({**BODY, "timezone": "Europe/Berlin"}, headers=key)
    refused = submit({**BODY, "timezone": "Asia/Kathmandu"}, headers=key)
    replayed = submit({**BODY, "timezone": "Europe/Berlin"}, headers=key)

    assert first["http"] == 202
    assert (refused["http"], refused["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert replayed["task_id"] == first["task_id"] and replayed["headers"]["idempotent-replayed"] == "true"


def test_the_default_zone_given_or_left_out_is_the_same_idempotent_body(aws: Resources) -> None:
    key = {"Idempotency-Key": "tz-2"}
    first = submit(BODY, headers=key)
    replayed = submit({**BODY, "timezone": "Etc/UTC"}, headers=key)

    assert replayed["task_id"] == first["task_id"] and replayed["headers"]["idempotent-replayed"] == "true"


def test_a_dynamodb_export_in_kathmandu_writes_its_instants_there(shop: Resources) -> None:  # noqa: F811
    """The customers type reads DynamoDB (a code-defined type: its date-time columns are UTC
    instants); submitted in a zone, the worker writes them there."""
    filters = {"signed_up_from": (SEED_DAY - timedelta(days=400)).isoformat(), "signed_up_to": SEED_DAY.isoformat()}
    task_id = moto_submit(
        {"export_type": "customers", "format": "csv", "filters": filters, "timezone": "Asia/Kathmandu"}
    )

    run_queued(shop)

    view, body = finished(task_id)
    assert view["timezone"] == "Asia/Kathmandu"
    header, *rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    assert header[7] == "Signed up at (Asia/Kathmandu)"
    expected = {c["customer_id"]: c["signed_up_at"] for c in scan(shop.customers_table)}
    for row in rows:
        written = datetime.fromisoformat(row[7])
        assert written.utcoffset() == timedelta(hours=5, minutes=45)
        assert written == datetime.fromisoformat(expected[row[0]])
    assert row[6] == row[6][:10]  # the sign-up date is a date, unchanged
