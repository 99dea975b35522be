"""The HTTP source reader against a real service on 127.0.0.1: it calls declared hosts only
(redirects and links elsewhere refused), waits as ``Retry-After`` asks, retries what may pass
and ends in a retryable or a final error that says which, paces itself, and authenticates with
a secret's token or the worker's own SigV4 signature."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto import mock_aws

from exports.core.config.retry import Backoff
from exports.core.errors import ExportFailed, RetryableError, SourceCode
from exports.core.export_type import Unbounded
from exports.sources.errors import SourceUnavailable
from exports.sources.http.reader import HttpJsonReader, origins, secret_header, sigv4_signer
from tests.http_sources.conftest import Answer, Asked, Service

QUICK = Backoff(retries=2, base_sec=0.5, factor=2)


def reader(service: Service, waits: list[float] | None = None, **options: Any) -> HttpJsonReader:
    """A reader of ``service``'s host, whose waits are recorded (not slept) when ``waits`` is given."""
    sleep = waits.append if waits is not None else time.sleep
    settings: dict[str, Any] = {"timeout_sec": 2, "retry": QUICK, "sleep": sleep, **options}
    hosts = settings.pop("hosts", ())
    return HttpJsonReader("crm", origins(service.url, hosts), **settings)


@pytest.fixture
def other() -> Iterator[Service]:
    """A second service on the same machine, under a host name no declaration names."""
    running = Service()
    running.route = lambda _asked: Answer({"secret": "internal"})
    yield running
    running.close()


def test_a_page_is_read_as_json_with_exact_numbers(service: Service) -> None:
    service.route = lambda _asked: Answer(raw=b'{"a": 0.1, "b": 12345678901234567890, "c": 1e400}')

    page = reader(service).get(f"{service.url}/x", Unbounded())

    assert str(page["a"]) == "0.1" and page["b"] == 12345678901234567890 and str(page["c"]) == "1E+400"
    assert service.asked[0].headers["accept"] == "application/json"


def test_a_host_not_declared_is_never_called(service: Service, other: Service) -> None:
    elsewhere = f"http://localhost:{other.port}/data"

    with pytest.raises(
        ExportFailed, match=r"was asked to call http://localhost:.* not among its declared hosts"
    ) as failed:
        reader(service).get(elsewhere, Unbounded())

    assert failed.value.code == SourceCode.ACCESS_DENIED and other.asked == []


def test_a_redirect_to_another_host_is_refused_and_one_to_a_declared_host_followed(
    service: Service, other: Service
) -> None:
    def route(asked: Asked) -> Answer:
        if asked.path == "/away":
            return Answer(status=302, headers={"Location": f"http://localhost:{other.port}/steal"})
        if asked.path == "/moved":
            return Answer(status=301, headers={"Location": "/here"})
        return Answer({"here": True})

    service.route = route

    with pytest.raises(ExportFailed, match="was redirected to http://localhost") as failed:
        reader(service).get(f"{service.url}/away", Unbounded())
    assert failed.value.code == SourceCode.ACCESS_DENIED and other.asked == []
    assert reader(service).get(f"{service.url}/moved", Unbounded()) == {"here": True}
    # A host the declaration adds (any port of it) is one the reader may follow.
    answer = reader(service, hosts=["localhost"]).get(f"{service.url}/away", Unbounded())
    assert answer == {"secret": "internal"} and len(other.asked) == 1


def test_retry_after_is_waited_out_on_429_and_503(service: Service) -> None:
    answers = iter(
        [
            Answer(status=429, headers={"Retry-After": "3"}),
            Answer(
                status=503,
                headers={"Retry-After": format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)},
            ),
            Answer({"ok": True}),
        ]
    )
    service.route = lambda _asked: next(answers)
    waits: list[float] = []

    assert reader(service, waits).get(f"{service.url}/x", Unbounded()) == {"ok": True}

    assert waits[0] == 3 and 15 < waits[1] <= 20  # longer than the backoff's 0.5 s and 1 s
    assert len(service.asked) == 3


def test_a_service_that_keeps_failing_ends_in_a_retryable_error_after_the_retries(service: Service) -> None:
    service.route = lambda _asked: Answer(status=503)
    waits: list[float] = []

    with pytest.raises(SourceUnavailable, match=r"answered 503 Service Unavailable to GET /x \(3 attempts\)"):
        reader(service, waits).get(f"{service.url}/x?tenant=acme", Unbounded())

    assert waits == [0.5, 1.0] and len(service.asked) == QUICK.attempts


def test_a_retry_after_longer_than_a_run_waits_ends_the_run_at_once(service: Service) -> None:
    service.route = lambda _asked: Answer(status=429, headers={"Retry-After": "600"})
    waits: list[float] = []

    with pytest.raises(SourceUnavailable, match=r"asked to wait 600 s .* the task is retried later"):
        reader(service, waits).get(f"{service.url}/x", Unbounded())

    assert waits == [] and len(service.asked) == 1


