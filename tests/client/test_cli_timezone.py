"""``exportctl submit --timezone`` and the SDK's ``submit(timezone=...)``: the API's ``timezone``
field; a task's zone shown by ``exportctl status``; the service's 422 naming it."""

from __future__ import annotations

import pytest

from exports_client import ExportsClient, InvalidRequestError
from exports_client.output import ExitCode
from tests.client.fake_api import ACCEPTED, BASE_URL, TOKEN, FakeApi, error_response, json_response, task_json
from tests.client.test_cli_submit import run, sent, submitting


def test_submit_timezone_is_the_api_field() -> None:
    api = submitting()

    code, _, err = run(
        api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31", "--timezone", "Europe/Berlin"
    )

    assert code == ExitCode.OK, err
    assert sent(api)["timezone"] == "Europe/Berlin"


def test_without_timezone_the_body_leaves_it_to_the_service() -> None:
    api = submitting()
    code, _, err = run(api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31")
    assert code == ExitCode.OK, err
    assert "timezone" not in sent(api)


def test_the_sdk_sends_the_zone_and_reads_it_back() -> None:
    api = FakeApi().on("POST", "/v1/exports", json_response(202, ACCEPTED))
    api.on("GET", "/v1/exports/exp_1", json_response(200, task_json(timezone="Asia/Kathmandu")))
    client = ExportsClient(BASE_URL, TOKEN, transport=api.transport)

    client.submit("orders", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, timezone="Asia/Kathmandu")

    assert sent(api)["timezone"] == "Asia/Kathmandu"
    assert client.get("exp_1").timezone == "Asia/Kathmandu"


def test_a_task_of_a_service_without_zones_reads_as_utc() -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", json_response(200, task_json()))
    assert ExportsClient(BASE_URL, TOKEN, transport=api.transport).get("exp_1").timezone == "Etc/UTC"


def test_status_shows_a_zone_other_than_utc() -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", json_response(200, task_json(timezone="Asia/Kathmandu")))
    code, out, err = run(api, "status", "exp_1")
    assert code == ExitCode.OK, err
    assert "Asia/Kathmandu" in out


def test_an_unknown_zone_is_the_services_422_naming_timezone() -> None:
    refused = error_response(422, "INVALID_REQUEST", "timezone: 'Mars/Olympus' is not a time zone", field="timezone")
    api = FakeApi().on("POST", "/v1/exports", refused)
    client = ExportsClient(BASE_URL, TOKEN, transport=api.transport)
    with pytest.raises(InvalidRequestError) as raised:
        client.submit("orders", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, timezone="Mars/Olympus")
    assert raised.value.field == "timezone"
