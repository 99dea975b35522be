"""Hostile and absurd input to the API function: each gets a clear 4xx in the one error shape,
never a 5xx, and nothing is stored."""

import base64
import json
from typing import Any

import boto3
import pytest

from exports.core.config.limits import Limits
from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event

GOOD: dict[str, Any] = {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-02"}}


def post(raw: str | None = None, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = api_handler(http_event("POST", "/v1/exports", body, raw_body=raw, headers=headers), FakeContext())
    return result["statusCode"], json.loads(result["body"])


def with_filters(**filters: Any) -> str:
    return json.dumps({**GOOD, "filters": {**GOOD["filters"], **filters}})


def assert_clear_4xx(status: int, body: dict[str, Any], expected: int, code: str | None = None) -> None:
    assert status == expected, body
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), body
    assert body["error"]["message"]
    if code:
        assert body["error"]["code"] == code, body


def stored_items(resources: Resources) -> int:
    return boto3.client("dynamodb", region_name=REGION).scan(TableName=resources.tasks_table, Select="COUNT")["Count"]


CASES = {
    "oversized body": ("x" * (Limits.MAX_BODY_BYTES + 1), 413, "PAYLOAD_TOO_LARGE"),
    "oversized and deeply nested": ("[" * 70_000 + "]" * 70_000, 413, "PAYLOAD_TOO_LARGE"),
    "10,000 nested lists": ("[" * 10_000 + "]" * 10_000, 400, "MALFORMED_JSON"),
    "8,000 nested objects in filters": (
        '{"export_type": "orders", "filters": ' + '{"a": ' * 8_000 + "1" + "}" * 8_001,
        400,
        "MALFORMED_JSON",
    ),
    # Valid JSON: the field refuses it (issue 36: it was 400 "not valid JSON").
    "a number past the digit limit": (
        '{"export_type": "orders", "priority": ' + "9" * 5000 + "}",
        422,
        "VALIDATION_ERROR",
    ),
    "NaN": ('{"export_type": "orders", "priority": NaN}', 422, "VALIDATION_ERROR"),
    "truncated JSON": ('{"export_type": "orders"', 400, "MALFORMED_JSON"),
    "a huge columns list": (with_filters(columns=["order_id"] * 5000), 422, None),
    "unknown columns": (with_filters(columns=["order_id", "password_hash"]), 422, None),
    "year 0": (with_filters(date_from="0000-01-01", date_to="0000-01-02"), 422, None),
    "10^6 days": (with_filters(date_from="0001-01-01", date_to="2738-11-28"), 422, None),
    "a date that does not exist": (with_filters(date_from="2025-02-30"), 422, None),
    "a reversed range": (with_filters(date_from="2025-03-02", date_to="2025-03-01"), 422, None),
    "NUL in the export type": (json.dumps({**GOOD, "export_type": "ord\u0000ers"}), 422, None),
    "an unknown field": (json.dumps({**GOOD, "is_admin": True}), 422, None),
    "a list instead of an object": ("[]", 422, None),
    "priority out of range": (json.dumps({**GOOD, "priority": 10**30}), 422, None),
}


@pytest.mark.parametrize(("raw", "status", "code"), CASES.values(), ids=CASES.keys())
def test_bad_bodies_get_a_clear_4xx_and_store_nothing(
    module_aws: Resources, raw: str, status: int, code: str | None
) -> None:
    before = stored_items(module_aws)
    assert_clear_4xx(*post(raw=raw), status, code)
    assert stored_items(module_aws) == before


def test_a_body_that_is_not_utf8_is_malformed(module_aws: Resources) -> None:
    event = http_event("POST", "/v1/exports", raw_body=base64.b64encode(b'{"export_type": "\xff\xfe"}').decode())
    event["isBase64Encoded"] = True
    result = api_handler(event, FakeContext())
    assert_clear_4xx(result["statusCode"], json.loads(result["body"]), 400, "MALFORMED_JSON")


def test_a_body_that_is_not_json_by_media_type_is_refused(module_aws: Resources) -> None:
    assert_clear_4xx(*post(raw=json.dumps(GOOD), headers={"content-type": "text/plain"}), 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(
    "filters",
    [
        {"date_from": "9999-12-01", "date_to": "9999-12-31"},
        {"date_from": "9999-12-31", "date_to": "9999-12-31"},
    ],
    ids=["a range ending on the last day a date can hold", "the last day alone"],
)
def test_a_range_at_the_end_of_the_calendar_is_refused(module_aws: Resources, filters: dict[str, str]) -> None:
    """Accepted today, and then every worker run dies with OverflowError (reading day by day steps
    past 9999-12-31) until the retries are spent: the filters must refuse it with a 4xx naming
    the field, as they refuse year 0."""
    status, body = post(body={**GOOD, "filters": filters})
    assert_clear_4xx(status, body, 422)
    assert body["error"]["field"].startswith("filters")


QUERIES = {
    "limit not a number": {"limit": "abc"},
    "limit absurd": {"limit": "1" * 40},
    "limit zero": {"limit": "0"},
    "unknown status": {"status": "BOGUS"},
    "next_token garbage": {"next_token": "!!!"},
    "next_token huge": {"next_token": "x" * 3000},
    "next_token of another shape": {"next_token": base64.urlsafe_b64encode(b'{"a": 1}').decode()},
}


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_bad_list_parameters_get_a_clear_4xx(module_aws: Resources, query: dict[str, str]) -> None:
    result = api_handler(http_event("GET", "/v1/exports", query=query), FakeContext())
    assert_clear_4xx(result["statusCode"], json.loads(result["body"]), 422)


@pytest.mark.parametrize("task_id", ["..%2F..%2Fetc", "exp_" + "A" * 5000, "%00", "exp_01J!!", "' OR 1=1 --"])
def test_odd_task_ids_are_simply_not_found(module_aws: Resources, task_id: str) -> None:
    for method, suffix in (("GET", ""), ("GET", "/download"), ("POST", "/cancel"), ("POST", "/retry")):
        result = api_handler(http_event(method, f"/v1/exports/{task_id}{suffix}"), FakeContext())
        assert_clear_4xx(result["statusCode"], json.loads(result["body"]), 404)


@pytest.mark.parametrize("key", ["k" * 300, "clé", "a b", ""])
def test_bad_idempotency_keys_are_refused(module_aws: Resources, key: str) -> None:
    assert_clear_4xx(*post(body=GOOD, headers={"idempotency-key": key}), 422)


def test_every_missing_filter_is_reported_at_once(module_aws: Resources) -> None:
    status, body = post(body={"export_type": "orders", "filters": {"status": "nope"}})

    assert_clear_4xx(status, body, 422, "VALIDATION_ERROR")
    assert body["error"]["field"] == "filters.date_from"
    assert [problem["field"] for problem in body["error"]["errors"]] == [
        "filters.date_from",
        "filters.date_to",
        "filters.status",
    ]
    assert body["error"]["errors"][0]["message"] in body["error"]["message"]


def test_every_invalid_body_field_is_reported_at_once(module_aws: Resources) -> None:
    status, body = post(body={**GOOD, "priority": 0, "timeout_sec": 1})

    assert_clear_4xx(status, body, 422, "VALIDATION_ERROR")
    assert [problem["field"] for problem in body["error"]["errors"]] == ["priority", "timeout_sec"]


def test_one_invalid_field_has_no_list(module_aws: Resources) -> None:
    status, body = post(body={**GOOD, "priority": 0})

    assert_clear_4xx(status, body, 422, "VALIDATION_ERROR")
    assert body["error"]["field"] == "priority" and "errors" not in body["error"]