class _Ending(Unbounded):
    def seconds_left(self) -> float | None:
        return 2.0


def test_a_wait_past_the_runs_time_left_ends_the_run(service: Service) -> None:
    service.route = lambda _asked: Answer(status=429, headers={"Retry-After": "30"})

    with pytest.raises(RetryableError, match="asked to wait 30 s"):
        reader(service, []).get(f"{service.url}/x", _Ending())


def test_a_slow_service_times_out_and_is_retried(service: Service) -> None:
    answers = iter([Answer({"slow": True}, delay_sec=1.5), Answer({"ok": True})])
    service.route = lambda _asked: next(answers)
    waits: list[float] = []

    assert reader(service, waits, timeout_sec=0.5).get(f"{service.url}/x", Unbounded()) == {"ok": True}
    assert waits == [0.5]

    service.route = lambda _asked: Answer({"slow": True}, delay_sec=1.5)
    with pytest.raises(SourceUnavailable, match=r"did not answer within 0.5 s to GET /x \(3 attempts\)"):
        reader(service, [], timeout_sec=0.5).get(f"{service.url}/x", Unbounded())


def test_a_service_that_is_down_ends_in_a_retryable_error(service: Service) -> None:
    url = f"{service.url}/x"
    service.close()

    with pytest.raises(SourceUnavailable, match=r"refused the connection to GET /x \(3 attempts\)"):
        reader(service, []).get(url, Unbounded())


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, SourceCode.AUTH_FAILED),
        (403, SourceCode.ACCESS_DENIED),
        (404, SourceCode.QUERY_FAILED),
        (400, SourceCode.QUERY_FAILED),
        (501, SourceCode.QUERY_FAILED),
    ],
)
def test_answers_a_retry_cannot_change_fail_at_once(service: Service, status: int, code: str) -> None:
    service.route = lambda _asked: Answer({"error": "no"}, status=status)

    with pytest.raises(ExportFailed, match=f"answered {status} .* to GET /x; not retried") as failed:
        reader(service, []).get(f"{service.url}/x", Unbounded())

    assert failed.value.code == code and len(service.asked) == 1


def test_requests_are_spaced_by_the_declared_rate(service: Service) -> None:
    service.route = lambda _asked: Answer({"ok": True})
    paced = reader(service, rate_per_sec=20)

    started = time.monotonic()
    for _ in range(6):
        paced.get(f"{service.url}/x", Unbounded())

    assert time.monotonic() - started >= 5 / 20


def test_a_bearer_token_comes_from_secrets_manager(service: Service) -> None:
    service.route = lambda _asked: Answer({"ok": True})
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="eu-west-1")
        whole = client.create_secret(Name="crm-token", SecretString="s3cr3t")["ARN"]
        keyed = client.create_secret(Name="crm-key", SecretString='{"api_key": "k3y"}')["ARN"]

        reader(service, sign=secret_header(lambda: client, whole, None, "Authorization", "Bearer ")).get(
            f"{service.url}/x", Unbounded()
        )
        reader(service, sign=secret_header(lambda: client, keyed, "api_key", "X-Api-Key")).get(
            f"{service.url}/x", Unbounded()
        )
        missing = whole.replace("crm-token", "crm-gone")
        with pytest.raises(ExportFailed, match="secret of an HTTP source cannot be read") as failed:
            reader(service, sign=secret_header(lambda: client, missing, None, "Authorization")).get(
                f"{service.url}/x", Unbounded()
            )

    assert service.asked[0].headers["authorization"] == "Bearer s3cr3t"
    assert service.asked[1].headers["x-api-key"] == "k3y"
    assert failed.value.code == SourceCode.NOT_CONFIGURED and len(service.asked) == 2


def test_sigv4_signs_each_request_with_the_workers_credentials(service: Service) -> None:
    service.route = lambda _asked: Answer({"ok": True})
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    url = f"{service.url}/prod/customers?tenant=acme"

    reader(service, sign=sigv4_signer(lambda: credentials, "execute-api", "eu-west-1")).get(url, Unbounded())

    headers = service.asked[0].headers
    # The service checks the signature as API Gateway would: signed again at the same instant.
    expected = AWSRequest(method="GET", url=url, headers={"X-Amz-Date": headers["x-amz-date"]})
    SigV4Auth(credentials, "execute-api", "eu-west-1").add_auth(expected)
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in headers["authorization"]
    assert headers["authorization"] == expected.headers["Authorization"]
    with pytest.raises(ExportFailed, match="no AWS credentials"):
        reader(service, sign=sigv4_signer(lambda: None, "lambda", "eu-west-1")).get(url, Unbounded())
