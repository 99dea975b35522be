"""Tenant isolation on every route of the API: another user's task does not exist for the caller
(a plain 404, the same answer as an unknown id), lists show only the caller's own tasks, and a
route nobody classified here fails the suite until someone does."""

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from exports.core.aws.s3_results import S3ResultStore
from exports.core.status import TaskStatus
from functions.submit import handler as api
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import Resources, put_items
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.reliability.faults import Lanes

UNKNOWN_ID = "exp_01JZZZZZZZZZZZZZZZZZZZZZZZ"
SOME_DESTINATION = "dst_01JZZZZZZZZZZZZZZZZZZZZZZZ"
# Every route of the API and how it is checked; a new route must be added here.
TASK_ROUTES = {
    ("get", "/v1/exports/{task_id}"),
    ("get", "/v1/exports/{task_id}/download"),
    ("post", "/v1/exports/{task_id}/cancel"),
    ("post", "/v1/exports/{task_id}/retry"),
    # A delivery is its task's: the task is looked up first, in the caller's own (404 otherwise).
    ("post", "/v1/exports/{task_id}/deliveries/{destination_id}/retry"),
}
COLLECTION_ROUTES = {("get", "/v1/exports"), ("post", "/v1/exports")}
# Export types are per caller (access rules, tests/e2e/test_tenancy_e2e.py), not per task.
SHARED_ROUTES = {("get", "/v1/export-types"), ("get", "/v1/export-types/{name}")}
# A push channel ticket is bound to its caller; whose events it receives is tested over the real
# channel (tests/e2e/test_push_e2e.py, tests/integration/test_push_stores.py). /v1/me answers
# with the caller's own token.
CALLER_ROUTES = {("post", "/v1/stream-tickets"), ("get", "/v1/me")}
# A schedule is its owner's alone, as a task is (docs/schedules.md, "Security").
SCHEDULE_ROUTES = {
    ("get", "/v1/schedules/{schedule_id}"),
    ("patch", "/v1/schedules/{schedule_id}"),
    ("delete", "/v1/schedules/{schedule_id}"),
    ("post", "/v1/schedules/{schedule_id}/run"),
    ("get", "/v1/schedules/{schedule_id}/latest"),
    ("post", "/v1/schedules/{schedule_id}/permalink"),
    ("delete", "/v1/schedules/{schedule_id}/permalink"),
}
# A schedule's secret permalink needs no token: its key is the credential (docs/schedules.md,
# "Feeds"; a wrong or revoked key is 404: tests/e2e/test_feeds_e2e.py).
PERMALINK_ROUTES = {("get", "/v1/permalinks/{schedule_id}")}
SCHEDULE_COLLECTION_ROUTES = {("get", "/v1/schedules"), ("post", "/v1/schedules")}
# The audit trail is read by a tenant's admins, of their own tenant only (docs/audit.md; one
# tenant's admin against another's: tests/integration/test_audit_trail.py).
AUDIT_ROUTES = {("get", "/v1/audit"), ("get", "/v1/audit/usage")}
# A destination is its tenant's (docs/destinations.md): another tenant's is not found.
DESTINATION_ROUTES = {
    ("get", "/v1/destinations/{destination_id}"),
    ("patch", "/v1/destinations/{destination_id}"),
    ("delete", "/v1/destinations/{destination_id}"),
    ("post", "/v1/destinations/{destination_id}/confirm"),
    ("post", "/v1/destinations/{destination_id}/verify"),
}
DESTINATION_COLLECTION_ROUTES = {("get", "/v1/destinations"), ("post", "/v1/destinations")}
UNKNOWN_SCHEDULE = "sch_01JZZZZZZZZZZZZZZZZZZZZZZZ"
WEEKLY = {"export_type": "orders", "filters": {"date_from": "previous_week"}, "cron": "0 8 * * 1"}


def call(method: str, path: str, user: str | None, body: Any = None, query: dict[str, str] | None = None) -> Any:
    result = api.lambda_handler(http_event(method.upper(), path, body, user=user, query=query), FakeContext())
    return result["statusCode"], json.loads(result["body"]) if result["body"] else None


def submit(user: str, day: int) -> str:
    body = {"export_type": "orders", "filters": {"date_from": f"2025-03-{day:02d}", "date_to": f"2025-03-{day:02d}"}}
    status, answer = call("post", "/v1/exports", user, body)
    assert status == 202, answer
    return answer["task_id"]


@pytest.fixture(scope="module")
def tenants(module_aws: Resources) -> dict[str, dict[str, str]]:
    """alice: a COMPLETED, a PENDING and a CANCELLED task; bob: one PENDING task."""
    put_items(module_aws.orders_table, demo_orders(400, SEED_DAY))
    completed = submit("alice", 10)
    lanes = Lanes(module_aws)
    lanes.settle("normal", lanes.invoke("normal", lanes.receive("normal")))
    tasks = {
        "alice": {"completed": completed, "pending": submit("alice", 11), "cancelled": submit("alice", 12)},
        "bob": {"pending": submit("bob", 13)},
    }
    assert call("post", f"/v1/exports/{tasks['alice']['cancelled']}/cancel", "alice")[0] == 200
    assert call("get", f"/v1/exports/{completed}", "alice")[1]["status"] == TaskStatus.COMPLETED
    return tasks


