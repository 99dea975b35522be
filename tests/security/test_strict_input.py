"""Strict input: what the caller sent is read as sent, or refused with one clear error.

No silent coercion, no guessed encodings, no key read twice; the same code for every field-level
mistake wherever the field is; the media type and list filters read case-insensitively."""

import base64
import json
from typing import Any

import pytest

from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import Resources
from tests.builders import FakeContext, http_event

GOOD = {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-02"}}


def call(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = api_handler(event, FakeContext())
    return result["statusCode"], json.loads(result["body"])


def post_bytes(raw: bytes, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    event = http_event("POST", "/v1/exports", raw_body=base64.b64encode(raw).decode())
    event["isBase64Encoded"] = True
    event["headers"]["content-type"] = content_type
    return call(event)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_a_utf16_or_utf32_body_is_a_400_not_a_500(module_aws: Resources, encoding: str) -> None:
    raw = json.dumps(GOOD).encode(encoding)
    if not encoding.endswith(("le", "be")):
        assert raw[:2] in (b"\xff\xfe", b"\xfe\xff")  # Python writes the byte-order mark
    else:
        raw = ("\ufeff" + json.dumps(GOOD)).encode(encoding)
    status, body = post_bytes(raw)
    assert status == 400, body
    assert body["error"]["code"] == "MALFORMED_JSON"
    assert "UTF-8" in body["error"]["message"]


@pytest.mark.parametrize(
    "content_type",
    ["Application/JSON", "APPLICATION/JSON; charset=UTF-8", "application/vnd.exports+json", "application/merge+JSON"],
)
def test_json_media_types_are_matched_case_insensitively(module_aws: Resources, content_type: str) -> None:
    status, body = post_bytes(json.dumps(GOOD).encode(), content_type)
    assert status == 202, body


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/+json"])
def test_other_media_types_are_415(module_aws: Resources, content_type: str) -> None:
    status, body = post_bytes(json.dumps(GOOD).encode(), content_type)
    assert status == 415, body
    assert body["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"priority": True}, "priority"),
        ({"priority": "3"}, "priority"),
        ({"priority": 3.5}, "priority"),
        ({"timeout_sec": "60"}, "timeout_sec"),
        ({"timeout_sec": False}, "timeout_sec"),
        ({"csv_bom": "true"}, "csv_bom"),
        ({"csv_bom": 1}, "csv_bom"),
    ],
)
def test_no_silent_coercion_of_the_envelope(module_aws: Resources, change: dict[str, Any], field: str) -> None:
    status, body = call(http_event("POST", "/v1/exports", {**GOOD, **change}))
    assert status == 422, body
    assert body["error"] == {"code": "VALIDATION_ERROR", "message": body["error"]["message"], "field": field}


def test_a_whole_number_written_with_a_fraction_is_the_integer_json_schema_counts_it(module_aws: Resources) -> None:
    # JSON Schema's integer is any number without a fractional part (3.0, 3e0): the document says
    # integer, so such a body is schema-valid and taken, as the number it is, never rounded.
    status, body = call(http_event("POST", "/v1/exports", {**GOOD, "priority": 3.0}))
    assert status == 202, body

    status, body = call(http_event("GET", f"/v1/exports/{body['task_id']}"))
    assert (status, body["priority"]) == (200, 3)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ('{"export_type": "orders", "priority": 1, "priority": 9}', "priority"),
        ('{"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_from": "2025-03-02"}}', "date_from"),
    ],
)
def test_a_key_twice_is_refused_naming_the_key(module_aws: Resources, raw: str, key: str) -> None:
    status, body = call(http_event("POST", "/v1/exports", raw_body=raw))
    assert status == 400, body
    assert body["error"]["code"] == "MALFORMED_JSON"
    assert body["error"]["field"] == key
    assert key in body["error"]["message"]


def test_filter_and_field_errors_share_one_code(module_aws: Resources) -> None:
    _, field_error = call(http_event("POST", "/v1/exports", {**GOOD, "priority": 0}))
    _, filter_error = call(
        http_event("POST", "/v1/exports", {**GOOD, "filters": {"date_from": "2025-03-09", "date_to": "2025-03-01"}})
    )
    assert field_error["error"]["code"] == filter_error["error"]["code"] == "VALIDATION_ERROR"
    assert filter_error["error"]["field"].startswith("filters")


@pytest.mark.parametrize("value", ["completed", "Completed", "COMPLETED", "pending"])
def test_the_status_filter_is_read_in_any_case(module_aws: Resources, value: str) -> None:
    status, body = call(http_event("GET", "/v1/exports", query={"status": value}))
    assert status == 200, body
    assert body["items"] == [] or {item["status"] for item in body["items"]} == {value.upper()}


def test_an_unknown_status_is_still_refused(module_aws: Resources) -> None:
    status, body = call(http_event("GET", "/v1/exports", query={"status": "done"}))
    assert status == 422, body
    assert body["error"]["field"] == "status"


@pytest.mark.parametrize("value", ["false", 0, None])
def test_the_csv_formula_guard_is_a_strict_boolean(module_aws: Resources, value: Any) -> None:
    status, body = call(http_event("POST", "/v1/exports", {**GOOD, "csv_formula_guard": value}))
    assert status == 422, body
    assert body["error"]["field"] == "csv_formula_guard"
