"""The API function with real HTTP API events against moto."""

import json
from typing import Any

import boto3
import pytest
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.config.limits import Limits
from exports.domain.task import ExportFormat
from functions.submit.handler import lambda_handler
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event
from tests.client.openapi_doc import swagger_spec

VALID: dict[str, Any] = {
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "2025-03-01", "date_to": "2025-03-31"},
}


def call(event: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    result = lambda_handler(event, FakeContext())
    body = result.get("body") or ""
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    parsed = json.loads(body) if headers.get("content-type", "").startswith("application/json") and body else body
    return result["statusCode"], headers, parsed


def submit(body: Any = None, user: str = "alice", **kwargs: Any) -> tuple[int, dict[str, str], Any]:
    return call(http_event("POST", "/v1/exports", body if body is not None else VALID, user=user, **kwargs))


def stored_tasks(aws: Resources) -> list[dict[str, Any]]:
    """Task records only: the table also holds quota counters and dedup markers."""
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=aws.tasks_table)["Items"]
    return [item for item in items if "user_id" in item]


def queued(aws: Resources) -> list[MessageTypeDef]:
    sqs = boto3.client("sqs", region_name=REGION)
    return [
        message
        for url in aws.queue_urls.values()
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0).get(
            "Messages", []
        )
    ]


def test_submit_answers_202_stores_pending_and_queues_a_small_message(aws: Resources) -> None:
    status, headers, body = submit()

    assert status == 202
    assert body["status"] == "PENDING"
    assert body["task_id"].startswith("exp_")
    assert body["estimated_completion_sec"] > 0
    assert headers["location"] == f"/v1/exports/{body['task_id']}"
    assert headers["retry-after"] == "1"
    assert len(stored_tasks(aws)) == 1
    messages = queued(aws)
    assert len(messages) == 1
    message = json.loads(messages[0]["Body"])
    expected = {"task_id": body["task_id"], "export_type": "orders", "priority": 5, "redeliveries": 0}
    assert message == expected
    assert "filters" not in messages[0]["Body"]


def test_the_user_comes_from_the_authorizer_not_the_body(aws: Resources) -> None:
    status, _, body = submit({**VALID, "user_id": "mallory"})
    assert status == 422
    assert body["error"]["field"] == "user_id"
    assert stored_tasks(aws) == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"export_type": "invoices"}, "export_type"),
        ({"format": "docx"}, "format"),
        ({"priority": 0}, "priority"),
        ({"priority": 11}, "priority"),
        ({"timeout_sec": Limits.TIMEOUT_SEC_MAX + 1}, "timeout_sec"),
        # The declared type names the end of a reversed or too long range.
        ({"filters": {"date_from": "2025-03-31", "date_to": "2025-03-01"}}, "filters.date_to"),
        ({"filters": {"date_from": "2024-01-01", "date_to": "2025-03-01"}}, "filters.date_to"),
        ({"filters": {"date_from": "2025-02-30", "date_to": "2025-03-01"}}, "filters.date_from"),
        ({"filters": {"date_from": "yesterday", "date_to": "2025-03-01"}}, "filters.date_from"),
        ({"filters": {"date_to": "2025-03-01"}}, "filters.date_from"),
        ({"filters": {"date_from": "2025-03-01", "date_to": "2025-03-02", "status": "lost"}}, "filters.status"),
        (
            {"filters": {"date_from": "2025-03-01", "date_to": "2025-03-02", "columns": ["secret"]}},
            "filters.columns",
        ),
        ({"callback_url": "not a url"}, "callback_url"),
    ],
)
def test_invalid_requests_name_the_field_and_change_nothing(aws: Resources, change: dict, field: str) -> None:
    status, headers, body = submit({**VALID, **change})

    assert status == 422
    assert headers["content-type"].startswith("application/json")
    assert body["error"]["field"] == field
    assert body["error"]["message"]
    assert stored_tasks(aws) == []
    assert queued(aws) == []


def test_reversed_dates_say_so(aws: Resources) -> None:
    _, _, body = submit({**VALID, "filters": {"date_from": "2025-03-31", "date_to": "2025-03-01"}})
    assert body["error"]["message"] == "filters.date_to: must not be before date_from"


