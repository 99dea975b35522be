"""The local server's OpenAPI document, fuzzed (Schemathesis): valid and invalid requests for every
operation, as an authenticated user over real HTTP. No answer may be a 5xx; every 4xx is the one
JSON error shape ``{"error": {"code", "message", "field"?}}``.

The cases are generated from ``docs/openapi.json`` (Schemathesis needs the document when the tests
are collected, before the server runs); the first test checks that the server serves that very
document.

Bounded: at most ``MAX_EXAMPLES`` requests per operation, no shrinking (a failure is reported as
found), generated cases derandomized so every run sends the same requests.
"""

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings

from tests.stack_process import ROOT, Stack, running_stack

pytestmark = pytest.mark.e2e

MAX_EXAMPLES = 25
# Every operation together; a slow server fails the run rather than stalling make test.
TIME_BUDGET_SEC = 120
_started: list[float] = []


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=500) as started:
        yield started


DOCUMENT: Path = ROOT / "docs" / "openapi.json"
schema = schemathesis.openapi.from_path(DOCUMENT)


def test_the_server_serves_the_document_the_cases_come_from(stack: Stack) -> None:
    served = requests.get(f"{stack.url}/openapi.json", timeout=10).json()
    assert served == json.loads(DOCUMENT.read_text(encoding="utf-8"))


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_request_gets_a_5xx_and_every_4xx_is_a_json_error(case: schemathesis.Case, stack: Stack) -> None:
    _started.append(_started[0] if _started else time.monotonic())
    assert time.monotonic() - _started[0] < TIME_BUDGET_SEC, "the fuzzing run is over its time budget"
    response = case.call(base_url=stack.url, headers=stack.headers("alice"), timeout=10)
    described = f"{case.method} {case.formatted_path} -> {response.status_code} {response.text[:300]}"

    assert response.status_code < 500, described
    if 400 <= response.status_code < 500:
        assert response.headers.get("content-type", [""])[0].startswith("application/json"), described
        body = response.json()
        assert set(body) == {"error"}, described
        assert {"code", "message"} <= set(body["error"]) <= {"code", "message", "field"}, described
        assert isinstance(body["error"]["code"], str) and body["error"]["code"].isupper(), described
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], described
