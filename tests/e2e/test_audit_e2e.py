"""The audit trail through `make run`'s stack over real HTTP (docs/audit.md), three tenants on
the repository's exports.toml: their exports run, the tasks expire, each tenant's admin reads and
verifies their own chain with exportctl, a changed record is named, another tenant's admin sees
nothing of it, and usage per tenant matches the tasks run."""

import csv
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from exports.core.config.audit import AuditTable
from exports.core.config.names import Names
from tests.client.e2e_support import Exportctl
from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import TOKENS, Stack, recent, running_stack

pytestmark = pytest.mark.e2e

# local-users.toml's three (alice of acme, bob of globex, carol of initech and its admin), and an
# admin of each other tenant.
USERS = """
[users.alice]
claims = { "custom:tenant_id" = "acme", "cognito:groups" = ["finance"] }
[users.bob]
claims = { "custom:tenant_id" = "globex" }
[users.carol]
claims = { "custom:tenant_id" = "initech", "cognito:groups" = ["finance", "admin"] }
[users.dave]
claims = { "custom:tenant_id" = "acme", "cognito:groups" = ["admin"] }
[users.erin]
claims = { "custom:tenant_id" = "globex", "cognito:groups" = ["admin"] }
"""
ALL_TOKENS = {**TOKENS, "erin": "erin-token"}
RUNS = {"alice": (3, 9), "bob": (5,), "carol": (2, 4, 6)}
TENANT = {"alice": "acme", "bob": "globex", "carol": "initech"}
ADMIN = {"acme": "dave", "globex": "erin", "initech": "carol"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    users = tmp_path_factory.mktemp("audit") / "users.toml"
    users.write_text(USERS, encoding="utf-8")
    tokens = ",".join(f"{token}={user}" for user, token in ALL_TOKENS.items())
    environment = {"EXPORTS_LOCAL_USERS": str(users), "EXPORTS_LOCAL_TOKENS": tokens}
    with running_stack(demo_orders=1000, postgres=True, environment=environment) as running:
        running.tokens = ALL_TOKENS
        yield running


def submit(stack: Stack, user: str, days: int) -> str:
    body: dict[str, Any] = {
        "export_type": "orders",
        "format": "csv",
        "filters": {"date_from": recent(days), "date_to": recent(0)},
    }
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def audit(stack: Stack, user: str, **query: str) -> requests.Response:
    return requests.get(f"{stack.url}/v1/audit", params=query, headers=stack.headers(user), timeout=10)


def until_recorded(stack: Stack, admin: str, completed: int, limit_sec: float = 60) -> None:
    """Until the audit function recorded ``completed`` ends of the admin's tenant."""
    deadline = time.monotonic() + limit_sec
    while True:
        records = audit(stack, admin, action="export.completed", limit="1000").json()["items"]
        if len(records) >= completed:
            return
        assert time.monotonic() < deadline, records
        time.sleep(0.5)


def expire_tasks(stack: Stack) -> None:
    """What the tasks table's TTL does after the results' retention (the embedded AWS runs none)."""
    dynamodb = stack.client("dynamodb")
    for item in dynamodb.scan(TableName=Names.TASKS_TABLE)["Items"]:
        dynamodb.delete_item(TableName=Names.TASKS_TABLE, Key={"task_id": item["task_id"]})


def exportctl(stack: Stack, user: str) -> Exportctl:
    return Exportctl(stack.url, stack.tokens[user])


def test_three_tenants_audit_chains_hold_after_expiry_and_a_change_is_named(stack: Stack) -> None:
    views: dict[str, list[dict[str, Any]]] = {}
    for user, ranges in RUNS.items():
        task_ids = [submit(stack, user, days) for days in ranges]
        views[user] = [finished(stack, task_id, user)[0] for task_id in task_ids]
    downloaded = views["alice"][0]["task_id"]
    response = requests.get(
        f"{stack.url}/v1/exports/{downloaded}/download",
        headers=stack.headers("alice"),
        allow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 302
    for user, tenant in TENANT.items():
        until_recorded(stack, ADMIN[tenant], len(RUNS[user]))
    expire_tasks(stack)

    for user, tenant in TENANT.items():
        admin = ADMIN[tenant]
        verified = exportctl(stack, admin)("audit", "verify", "--json")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert json.loads(verified.stdout)["ok"] is True
        listed = json.loads(exportctl(stack, admin)("audit", "list", "--json").stdout)["items"]
        assert {record["tenant"] for record in listed} == {tenant}
        mine = {view["task_id"] for view in views[user]}
        assert {r["subject"] for r in listed if r["action"] == "export.completed"} == mine
        # Usage per tenant: the tasks it ran, their rows and bytes.
        usage = json.loads(exportctl(stack, admin)("audit", "usage", "--json").stdout)
        day = usage["items"][0]
        assert usage["tenant"] == tenant
        assert (day["exports"], day["rows"], day["bytes"]) == (
            len(views[user]),
            sum(view["rows"] for view in views[user]),
            sum(view["size_bytes"] for view in views[user]),
        )
        # Nothing of another tenant's.
        others = {view["task_id"] for other, vs in views.items() if other != user for view in vs}
        assert not {record["subject"] for record in listed} & others
    assert ("download", downloaded) in {(r["action"], r["subject"]) for r in audit(stack, "dave").json()["items"]}
    assert audit(stack, "alice").status_code == 403
    assert audit(stack, "bob").status_code == 403

    # The audit log as an export: acme's admin gets acme's records as a CSV file, nothing else.
    day = recent(0)
    body: dict[str, Any] = {"export_type": "audit_log", "format": "csv", "filters": {"date_from": day, "date_to": day}}
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers("dave"), timeout=10)
    assert answer.status_code == 202, answer.text
    recorded = audit(stack, "dave", limit="1000").json()["items"]
    _, content = finished(stack, answer.json()["task_id"], "dave")
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")))[1:]
    hashes = {record["hash"] for record in recorded}
    assert len(rows) >= len(recorded) and {row[-2] for row in rows} >= hashes
    assert {row[-1] for row in rows} == {"acme"}
    refused = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers("alice"), timeout=10)
    # A type refused to the caller looks like no type.
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "UNKNOWN_EXPORT_TYPE")

    # One of acme's records changed in the table: verify names it, and only acme's chain breaks.
    target = next(r for r in audit(stack, "dave", action="export.completed").json()["items"])
    dynamodb = stack.client("dynamodb")
    key = {
        AuditTable.PARTITION_KEY: {"S": f"acme#{target['day']}"},
        AuditTable.SORT_KEY: {"S": f"{AuditTable.RECORD_PREFIX}{target['seq']:010d}"},
    }
    stored = dynamodb.get_item(TableName=Names.AUDIT_TABLE, Key=key)["Item"]
    changed = json.loads(stored[AuditTable.RECORD_ATTRIBUTE]["S"])
    changed["detail"]["rows"] += 1
    dynamodb.put_item(
        TableName=Names.AUDIT_TABLE, Item={**stored, AuditTable.RECORD_ATTRIBUTE: {"S": json.dumps(changed)}}
    )

    broken = exportctl(stack, "dave")("audit", "verify")
    assert broken.returncode == 1
    assert f"acme {target['day']} #{target['seq']}" in broken.stdout
    assert exportctl(stack, "erin")("audit", "verify").returncode == 0
