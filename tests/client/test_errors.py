"""Every error answer becomes a typed exception carrying the service's code, status and field."""

from datetime import UTC, datetime

import httpx
import pytest

from exports_client import (
    APIError,
    AuthenticationError,
    ConflictError,
    ExportsClient,
    ExportsError,
    GoneError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    ServiceUnavailableError,
    UnexpectedResponseError,
)
from exports_client.errors import retry_after_seconds
from tests.client.fake_api import BASE_URL, TOKEN, FakeApi, error_response, json_response, task_json


def client_for(api: FakeApi) -> ExportsClient:
    return ExportsClient(BASE_URL, TOKEN, transport=api.transport)


@pytest.mark.parametrize(
    ("answer", "error_type", "code", "field"),
    [
        (error_response(401, "UNAUTHORIZED"), AuthenticationError, "UNAUTHORIZED", None),
        (error_response(404, "TASK_NOT_FOUND"), NotFoundError, "TASK_NOT_FOUND", None),
        (error_response(409, "TASK_NOT_READY"), ConflictError, "TASK_NOT_READY", None),
        (error_response(410, "FILE_EXPIRED"), GoneError, "FILE_EXPIRED", None),
        (error_response(400, "MALFORMED_JSON"), InvalidRequestError, "MALFORMED_JSON", None),
        (error_response(413, "PAYLOAD_TOO_LARGE"), InvalidRequestError, "PAYLOAD_TOO_LARGE", None),
        (error_response(415, "UNSUPPORTED_MEDIA_TYPE"), InvalidRequestError, "UNSUPPORTED_MEDIA_TYPE", None),
        (
            error_response(422, "VALIDATION_ERROR", field="priority"),
            InvalidRequestError,
            "VALIDATION_ERROR",
            "priority",
        ),
        (error_response(429, "RATE_LIMITED"), RateLimitedError, "RATE_LIMITED", None),
        (error_response(500, "INTERNAL_ERROR"), ServerError, "INTERNAL_ERROR", None),
        (error_response(503, "SERVICE_UNAVAILABLE"), ServiceUnavailableError, "SERVICE_UNAVAILABLE", None),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), ServerError, "HTTP_502", None),
        (error_response(405, "METHOD_NOT_ALLOWED"), APIError, "METHOD_NOT_ALLOWED", None),
    ],
)
def test_error_answers_become_typed_errors(
    answer: httpx.Response, error_type: type[APIError], code: str, field: str | None
) -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", answer)

    with pytest.raises(error_type) as raised:
        client_for(api).get("exp_1")

    assert type(raised.value) is error_type
    assert raised.value.status == answer.status_code
    assert raised.value.code == code
    assert raised.value.field == field
    assert isinstance(raised.value, ExportsError)


def test_an_error_says_status_code_message_and_field() -> None:
    api = FakeApi().on("POST", "/v1/exports", error_response(422, "VALIDATION_ERROR", "too high", field="priority"))

    with pytest.raises(InvalidRequestError) as raised:
        client_for(api).submit("orders", priority=11)

    assert str(raised.value) == "422 VALIDATION_ERROR: too high (field: priority)"
    assert raised.value.message == "too high"


@pytest.mark.parametrize("status", [429, 503])
def test_retryable_answers_carry_retry_after(status: int) -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", error_response(status, "BUSY", headers={"Retry-After": "12"}))

    with pytest.raises(APIError) as raised:
        client_for(api).get("exp_1")

    assert raised.value.retry_after == 12
    assert raised.value.retryable


def test_retry_after_may_be_an_http_date() -> None:
    now = datetime(2025, 4, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("Tue, 01 Apr 2025 12:00:30 GMT", now) == 30
    assert retry_after_seconds("Tue, 01 Apr 2025 11:59:00 GMT", now) == 0
    assert retry_after_seconds(" 7 ") == 7
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_connection_failures_become_network_errors_with_the_url() -> None:
    api = FakeApi().on("GET", "/v1/export-types", httpx.ConnectError("connection refused"))

    with pytest.raises(NetworkError) as raised:
        client_for(api).export_types()

    assert raised.value.url == f"{BASE_URL}/v1/export-types"
    assert "connection refused" in raised.value.message
    assert raised.value.retryable
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_timeouts_say_so() -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", httpx.ReadTimeout("read timed out"))

    with pytest.raises(NetworkError, match="timed out"):
        client_for(api).get("exp_1")


def test_an_answer_of_the_wrong_shape_is_an_unexpected_response() -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", json_response(200, {"task_id": "exp_1"}))

    with pytest.raises(UnexpectedResponseError, match="GET /v1/exports/exp_1 is not a TaskView"):
        client_for(api).get("exp_1")


def test_the_token_goes_in_the_authorization_header_and_ids_are_escaped() -> None:
    api = FakeApi().on("GET", "/v1/exports/a/b", json_response(200, task_json(task_id="a/b")))

    assert client_for(api).get("a/b").task_id == "a/b"
    assert api.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert api.requests[0].url.raw_path == b"/v1/exports/a%2Fb"


def test_a_failed_delivery_is_retried_at_its_own_path_and_answers_the_task() -> None:
    delivery = {"destination_id": "dst_1", "status": "PENDING", "attempts": 2, "requested_retries": 1}
    api = FakeApi().on(
        "POST", "/v1/exports/exp_1/deliveries/dst_1/retry", json_response(202, task_json(deliveries=[delivery]))
    )

    task = client_for(api).retry_delivery("exp_1", "dst_1")

    [shown] = task.deliveries
    assert (shown.status, shown.requested_retries) == ("PENDING", 1)
