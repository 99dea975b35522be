"""CORS on the local gateway, as the CDK app configures it on the HTTP API (exports.core.config.api.Cors,
tests/infra/test_infra_resources.py checks the template): the preflight of every documented
request header passes for an allowed origin, nothing else does, and CORS is off unless origins
are given (EXPORTS_CORS_ALLOWED_ORIGINS, the context's cors_allowed_origins)."""

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from local_stack.gateway import Gateway
from local_stack.local_users import LocalUser

APP = "https://app.example.com"
CALLS: list[str] = []
# The request headers the README documents, as a browser names them in a preflight.
DOCUMENTED_REQUEST_HEADERS = ("Authorization", "Content-Type", "Idempotency-Key")


def _api(event: dict[str, Any], context: Any) -> dict[str, Any]:
    CALLS.append(event["requestContext"]["http"]["method"])
    return {"statusCode": 202, "headers": {"location": "/v1/exports/x", "retry-after": "1"}, "body": "{}"}


def _serve(origins: tuple[str, ...]) -> Iterator[str]:
    served = Gateway(_api, {"t": LocalUser("alice", {})}, port=0, cors_allowed_origins=origins)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    CALLS.clear()
    yield served.url
    served.shutdown()
    thread.join(5)


@pytest.fixture
def with_cors() -> Iterator[str]:
    yield from _serve((APP,))


@pytest.fixture
def without_cors() -> Iterator[str]:
    yield from _serve(())


def preflight(url: str, headers: str, origin: str = APP, method: str = "POST") -> requests.Response:
    return requests.options(
        f"{url}/v1/exports",
        headers={"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers},
        timeout=5,
    )


@pytest.mark.parametrize("header", DOCUMENTED_REQUEST_HEADERS)
def test_the_preflight_of_every_documented_header_passes(with_cors: str, header: str) -> None:
    answer = preflight(with_cors, header)

    assert answer.status_code == 204
    assert answer.headers["Access-Control-Allow-Origin"] == APP
    assert header.lower() in answer.headers["Access-Control-Allow-Headers"].split(",")
    assert "POST" in answer.headers["Access-Control-Allow-Methods"].split(",")
    assert CALLS == [], "a preflight carries no token and never reaches the function"


def test_a_browser_asking_for_all_of_them_at_once_passes_too(with_cors: str) -> None:
    answer = preflight(with_cors, "authorization, content-type, idempotency-key")

    assert answer.headers["Access-Control-Allow-Origin"] == APP


@pytest.mark.parametrize(
    ("origin", "headers", "method"),
    [
        ("https://evil.example.com", "authorization", "POST"),
        (APP, "x-undocumented", "POST"),
        (APP, "authorization", "DELETE"),
    ],
)
def test_a_preflight_outside_the_rules_gets_no_allowance(
    with_cors: str, origin: str, headers: str, method: str
) -> None:
    answer = preflight(with_cors, headers, origin, method)

    assert "Access-Control-Allow-Origin" not in answer.headers


def test_an_allowed_origins_call_may_read_the_documented_response_headers(with_cors: str) -> None:
    answer = requests.post(
        f"{with_cors}/v1/exports", json={}, headers={"Origin": APP, "Authorization": "Bearer t"}, timeout=5
    )

    assert answer.status_code == 202
    assert answer.headers["Access-Control-Allow-Origin"] == APP
    assert set(answer.headers["Access-Control-Expose-Headers"].split(",")) == {"location", "retry-after"}


def test_without_origins_cors_is_off_and_a_preflight_meets_the_authorizer(without_cors: str) -> None:
    answer = preflight(without_cors, "idempotency-key")

    # As on AWS without cors_allowed_origins: OPTIONS falls to $default, behind the JWT authorizer.
    assert answer.status_code == 401
    assert "Access-Control-Allow-Origin" not in answer.headers