def test_unknown_export_type_lists_the_known_ones(aws: Resources) -> None:
    _, _, body = submit({**VALID, "export_type": "invoices"})
    assert body["error"]["code"] == "UNKNOWN_EXPORT_TYPE"
    assert "orders" in body["error"]["message"]


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"raw_body": "{not json"}, 400, "MALFORMED_JSON"),
        ({"raw_body": "export_type=orders", "headers": {"content-type": "text/plain"}}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        (
            {"raw_body": "export_type=orders", "headers": {"content-type": "application/x-www-form-urlencoded"}},
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        ({"raw_body": json.dumps({**VALID, "pad": "x" * Limits.MAX_BODY_BYTES})}, 413, "PAYLOAD_TOO_LARGE"),
        (
            {"raw_body": json.dumps({**VALID, "filters": {**VALID["filters"], "x": "y" * 70_000}})},
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ],
)
def test_bodies_that_are_not_acceptable_json(aws: Resources, kwargs: dict, status: int, code: str) -> None:
    got_status, _, body = submit(**kwargs)
    assert (got_status, body["error"]["code"]) == (status, code)
    assert stored_tasks(aws) == []
    assert queued(aws) == []


def test_no_credentials_is_401_and_changes_nothing(aws: Resources) -> None:
    status, _, body = call(http_event("POST", "/v1/exports", VALID, user=None))
    assert status == 401
    assert body["error"]["code"] == "UNAUTHORIZED"
    assert stored_tasks(aws) == []


def test_get_shows_the_owners_task_and_hides_it_from_others(aws: Resources) -> None:
    _, _, accepted = submit()
    task_id = accepted["task_id"]

    status, headers, task = call(http_event("GET", f"/v1/exports/{task_id}"))
    assert status == 200
    assert task["status"] == "PENDING"
    assert task["download_url"] is None
    assert int(headers["retry-after"]) >= 1
    assert headers["cache-control"] == "no-store"

    for path in (f"/v1/exports/{task_id}", f"/v1/exports/{task_id}/download"):
        status, _, body = call(http_event("GET", path, user="bob"))
        assert status == 404
        assert body["error"]["code"] == "TASK_NOT_FOUND"
    status, _, body = call(http_event("GET", "/v1/exports/exp_01JUNKJUNKJUNKJUNKJUNKJUNK"))
    assert status == 404
    status, _, body = call(http_event("GET", "/v1/exports/../../etc"))
    assert status == 404


def test_download_before_completion_is_409(aws: Resources) -> None:
    _, _, accepted = submit()
    status, _, body = call(http_event("GET", f"/v1/exports/{accepted['task_id']}/download"))
    assert status == 409
    assert body["error"]["code"] == "TASK_NOT_READY"


def day_range(n: int) -> dict[str, Any]:
    """A request of its own (identical requests would be merged into one task)."""
    return {**VALID, "filters": {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}}


def test_list_is_newest_first_paged_filtered_and_private(aws: Resources) -> None:
    ids = [submit(day_range(n))[2]["task_id"] for n in range(5)]
    submit(user="bob")

    status, _, page = call(http_event("GET", "/v1/exports", query={"limit": "3"}))
    assert status == 200
    assert [t["task_id"] for t in page["items"]] == ids[::-1][:3]
    _, _, rest = call(http_event("GET", "/v1/exports", query={"limit": "3", "next_token": page["next_token"]}))
    assert [t["task_id"] for t in rest["items"]] == ids[::-1][3:]
    assert rest["next_token"] is None

    _, _, done = call(http_event("GET", "/v1/exports", query={"status": "COMPLETED"}))
    assert done["items"] == []
    _, _, bobs = call(http_event("GET", "/v1/exports", user="bob"))
    assert len(bobs["items"]) == 1


def test_another_users_cursor_lists_only_your_own_tasks_and_bad_parameters_are_refused(aws: Resources) -> None:
    for n in range(2):
        submit(day_range(n), user="bob")
    _, _, bob_page = call(http_event("GET", "/v1/exports", user="bob", query={"limit": "1"}))

    status, _, body = call(http_event("GET", "/v1/exports", query={"next_token": bob_page["next_token"]}))
    assert (status, body["items"]) == (200, [])
    status, _, body = call(http_event("GET", "/v1/exports", query={"next_token": "eyJ0YXNrX2lkIjogMX0"}))
    assert (status, body["error"]["field"]) == (422, "next_token")
    status, _, body = call(http_event("GET", "/v1/exports", query={"limit": "0"}))
    assert (status, body["error"]["field"]) == (422, "limit")
    status, _, body = call(http_event("GET", "/v1/exports", query={"status": "DONE"}))
    assert (status, body["error"]["field"]) == (422, "status")


def test_export_types_show_formats_and_filter_schema(aws: Resources) -> None:
    status, _, body = call(http_event("GET", "/v1/export-types"))
    assert status == 200
    assert {item["name"] for item in body["items"]} == {"orders", "customers", "sales_report"}
    orders = next(item for item in body["items"] if item["name"] == "orders")
    assert orders["formats"] == [fmt.value for fmt in ExportFormat]
    assert set(orders["filters_schema"]["required"]) == {"date_from", "date_to"}


def test_me_names_the_caller_of_the_token(aws: Resources) -> None:
    status, _, body = call(http_event("GET", "/v1/me", user="bob"))
    assert status == 200
    assert body == {"user_id": "bob", "bound": {}}  # the demo types here bind nothing from the token
    status, _, _ = call(http_event("GET", "/v1/me", user=None))
    assert status == 401


def test_openapi_document_and_swagger_ui_are_served(aws: Resources) -> None:
    status, _, spec = call(http_event("GET", "/openapi.json", user=None))
    assert status == 200
    assert spec["openapi"].startswith("3.")
    assert {"/v1/exports", "/v1/exports/{task_id}", "/v1/exports/{task_id}/download", "/v1/export-types"} <= set(
        spec["paths"]
    )
    request_schema = spec["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert request_schema["discriminator"]["mapping"] == {
        name: f"#/components/schemas/ExportRequest.{name}" for name in ("orders", "customers", "sales_report")
    }
    status, headers, html = call(http_event("GET", "/docs", user=None))
    assert status == 200
    assert "text/html" in headers["content-type"]
    assert "swagger" in html.lower()
    assert swagger_spec(html) == spec


def test_a_failed_enqueue_fails_the_task_instead_of_stranding_it(
    aws: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {lane: url + "-missing" for lane, url in aws.queue_urls.items()}
    monkeypatch.setenv("EXPORTS_TASK_QUEUE_URLS", json.dumps(broken))
    status, headers, body = submit()

    assert status == 503
    assert body["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert headers["retry-after"]
    (item,) = stored_tasks(aws)
    assert item["status"]["S"] == "FAILED"
    assert item["error"]["M"]["code"]["S"] == "ENQUEUE_FAILED"


def test_a_task_past_its_retention_is_gone_even_before_ttl_deletes_it(aws: Resources) -> None:
    _, _, accepted = submit()
    table = boto3.client("dynamodb", region_name=REGION)
    table.update_item(
        TableName=aws.tasks_table,
        Key={"task_id": {"S": accepted["task_id"]}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"S": "2000-01-01T00:00:00Z"}},
    )
    for path in (f"/v1/exports/{accepted['task_id']}", f"/v1/exports/{accepted['task_id']}/download"):
        status, _, body = call(http_event("GET", path))
        assert (status, body["error"]["code"]) == (404, "TASK_NOT_FOUND")
    _, _, listed = call(http_event("GET", "/v1/exports"))
    assert listed["items"] == []


HUGE_INTEGER = "9" * 5000  # past Python's 4,300 digits of int-from-text


@pytest.mark.parametrize(
    ("raw_body", "field"),
    [
        (f'{{"export_type": "orders", "priority": {HUGE_INTEGER}}}', "priority"),
        (
            f'{{"export_type": "orders", "filters": {{"date_from": "2025-03-01", "date_to": "2025-03-31", '
            f'"status": {HUGE_INTEGER}}}}}',
            "filters.status",
        ),
    ],
    ids=["body field", "filter"],
)
def test_a_huge_integer_in_valid_json_is_a_422_naming_its_field(aws: Resources, raw_body: str, field: str) -> None:
    status, _, body = submit(raw_body=raw_body)

    assert (status, body["error"]["code"], body["error"]["field"]) == (422, "VALIDATION_ERROR", field)
    assert stored_tasks(aws) == []
    assert queued(aws) == []
