"""The SSRF guard end to end: the address corpus at submit, IP-literal spellings resolved by the
system resolver, host names that resolve to private addresses (an injected resolver), a name that
turns private between submit and send (rebinding), and redirects (never followed)."""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from exports.api import app as api_app
from exports.domain.ids import new_task_id
from exports.domain.task import ExportFormat, fail, new_task
from exports.ports import WebhookResponse
from exports.services import callbacks
from exports.services.task_writes import end_task
from exports.webhooks.destination import Destination, check_destination
from functions.callback import handler as callback_function
from functions.submit import handler as api
from functions.worker import handler as worker
from local_stack.embedded_aws import Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import WEBHOOK_SECRET
from tests.receiver import receiver
from tests.unit.test_destination import REFUSED_ADDRESSES

PUBLIC = "93.184.216.34"
Resolver = Callable[[str, int], list[str]]


@pytest.fixture
def resolving(module_aws: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Resolver], None]]:
    """Make the API function resolve host names with the given resolver."""
    real = api.dependencies()

    def use(resolver: Resolver) -> None:
        patched = replace(real, resolve=resolver)
        dependencies = lambda: patched  # noqa: E731
        dependencies.cache_clear = lambda: None  # type: ignore[attr-defined]
        # The route modules call the API's composition through exports.api.app.
        monkeypatch.setattr(api_app, "dependencies", dependencies)

    yield use


def submit(callback_url: str) -> tuple[int, dict[str, Any]]:
    body = {
        "export_type": "orders",
        "filters": {"date_from": "2025-03-01", "date_to": "2025-03-01"},
        "callback_url": callback_url,
    }
    result = api.lambda_handler(http_event("POST", "/v1/exports", body), FakeContext())
    return result["statusCode"], json.loads(result["body"])


def assert_refused(status: int, answer: dict[str, Any]) -> None:
    assert status == 422, answer
    assert answer["error"]["field"] == "callback_url"


@pytest.mark.parametrize("address", REFUSED_ADDRESSES.values(), ids=REFUSED_ADDRESSES.keys())
def test_a_name_resolving_to_any_non_public_address_is_refused_at_submit(
    resolving: Callable[[Resolver], None], address: str
) -> None:
    resolving(lambda host, port: [address])
    status, answer = submit("https://hooks.example.com/in")
    assert_refused(status, answer)
    assert answer["error"]["code"] == "CALLBACK_URL_REFUSED"


NAMES = {
    "internal service": ["10.0.0.5"],
    "cloud metadata": ["169.254.169.254"],
    "cloud metadata over IPv6": ["fd00:ec2::254"],
    "one private answer among public ones": [PUBLIC, "127.0.0.1"],
    "IPv4-mapped metadata": ["::ffff:169.254.169.254"],
    "NAT64 of a private address": ["64:ff9b::a00:1"],
    "local-use NAT64": ["64:ff9b:1::5db8:d822"],
    "6to4 of a private address": ["2002:a00:1::"],
    "IPv4-compatible private address": ["::a00:1"],
    "no answer": [],
}


@pytest.mark.parametrize("answers", NAMES.values(), ids=NAMES.keys())
def test_dns_names_that_resolve_to_private_addresses_are_refused(
    resolving: Callable[[Resolver], None], answers: list[str]
) -> None:
    resolving(lambda host, port: answers)
    assert_refused(*submit("https://looks-public.example.com/hook"))


LITERALS = [
    "https://127.0.0.1/",
    "https://2130706433/",
    "https://0x7f000001/",
    "https://0177.0.0.1/",
    "https://127.1/",
    "https://0/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://localhost/",
    "https://localhost./",
    "https://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]/",
    "https://10.0.0.1:443/",
    "https://user:pass@93.184.216.34/",
    "http://93.184.216.34/",
    "ftp://93.184.216.34/",
    "file:///etc/passwd",
    "https://93.184.216.34:99999/",
]


@pytest.mark.parametrize("url", LITERALS)
def test_ip_literal_spellings_and_other_tricks_are_refused(module_aws: Resources, url: str) -> None:
    """The system resolver reads every numeric spelling (no DNS query needed for these)."""
    assert_refused(*submit(url))


def test_ipv6_forms_of_a_public_address_stay_allowed() -> None:
    for address in ("64:ff9b::5db8:d822", "2002:5db8:d822::1", "2606:2800:220:1:248:1893:25c8:1946"):

        def resolve(host: str, port: int, a: str = address) -> list[str]:
            return [a]

        destination = check_destination("https://hooks.example.com/in", resolve)
        assert destination.address == address


@dataclass
class RecordingSender:
    """A webhook sender that must never be used."""

    posts: list[Destination] = field(default_factory=list)

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        self.posts.append(destination)
        return WebhookResponse(status=204, error=None)


def ended_task_with_callback(deps: Any, callback_url: str) -> str:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={"date_from": "2025-03-01", "date_to": "2025-03-01"},
        now=now,
        retention=timedelta(hours=1),
        callback_url=callback_url,
    )
    deps.tasks.create(task, max_active=100)
    end_task(task, fail(task, "TEST", "ended for the test", now, timedelta(hours=1)), deps)
    return task.task_id


@pytest.mark.parametrize("rebound_to", ["127.0.0.1", "169.254.169.254", "10.1.2.3", "::1"])
def test_a_name_that_turns_private_after_submit_is_not_called(module_aws: Resources, rebound_to: str) -> None:
    sender = RecordingSender()
    deps = replace(
        callback_function.dependencies(),
        webhooks=sender,
        resolve=lambda host, port: [rebound_to],
        webhook_secret=lambda: WEBHOOK_SECRET,
    )
    task_id = ended_task_with_callback(worker.dependencies(), "https://hooks.example.com/in")

    outcome = callbacks.deliver(task_id, deps)

    assert outcome is callbacks.DeliveryOutcome.FAILED
    assert sender.posts == []
    state = deps.tasks.get(task_id).callback
    assert (state.status, state.attempts) == ("FAILED", 1)
    assert state.last_error is not None and "not public" in state.last_error


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_never_followed(module_aws: Resources, status: int) -> None:
    """The receiver answers with a redirect (to a closed local port): one request, no second one,
    and the callback is recorded as failed for good."""
    settings = callback_function.dependencies().settings.model_copy(update={"allow_local_callbacks": True})
    deps = replace(callback_function.dependencies(), settings=settings, webhook_secret=lambda: WEBHOOK_SECRET)
    with receiver([status]) as hook:
        task_id = ended_task_with_callback(worker.dependencies(), hook.url)
        outcome = callbacks.deliver(task_id, deps)
        assert len(hook.requests) == 1

    assert outcome is callbacks.DeliveryOutcome.FAILED
    assert deps.tasks.get(task_id).callback.last_error == f"HTTP {status}"