@pytest.fixture
def presigned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every download link minted while the test runs."""
    minted: list[str] = []
    original = S3ResultStore.presign_download

    def spy(self: S3ResultStore, key: str, file_name: str, ttl_sec: int) -> str:
        minted.append(key)
        return original(self, key, file_name, ttl_sec)

    monkeypatch.setattr(S3ResultStore, "presign_download", spy)
    yield minted


def test_every_route_is_classified() -> None:
    api.load_every_route()  # each group of routes is imported on first use
    paths = api.app.get_openapi_schema().paths or {}
    methods = ("get", "post", "put", "patch", "delete")
    routes = {(method, path) for path, item in paths.items() for method in methods if getattr(item, method)}
    assert routes == (
        TASK_ROUTES
        | COLLECTION_ROUTES
        | SHARED_ROUTES
        | CALLER_ROUTES
        | SCHEDULE_ROUTES
        | SCHEDULE_COLLECTION_ROUTES
        | AUDIT_ROUTES
        | DESTINATION_ROUTES
        | DESTINATION_COLLECTION_ROUTES
        | PERMALINK_ROUTES
    )


@pytest.mark.parametrize(("method", "route"), sorted(AUDIT_ROUTES))
@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"custom:tenant_id": "acme", "cognito:groups": "[finance]"},
        # An admin of no tenant has no trail to read, and may name none.
        {"cognito:groups": "[admin]"},
    ],
)
def test_the_audit_routes_refuse_all_but_a_tenants_admin(
    tenants: dict[str, dict[str, str]], method: str, route: str, claims: dict[str, str]
) -> None:
    event = http_event(method.upper(), route, user="mallory", claims=claims, query={"from": "2025-03-10"})
    result = api.lambda_handler(event, FakeContext())

    assert (result["statusCode"], json.loads(result["body"])["error"]["code"]) == (403, "NOT_AUDIT_ADMIN")


@pytest.mark.parametrize(("method", "route"), sorted(SCHEDULE_ROUTES))
def test_another_users_schedule_is_not_found_on_every_schedule_route(
    tenants: dict[str, dict[str, str]], method: str, route: str
) -> None:
    status, created = call("post", "/v1/schedules", "alice", WEEKLY)
    assert status == 201, created
    target = created["schedule_id"]
    body = {"state": "PAUSED"} if method == "patch" else None

    status, answer = call(method, route.format(schedule_id=target), "bob", body)
    unknown_status, unknown_answer = call(method, route.format(schedule_id=UNKNOWN_SCHEDULE), "bob", body)

    assert status == unknown_status == 404
    assert answer["error"]["code"] == "SCHEDULE_NOT_FOUND"
    assert answer["error"]["message"].replace(target, "<id>") == unknown_answer["error"]["message"].replace(
        UNKNOWN_SCHEDULE, "<id>"
    )
    after = call("get", f"/v1/schedules/{target}", "alice")[1]
    assert after["state"] == "ACTIVE" and after["updated_at"] == created["updated_at"]
    assert call("get", "/v1/exports", "alice", query={"schedule_id": target})[1]["items"] == []
    assert call("delete", f"/v1/schedules/{target}", "alice")[0] == 204


def test_schedule_lists_and_a_schedules_runs_show_only_the_callers(tenants: dict[str, dict[str, str]]) -> None:
    status, created = call("post", "/v1/schedules", "alice", WEEKLY)
    assert status == 201, created
    target = created["schedule_id"]
    # (Its runs as another user: tests/integration/test_schedules_moto.py, tests/e2e/test_schedules_e2e.py.)
    assert call("get", "/v1/schedules", "bob")[1]["items"] == []
    assert call("get", "/v1/exports", "bob", query={"schedule_id": target})[1]["items"] == []
    assert [item["schedule_id"] for item in call("get", "/v1/schedules", "alice")[1]["items"]] == [target]
    assert call("delete", f"/v1/schedules/{target}", "alice")[0] == 204


@pytest.mark.parametrize(("method", "route"), sorted(TASK_ROUTES))
@pytest.mark.parametrize("state", ["completed", "pending", "cancelled"])
def test_another_users_task_is_not_found_on_every_task_route(
    tenants: dict[str, dict[str, str]], presigned: list[str], method: str, route: str, state: str
) -> None:
    target = tenants["alice"][state]
    before = call("get", f"/v1/exports/{target}", "alice")[1]
    presigned.clear()

    status, answer = call(method, route.format(task_id=target, destination_id=SOME_DESTINATION), "bob")
    unknown_status, unknown_answer = call(
        method, route.format(task_id=UNKNOWN_ID, destination_id=SOME_DESTINATION), "bob"
    )

    assert status == unknown_status == 404
    assert answer["error"]["code"] == "TASK_NOT_FOUND"
    # Indistinguishable from an id that does not exist.
    assert answer["error"]["message"].replace(target, "<id>") == unknown_answer["error"]["message"].replace(
        UNKNOWN_ID, "<id>"
    )
    assert presigned == []
    after = call("get", f"/v1/exports/{target}", "alice")[1]
    assert {k: v for k, v in after.items() if not k.startswith("download")} == {
        k: v for k, v in before.items() if not k.startswith("download")
    }


def test_lists_show_only_the_callers_tasks_whatever_the_filter(tenants: dict[str, dict[str, str]]) -> None:
    for user, own in tenants.items():
        status, page = call("get", "/v1/exports", user, query={"limit": "100"})
        assert status == 200
        assert {item["task_id"] for item in page["items"]} == set(own.values())
        for wanted in TaskStatus:
            _, filtered = call("get", "/v1/exports", user, query={"status": wanted.value})
            assert {item["task_id"] for item in filtered["items"]} <= set(own.values())


def test_a_page_token_of_another_user_lists_only_the_callers_own_tasks(tenants: dict[str, dict[str, str]]) -> None:
    # A page's token is the id of its last task (docs/reliability.md): any well-formed id is a
    # position in the caller's own list, so another user's says nothing of theirs.
    _, page = call("get", "/v1/exports", "alice", query={"limit": "1"})
    assert page["next_token"]

    status, answer = call("get", "/v1/exports", "bob", query={"limit": "100", "next_token": page["next_token"]})

    assert status == 200
    assert {item["task_id"] for item in answer["items"]} <= set(tenants["bob"].values())


def test_a_submit_cannot_name_another_owner(tenants: dict[str, dict[str, str]]) -> None:
    filters = {"date_from": "2025-03-01", "date_to": "2025-03-01"}
    body = {"export_type": "orders", "user_id": "alice", "filters": filters}
    status, answer = call("post", "/v1/exports", "bob", body)
    assert status == 422
    assert answer["error"]["field"] == "user_id"


@pytest.mark.parametrize(
    ("method", "route"),
    sorted(
        TASK_ROUTES
        | COLLECTION_ROUTES
        | SHARED_ROUTES
        | CALLER_ROUTES
        | SCHEDULE_ROUTES
        | SCHEDULE_COLLECTION_ROUTES
        | AUDIT_ROUTES
    ),
)
def test_every_route_needs_a_caller(tenants: dict[str, dict[str, str]], method: str, route: str) -> None:
    path = route.format(
        task_id=tenants["alice"]["completed"],
        name="orders",
        schedule_id="sch_01JAAAAAAAAAAAAAAAAAAAAAAA",
        destination_id=SOME_DESTINATION,
    )
    # A body the route accepts: the caller is what is missing.
    bodies = {("post", "/v1/schedules"): WEEKLY, ("patch", "/v1/schedules/{schedule_id}"): {"state": "PAUSED"}}
    body = bodies.get((method, route), {"export_type": "orders"} if method == "post" else None)
    status, answer = call(method, path, None, body)
    assert status == 401
    assert answer["error"]["code"] == "UNAUTHORIZED"


def test_the_task_id_pattern_of_the_404_message_is_the_callers_own_input(tenants: dict[str, dict[str, str]]) -> None:
    """The 404 repeats only what the caller sent: nothing about the owner or the state."""
    _, answer = call("get", f"/v1/exports/{tenants['alice']['completed']}", "bob")
    assert re.fullmatch(r"export task exp_\w+ not found", answer["error"]["message"])


DESTINATION_BODIES = {"patch": {"name": "mine"}, "post": {"host_key_fingerprint": "SHA256:" + "A" * 43}}


def _admin_of(tenant: str) -> dict[str, str]:
    return {"custom:tenant_id": tenant, "cognito:groups": "[admin]"}


@pytest.mark.parametrize(("method", "route"), sorted(DESTINATION_ROUTES))
def test_another_tenants_destination_is_not_found_on_every_destination_route(
    tenants: dict[str, dict[str, str]], method: str, route: str
) -> None:
    target = {
        "kind": "s3",
        "bucket": "acme-lake",
        "region": "us-east-1",
        "role_arn": "arn:aws:iam::210987654321:role/r",
    }
    created = api.lambda_handler(
        http_event("POST", "/v1/destinations", {"name": "Lake", "target": target}, claims=_admin_of("acme")),
        FakeContext(),
    )
    destination_id = json.loads(created["body"])["destination_id"]
    path = route.replace("{destination_id}", destination_id)
    body = DESTINATION_BODIES.get(method) if not path.endswith("/verify") else None

    answer = api.lambda_handler(http_event(method.upper(), path, body, claims=_admin_of("initech")), FakeContext())

    assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (404, "DESTINATION_NOT_FOUND")
    listed = api.lambda_handler(http_event("GET", "/v1/destinations", claims=_admin_of("initech")), FakeContext())
    assert destination_id not in listed["body"]
