"""The local server's OpenAPI document, fuzzed (Schemathesis): valid and invalid requests for every
operation, as an authenticated user over real HTTP, with every Schemathesis check (``--checks all``:
documented status codes, content types, headers and bodies, valid data accepted, invalid data
refused, auth enforced, methods refused with 405). On top, every 4xx is the one JSON error shape
``{"error": {"code", "message", "field"?}}``.

The cases are generated from the document the stack serves (its export types' request bodies and
filters are the deployment's: here the DynamoDB demo plugins), fetched once the stack runs; the
first test checks that it is the committed docs/openapi.json in everything but those types.

Bounded: at most ``MAX_EXAMPLES`` requests per operation, no shrinking (a failure is reported as
found), generated cases derandomized so every run sends the same requests. Every operation gets
the document's examples and its generated cases; the coverage phase (boundary values of every
keyword, every value of every enum) runs for each operation but the three whose bodies carry a
``timezone``: there it enumerates the tz database's ~600 names for each zone field, some 1,200
requests for POST /v1/exports alone, which took the run past its budget. Those three keep their
generated cases (each draws zones from the same enum), and the full coverage phase of every
operation runs from outside with the CLI (docs/reliability.md, "Schemathesis from outside").
"""

import json
import time
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import CHECKS, is_check_class, load_all_checks

from tests.client.openapi_doc import DOC_PATH, shared_contract
from tests.stack_process import Stack

pytestmark = pytest.mark.e2e

MAX_EXAMPLES = 25
# Every operation together; a slow server fails the run rather than stalling make test.
TIME_BUDGET_SEC = 120
_started: list[float] = []


@pytest.fixture(scope="module")
def stack(dynamodb_stack: Stack) -> Stack:
    """Shared with the smoke tests, which export as alice: the fuzzing runs as bob, so the tasks
    it leaves running do not count against alice's quota."""
    return dynamodb_stack


@pytest.fixture(scope="module")
def served(stack: Stack) -> dict[str, Any]:
    """The stack's own document."""
    return requests.get(f"{stack.url}/openapi.json", timeout=10).json()


# positive_data_acceptance: a submit that conforms to the document may still break a rule no JSON
# Schema can state: a date range in order and at most so many days (two fields), a callback URL
# that must resolve to a public address, or a task whose twin is already active. So for POST
# /v1/exports a 422 (VALIDATION_ERROR naming filters.<name>, CALLBACK_URL_REFUSED) is a correct
# answer to schema-valid data; 429 too (the caller's quota of active tasks fills up during the
# run), and 403 (CLAIM_MISSING: the type binds a claim the caller's token lacks, a matter of the
# token, not of the request), and 404 (DESTINATION_NOT_FOUND naming destinations.<i>: a well-formed
# destination id that is not one of the caller's tenant's). GET /v1/exports and GET /v1/schedules
# take every next_token their patterns allow (a task or schedule id: a position in the caller's own
# list), so they keep the default. The schedules' operations: the document states each type's
# filters, the zones (TimeZone), the cron forms every deployment takes, the rules between fields
# (csv_bom and the encoding, the decimal comma and the delimiter, a path template and its
# destinations, a PATCH's cron or every) and the recipients the deployment mails (a pattern of its
# domains), and the service takes any window (start_at, end_at) the schema allows and a callback
# host that does not resolve yet; a PATCH field that does not fit the stored schedule is a 409.
# What no JSON Schema states stays a 422: a date range's order and length in `filters`, the
# caller's own verified address outside the domains (a matter of the token), a callback URL to a
# private address (docs/schedules.md, "The model"). A create may meet the per-user cap (429).
# Destinations: whether an SFTP host may be reached (public, resolving, answering with a host key)
# is the service's to find out (422 DESTINATION_UNREACHABLE naming target.host), S3 destinations
# need the deployment's principal, the tenant's cap may be met (429), GET /v1/destinations refuses
# a made-up next_token (an opaque cursor), and a change may name a field of the other kind (422).
# Every other operation keeps the default.
_NO_ZONE_ENUMERATION = {"coverage": {"enabled": False}}
OPERATIONS: dict[str, Any] = {
    "operations": [
        {
            "include-name": "POST /v1/exports",
            "checks": {
                "positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429"]}
            },
            "phases": _NO_ZONE_ENUMERATION,
        },
        {
            "include-name": "POST /v1/schedules",
            "checks": {
                "positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429"]}
            },
            "phases": _NO_ZONE_ENUMERATION,
        },
        {
            "include-name": "PATCH /v1/schedules/{schedule_id}",
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409", "422"]}},
            "phases": _NO_ZONE_ENUMERATION,
        },
        {
            "include-name": "POST /v1/destinations",
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "409", "422", "429"]}},
        },
        {
            "include-name": "GET /v1/destinations",
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "422"]}},
        },
        {
            "include-name": "PATCH /v1/destinations/{destination_id}",
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "422"]}},
        },
    ]
}


@pytest.fixture(scope="module")
def served_schema(served: dict[str, Any], stack: Stack) -> Any:
    """The cases' source: the served document. The caller's token is the configuration's header,
    so Schemathesis knows the requests carry it: a negative case that only leaves out the
    Authorization header (which the call would add back) is not generated as one."""
    config = schemathesis.config.SchemathesisConfig.from_dict({**OPERATIONS, "headers": stack.headers("bob")})
    return schemathesis.openapi.from_dict(served, config=config)


schema = schemathesis.pytest.from_fixture("served_schema")
# Every check Schemathesis has (the CLI's --checks all). The credentials are the request's own
# Authorization header: ignored_auth removes it and sends a wrong token to see the 401.
# The OpenAPI checks register when their module is first imported (at the first call otherwise:
# read before it, the registry holds not_a_server_error alone). call_and_validate takes the check
# functions; it runs the registry's check classes (after_response) itself, whatever ``checks`` says.
load_all_checks()
ALL_CHECKS = [check for check in CHECKS.get_all() if not is_check_class(check)]


def test_the_served_document_is_the_committed_one_but_for_its_export_types(served: dict[str, Any]) -> None:
    committed = json.loads(DOC_PATH.read_text(encoding="utf-8"))
    assert shared_contract(served) == shared_contract(committed)
    mapping = served["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert list(mapping["discriminator"]["mapping"]) == ["orders", "customers", "sales_report"]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_answer_is_the_documented_one_and_every_4xx_is_a_json_error(
    case: schemathesis.Case, stack: Stack
) -> None:
    _started.append(_started[0] if _started else time.monotonic())
    assert time.monotonic() - _started[0] < TIME_BUDGET_SEC, "the fuzzing run is over its time budget"
    response = case.call_and_validate(base_url=stack.url, headers=stack.headers("bob"), checks=ALL_CHECKS, timeout=10)
    described = f"{case.method} {case.formatted_path} -> {response.status_code} {response.text[:300]}"

    assert response.status_code < 500, described
    if 400 <= response.status_code < 500:
        assert response.headers.get("content-type", [""])[0].startswith("application/json"), described
        body = response.json()
        assert set(body) == {"error"}, described
        assert {"code", "message"} <= set(body["error"]) <= {"code", "message", "field", "errors"}, described
        for problem in body["error"].get("errors", []):  # every invalid field, the first one first
            assert {"message"} <= set(problem) <= {"field", "message"}, described
        if "errors" in body["error"]:
            assert body["error"]["errors"][0].get("field") == body["error"].get("field"), described
        assert isinstance(body["error"]["code"], str) and body["error"]["code"].isupper(), described
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], described
