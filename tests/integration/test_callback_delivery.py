"""Callback delivery on its own: the SSRF guard at submit and at send, and the HTTP sender."""

import functools
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from exports.core.ids import new_task_id
from exports.core.public_address import Destination
from exports.core.task import ExportFormat, fail, new_task
from exports.finishing.callbacks import DeliveryOutcome, deliver
from exports.finishing.ports import WebhookResponse
from exports.finishing.webhooks.http import PinnedWebhookSender
from functions.callback import handler as callback_function
from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import WEBHOOK_SECRET
from tests.receiver import receiver
from tests.unit.core.test_public_address import REFUSED_ADDRESSES


def literal_url(address: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"https://{host}/hooks"


@pytest.mark.parametrize("address", REFUSED_ADDRESSES.values(), ids=REFUSED_ADDRESSES.keys())
def test_every_ssrf_address_class_is_refused_at_submit(aws: Resources, address: str) -> None:
    body = {
        "export_type": "orders",
        "callback_url": literal_url(address),
        "filters": {"date_from": "2025-03-01", "date_to": "2025-03-02"},
    }
    result = api_handler(http_event("POST", "/v1/exports", body), FakeContext())
    assert result["statusCode"] == 422
    error = json.loads(result["body"])["error"]
    assert (error["field"], error["code"]) == ("callback_url", "CALLBACK_URL_REFUSED")


def test_plain_http_to_loopback_needs_local_mode(aws: Resources, monkeypatch: pytest.MonkeyPatch) -> None:
    body = {
        "export_type": "orders",
        "callback_url": "http://127.0.0.1:9000/hooks",
        "filters": {"date_from": "2025-03-01", "date_to": "2025-03-02"},
    }
    assert api_handler(http_event("POST", "/v1/exports", body), FakeContext())["statusCode"] == 422
    monkeypatch.setenv("EXPORTS_ALLOW_LOCAL_CALLBACKS", "true")
    from functions.submit import handler

    handler.dependencies.cache_clear()
    assert api_handler(http_event("POST", "/v1/exports", body), FakeContext())["statusCode"] == 202


class RecordingSender:
    def __init__(self) -> None:
        self.sent: list[Destination] = []

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        self.sent.append(destination)
        return WebhookResponse(status=204, error=None)


@pytest.mark.parametrize("address", REFUSED_ADDRESSES.values(), ids=REFUSED_ADDRESSES.keys())
def test_every_ssrf_address_class_is_refused_again_at_send(
    aws: Resources, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    # The host passed the check at submit; by send time its DNS answer points inside.
    monkeypatch.setenv("EXPORTS_WEBHOOK_SECRET", WEBHOOK_SECRET)
    callback_function.dependencies.cache_clear()
    sender = RecordingSender()
    deps = replace(callback_function.dependencies(), webhooks=sender, resolve=lambda host, port: [address])
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=now,
        retention=timedelta(hours=1),
        callback_url="https://hooks.example.com/in",
    )
    deps.tasks.create(task, max_active=100)
    deps.tasks.update(task, fail(task, "X", "y", now, timedelta(hours=1)))

    assert deliver(task.task_id, deps) is DeliveryOutcome.FAILED
    assert sender.sent == []
    recorded = deps.tasks.get(task.task_id).callback
    assert recorded.status == "FAILED"
    assert recorded.last_error is not None and "not public" in recorded.last_error


def local_destination(url: str, host: str = "hooks.example.test") -> Destination:
    port = int(url.split(":")[2].split("/", maxsplit=1)[0])
    return Destination(scheme="http", host=host, port=port, target="/hooks/exports", address="127.0.0.1")


def test_the_sender_connects_to_the_checked_address_and_names_the_host() -> None:
    with receiver([204]) as hook:
        response = PinnedWebhookSender().post(local_destination(hook.url), b"{}", {"webhook-id": "m"})
        (call,) = hook.requests
    assert response == WebhookResponse(status=204, error=None)
    assert call.headers["host"] == f"hooks.example.test:{hook.url.split(':')[2].split('/')[0]}"
    assert call.path == "/hooks/exports"


def test_the_sender_does_not_follow_redirects() -> None:
    with receiver([302]) as hook:
        response = PinnedWebhookSender().post(local_destination(hook.url), b"{}", {})
        assert len(hook.requests) == 1
    assert response.status == 302


def test_a_slow_receiver_is_a_timeout_not_a_hang() -> None:
    with receiver([204], delay_sec=1.0) as hook:
        response = PinnedWebhookSender(timeout_sec=0.2).post(local_destination(hook.url), b"{}", {})
    assert response.status is None
    assert response.error


def test_nobody_listening_is_a_network_error() -> None:
    destination = Destination(scheme="http", host="h", port=9, target="/", address="127.0.0.1")
    response = PinnedWebhookSender(timeout_sec=1).post(destination, b"{}", {})
    assert (response.status, bool(response.error)) == (None, True)


def test_retry_classification_follows_the_rules() -> None:
    from exports.core.policies import callback_delivered, callback_retryable

    assert [s for s in (None, 200, 204, 301, 400, 404, 408, 429, 500, 503) if callback_retryable(s)] == [
        None,
        408,
        429,
        500,
        503,
    ]
    assert [s for s in (None, 200, 204, 299, 300) if callback_delivered(s)] == [200, 204, 299]


class RefusingSender:
    """A receiver that answers 503: worth another attempt."""

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        return WebhookResponse(status=503, error=None)


def test_a_refused_callback_is_raised_for_the_workflow_and_counted_as_no_fault(
    aws: Resources, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CallbackErrors alarm subtracts CallbackRetryRaised from the function's errors: a
    # customer's receiver that refuses never pages (docs/alarms.md, function-errors).
    monkeypatch.setenv("EXPORTS_WEBHOOK_SECRET", WEBHOOK_SECRET)
    callback_function.dependencies.cache_clear()
    deps = replace(
        callback_function.dependencies(), webhooks=RefusingSender(), resolve=lambda host, port: ["93.184.216.34"]
    )
    callback_function.dependencies.cache_clear()
    monkeypatch.setattr(callback_function, "dependencies", functools.cache(lambda: deps))
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=now,
        retention=timedelta(hours=1),
        callback_url="https://hooks.example.com/in",
    )
    deps.tasks.create(task, max_active=100)
    deps.tasks.update(task, fail(task, "X", "y", now, timedelta(hours=1)))

    with pytest.raises(Exception) as raised:
        callback_function.lambda_handler({"action": "deliver", "task_id": task.task_id}, FakeContext())

    assert type(raised.value).__name__ == "CallbackRetryable"
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [record["CallbackRetryRaised"] for record in emitted if "CallbackRetryRaised" in record] in ([1.0], [[1.0]])
