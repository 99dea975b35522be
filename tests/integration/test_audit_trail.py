"""The audit trail on moto (docs/audit.md): three tenants export, their admins read and verify
their own tenant's chain after the tasks are gone, a changed record is named, another tenant's
admin sees nothing of it, and usage per tenant matches the tasks run."""

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.audit.model import verify
from exports.core.config.audit import AuditTable
from exports.core.config.env import Env
from exports.core.config.names import Names
from functions.audit import handler as audit_function
from functions.submit import handler as api
from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import REGION, Resources
from local_stack.stream_poller import as_lambda_record, is_task_record
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY, STREAMS_ENDPOINT
from tests.integration.test_export_types_moto import run_queued

# Who asks, with the claims their JWT would carry (local-users.toml's three, and an admin of
# each other tenant).
USERS = {
    "alice": {"custom:tenant_id": "acme", "cognito:groups": "[finance]"},
    "bob": {"custom:tenant_id": "globex"},
    "carol": {"custom:tenant_id": "initech", "cognito:groups": "[finance admin]"},
    "dave": {"custom:tenant_id": "acme", "cognito:groups": "[admin]"},
    "erin": {"custom:tenant_id": "globex", "cognito:groups": "[admin]"},
}
TODAY = datetime.now(UTC).date().isoformat()


def call(method: str, path: str, user: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
    result = api_handler(http_event(method, path, body, user=user, claims=USERS[user], query=query), FakeContext())
    body_text = result.get("body") or "null"
    return result["statusCode"], json.loads(body_text) if body_text.startswith(("{", "[", "n")) else body_text


def submit(user: str, days: int) -> str:
    filters = {"date_from": (SEED_DAY - timedelta(days=days - 1)).isoformat(), "date_to": SEED_DAY.isoformat()}
    status, answer = call("POST", "/v1/exports", user, {"export_type": "orders", "format": "csv", "filters": filters})
    assert status == 202, answer
    return str(answer["task_id"])


def run_audit_function(aws: Resources) -> None:
    """Hand the whole tasks stream to the audit function, as its mapping would (from the start
    each time: what is recorded already is skipped)."""
    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=aws.tasks_stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=aws.tasks_stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += [as_lambda_record(r, aws.tasks_stream_arn) for r in page["Records"] if is_task_record(r)]
            iterator = page.get("NextShardIterator") if page["Records"] else None
    assert audit_function.lambda_handler({"Records": records}, FakeContext()) == {"batchItemFailures": []}


def expire_every_task(aws: Resources) -> None:
    """What DynamoDB's TTL does once the tasks' retention passed (moto does not run TTL)."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for page in dynamodb.get_paginator("scan").paginate(TableName=aws.tasks_table):
        for item in page["Items"]:
            dynamodb.delete_item(TableName=aws.tasks_table, Key={"task_id": item["task_id"]})


def trail(user: str, **query: str) -> list[dict[str, Any]]:
    """Every record the user reads through GET /v1/audit (all pages)."""
    records: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        params = {"from": TODAY, "to": TODAY, "limit": "3", **query, **({"next_token": token} if token else {})}
        status, page = call("GET", "/v1/audit", user, query=params)
        assert status == 200, page
        records += page["items"]
        token = page["next_token"]
        if token is None:
            return records


@pytest.fixture
def audit_aws(orders: Resources) -> Resources:
    """The demo orders in moto (the audit function's cache is cleared with the others')."""
    return orders


def test_admins_read_and_verify_their_tenants_chain_after_the_tasks_expired(audit_aws: Resources) -> None:
    runs = {"alice": [submit("alice", 3), submit("alice", 5)], "bob": [submit("bob", 4)], "carol": [submit("carol", 2)]}
    run_queued(audit_aws)
    rows = {}
    for user, task_ids in runs.items():
        for task_id in task_ids:
            status, view = call("GET", f"/v1/exports/{task_id}", user)
            assert view["status"] == "COMPLETED", view
            rows[task_id] = (user, view["rows"])
    status, _ = call("GET", f"/v1/exports/{runs['alice'][0]}/download", "alice")
    assert status == 302
    run_audit_function(audit_aws)
    run_audit_function(audit_aws)  # a redelivered stream records nothing twice
    expire_every_task(audit_aws)

    acme = trail("dave")

    assert verify(acme).ok
    assert {record["tenant"] for record in acme} == {"acme"}
    actions = [(record["action"], record["subject"]) for record in acme]
    for task_id in runs["alice"]:
        assert actions.count(("export.submitted", task_id)) == 1
        assert actions.count(("export.completed", task_id)) == 1
        assert actions.count(("link.minted", task_id)) == 1
    assert actions.count(("download", runs["alice"][0])) == 1
    completed = [r for r in acme if r["action"] == "export.completed"]
    assert all(r["detail"]["rows"] == rows[r["subject"]][1] and len(r["detail"]["sha256"]) == 64 for r in completed)
    assert {r["actor"] for r in acme if r["action"] in ("export.submitted", "download")} == {"alice"}
    # Another tenant's admin sees nothing of acme's; a member who is no admin sees nothing at all.
    globex = trail("erin")
    assert verify(globex).ok and {record["tenant"] for record in globex} == {"globex"}
    assert not {record["subject"] for record in globex} & set(runs["alice"])
    assert call("GET", "/v1/audit", "alice", query={"from": TODAY})[0] == 403
    assert call("GET", "/v1/audit", "bob", query={"from": TODAY})[0] == 403


def test_a_changed_record_is_named_by_its_tenant_day_and_number(audit_aws: Resources) -> None:
    submit("alice", 3)
    run_queued(audit_aws)
    run_audit_function(audit_aws)
    completed = trail("dave", action="export.completed")[0]
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    key = {
        AuditTable.PARTITION_KEY: {"S": f"acme#{TODAY}"},
        AuditTable.SORT_KEY: {"S": f"{AuditTable.RECORD_PREFIX}{completed['seq']:010d}"},
    }
    stored = dynamodb.get_item(TableName=Names.AUDIT_TABLE, Key=key)["Item"]
    changed = json.loads(stored[AuditTable.RECORD_ATTRIBUTE]["S"])
    changed["detail"]["rows"] = 1
    dynamodb.put_item(
        TableName=Names.AUDIT_TABLE, Item={**stored, AuditTable.RECORD_ATTRIBUTE: {"S": json.dumps(changed)}}
    )

    verdict = verify(trail("dave"))

    assert verdict.broken is not None
    assert (verdict.broken.tenant, verdict.broken.day, verdict.broken.seq) == ("acme", TODAY, completed["seq"])


def test_usage_per_tenant_matches_the_tasks_run(audit_aws: Resources) -> None:
    runs = {"alice": [submit("alice", 3), submit("alice", 6)], "bob": [submit("bob", 4)]}
    run_queued(audit_aws)
    run_audit_function(audit_aws)
    expected: dict[str, tuple[int, int, int]] = {}
    for user, task_ids in runs.items():
        views = [call("GET", f"/v1/exports/{task_id}", user)[1] for task_id in task_ids]
        tenant = USERS[user]["custom:tenant_id"]
        expected[tenant] = (len(views), sum(v["rows"] for v in views), sum(v["size_bytes"] for v in views))

    for admin, tenant in (("dave", "acme"), ("erin", "globex")):
        status, usage = call("GET", "/v1/audit/usage", admin, query={"from": TODAY})
        assert status == 200 and usage["tenant"] == tenant
        day = usage["items"][0]
        assert (day["exports"], day["rows"], day["bytes"]) == expected[tenant]
        assert day["cpu_seconds"] >= 0
    status, usage = call("GET", "/v1/audit/usage", "carol", query={"from": TODAY})
    assert usage["items"][0]["exports"] == 0


def limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quotas: str) -> None:
    """The suite's declaration with acme's ``quotas`` (TOML lines), the functions rebuilt on it."""
    declaration = Path(__file__).resolve().parents[1] / "declarations" / "dynamodb_demo.toml"
    path = tmp_path / "limited.toml"
    path.write_text(declaration.read_text() + "\n[tenants.overrides.acme]\n" + quotas + "\n", encoding="utf-8")
    monkeypatch.setenv(Env.EXPORTS_CONFIG, str(path))
    api.dependencies.cache_clear()
    api.schedule_dependencies.cache_clear()
    audit_function.dependencies.cache_clear()


def test_a_tenant_over_its_rows_per_day_is_refused(
    audit_aws: Resources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited(tmp_path, monkeypatch, "max_rows_per_day = 1")
    submit("alice", 3)
    run_queued(audit_aws)
    run_audit_function(audit_aws)

    filters = {"date_from": "2025-03-01", "date_to": "2025-03-02"}
    status, answer = call("POST", "/v1/exports", "alice", {"export_type": "orders", "filters": filters})
    assert (status, answer["error"]["code"]) == (429, "TENANT_QUOTA_EXCEEDED")
    assert submit("bob", 3)


def test_a_tenant_with_its_active_exports_waits_until_one_ends(
    audit_aws: Resources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited(tmp_path, monkeypatch, "max_active_tasks = 1")
    submit("alice", 3)
    run_audit_function(audit_aws)

    status, answer = call(
        "POST",
        "/v1/exports",
        "dave",
        {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-01"}},
    )
    assert (status, answer["error"]["code"]) == (429, "TENANT_QUOTA_EXCEEDED")
    assert submit("bob", 2)  # another tenant's quota
    run_queued(audit_aws)
    run_audit_function(audit_aws)
    assert submit("dave", 2)


def test_a_tenant_with_its_schedules_creates_no_more_until_one_is_deleted(
    audit_aws: Resources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited(tmp_path, monkeypatch, "max_schedules = 1")
    weekly = {"export_type": "orders", "filters": {"date_from": "previous_week"}, "cron": "0 8 * * 1"}
    status, first = call("POST", "/v1/schedules", "alice", weekly)
    assert status == 201, first

    status, refused = call("POST", "/v1/schedules", "dave", weekly)
    assert (status, refused["error"]["code"]) == (429, "TENANT_QUOTA_EXCEEDED")
    assert call("POST", "/v1/schedules", "bob", weekly)[0] == 201
    assert call("DELETE", f"/v1/schedules/{first['schedule_id']}", "alice")[0] == 204
    assert call("POST", "/v1/schedules", "dave", weekly)[0] == 201
    changes = [r["action"] for r in trail("dave") if r["action"].startswith("schedule.")]
    assert changes == ["schedule.created", "schedule.deleted", "schedule.created"]


def test_a_schedule_the_service_pauses_is_a_change_by_system_with_its_reason(audit_aws: Resources) -> None:
    from functions.schedule import handler as schedule_function

    # Given acme's schedule whose export type is gone by its next firing
    weekly = {"export_type": "orders", "filters": {"date_from": "previous_week"}, "cron": "0 8 * * 1"}
    status, created = call("POST", "/v1/schedules", "alice", weekly)
    assert status == 201, created
    schedule_id = created["schedule_id"]
    store = api.schedule_dependencies().schedules
    stored = store.get(schedule_id)
    assert stored is not None
    store.replace(stored, stored.model_copy(update={"export_type": "retired_orders"}))

    # When it fires, and the firing is delivered again
    firing = {"schedule_id": schedule_id, "scheduled_time": f"{TODAY}T08:00:00Z", "execution_id": "x"}
    outcomes = [schedule_function.lambda_handler(firing, FakeContext())["outcome"] for _ in range(2)]
    assert outcomes == ["paused", "skipped"]

    # Then acme's chain has its pause once, by system, with the reason, and still verifies
    acme = trail("dave")
    assert verify(acme).ok
    pauses = [r for r in acme if r["subject"] == schedule_id and r["action"] == "schedule.changed"]
    assert len(pauses) == 1
    assert pauses[0]["actor"] == "system"
    assert pauses[0]["detail"]["change"] == "paused"
    assert pauses[0]["detail"]["reason"]["code"] == "EXPORT_TYPE_GONE"
    assert pauses[0]["detail"]["state"] == "PAUSED"
    # Another tenant's admin sees nothing of it
    assert not any(record["subject"] == schedule_id for record in trail("erin"))


def fire(schedule_id: str, at: datetime) -> str:
    """A firing of the schedule as EventBridge Scheduler delivers it; the task it made."""
    from functions.schedule import handler as schedule_function

    event = {"schedule_id": schedule_id, "scheduled_time": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "execution_id": "x"}
    fired = schedule_function.lambda_handler(event, FakeContext())
    assert fired["outcome"] == "created", fired
    return str(fired["task_id"])


def deliver_end(task_id: str) -> None:
    """The lifecycle workflow's Deliver step of an ended run (twice: a delivery retried)."""
    from functions.callback import handler as callback_function

    for _ in range(2):
        callback_function.lambda_handler({"action": "deliver", "task_id": task_id}, FakeContext())


def exportctl_verify(admins: dict[str, dict[str, Any]], admin: str) -> Any:
    """``exportctl audit verify --json`` as ``admin``, over HTTP to the API function (the local
    gateway on 127.0.0.1, as make run serves it)."""
    import threading

    from local_stack.gateway import Gateway
    from local_stack.local_users import LocalUser
    from tests.client.e2e_support import Exportctl

    tokens = {f"{user}-token": LocalUser(user, claims) for user, claims in admins.items()}
    gateway = Gateway(api_handler, tokens, port=0)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    try:
        return Exportctl(gateway.url, f"{admin}-token")("audit", "verify", "--json")
    finally:
        gateway.shutdown()


# Their admins as the gateway hands their claims to the API (lists, not API Gateway's strings).
ADMINS = {
    "dave": {"custom:tenant_id": "acme", "cognito:groups": ["admin"]},
    "erin": {"custom:tenant_id": "globex", "cognito:groups": ["admin"]},
}
# A Monday 08:00 UTC, the schedules' firing.
MONDAY = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


def test_a_scheduled_runs_mail_is_a_delivery_to_its_recipients(audit_aws: Resources) -> None:
    # Given acme's weekly schedule that mails its runs to finance (an allowed domain)
    weekly = {
        "name": "Weekly orders",
        "export_type": "orders",
        "format": "csv",
        "filters": {"date_from": "2025-03-24", "date_to": "2025-03-30"},
        "cron": "0 8 * * 1",
        "recipients": ["finance@acme.example"],
    }
    status, created = call("POST", "/v1/schedules", "alice", weekly)
    assert status == 201, created
    schedule_id = created["schedule_id"]

    # When it fires, its run completes and its end is delivered (and delivered again)
    task_id = fire(schedule_id, MONDAY)
    run_queued(audit_aws)
    deliver_end(task_id)
    run_audit_function(audit_aws)
    expire_every_task(audit_aws)

    # Then acme's chain has one delivery by mail, by system: where the file went and which file
    acme = trail("dave")
    assert verify(acme).ok
    (mail,) = [r for r in acme if r["subject"] == task_id and r["detail"].get("channel") == "mail"]
    completed = next(r for r in acme if r["subject"] == task_id and r["action"] == "export.completed")
    assert (mail["action"], mail["actor"], mail["tenant"]) == ("delivery.made", "system", "acme")
    assert mail["claims"] == completed["claims"]
    assert mail["detail"]["destination"] == ["finance@acme.example"]
    assert mail["detail"]["schedule_id"] == schedule_id and mail["detail"]["outcome"] == "COMPLETED"
    assert (mail["detail"]["file"], mail["detail"]["sha256"]) == (
        completed["detail"]["file"],
        completed["detail"]["sha256"],
    )
    # The file is small: the mail carried it (the deployment's limit), no link
    assert (mail["detail"]["attached"], mail["detail"]["link_expires_at"]) == (True, None)
    # Another tenant's admin sees nothing of it; exportctl verifies both chains over HTTP
    assert not any(record["subject"] == task_id for record in trail("erin"))
    for admin in ("dave", "erin"):
        verified = exportctl_verify(ADMINS, admin)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert json.loads(verified.stdout)["ok"] is True


def test_a_schedule_paused_after_failures_in_a_row_is_a_change_by_system(audit_aws: Resources) -> None:
    from exports.core.config.schedules import Schedules

    # Given acme's schedule whose source is gone (the orders table deleted): each run fails
    weekly = {"export_type": "orders", "filters": {"date_from": "previous_week"}, "cron": "0 8 * * 1"}
    status, created = call("POST", "/v1/schedules", "alice", weekly)
    assert status == 201, created
    schedule_id = created["schedule_id"]
    boto3.client("dynamodb", region_name=REGION).delete_table(TableName=audit_aws.orders_table)

    # When it fires as often as the failures that pause it, each run ending and delivered
    runs = []
    for week in range(Schedules.MAX_CONSECUTIVE_FAILURES):
        runs.append(fire(schedule_id, MONDAY + timedelta(days=7 * week)))
        run_queued(audit_aws)
        deliver_end(runs[-1])
    status, schedule = call("GET", f"/v1/schedules/{schedule_id}", "alice")
    assert (schedule["state"], schedule["paused_reason"]["code"]) == ("PAUSED", "TOO_MANY_FAILURES")
    run_audit_function(audit_aws)

    # Then acme's chain has the pause once, by system, naming the run that caused it
    acme = trail("dave")
    assert verify(acme).ok
    assert [r["action"] for r in acme if r["subject"] in runs].count("export.failed") == len(runs)
    (paused,) = [r for r in acme if r["subject"] == schedule_id and r["detail"].get("change") == "paused"]
    assert (paused["action"], paused["actor"], paused["tenant"]) == ("schedule.changed", "system", "acme")
    assert paused["detail"]["reason"] == {
        "code": "TOO_MANY_FAILURES",
        "message": schedule["paused_reason"]["message"],
        "task_id": runs[-1],
    }
    assert paused["detail"]["state"] == "PAUSED"
    assert not any(record["subject"] == schedule_id for record in trail("erin"))
    verified = exportctl_verify(ADMINS, "dave")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True, verified.stdout


def test_a_schedules_latest_file_and_permalink_are_downloads_and_the_permalink_changes_recorded(
    audit_aws: Resources,
) -> None:
    # Given acme's schedule with a completed run
    weekly = {
        "export_type": "orders",
        "filters": {"date_from": "2025-03-24", "date_to": "2025-03-30"},
        "cron": "0 8 * * 1",
    }
    status, created = call("POST", "/v1/schedules", "alice", weekly)
    assert status == 201, created
    schedule_id = created["schedule_id"]
    task_id = fire(schedule_id, MONDAY)
    run_queued(audit_aws)
    deliver_end(task_id)

    # When its owner downloads the latest file, mints a permalink that someone uses, then revokes it
    assert call("GET", f"/v1/schedules/{schedule_id}/latest", "alice")[0] == 302
    status, permalink = call("POST", f"/v1/schedules/{schedule_id}/permalink", "alice")
    assert status == 201, permalink
    anonymous = http_event("GET", f"/v1/permalinks/{schedule_id}", user=None, query={"key": permalink["key"]})
    assert api_handler(anonymous, FakeContext())["statusCode"] == 302
    assert call("DELETE", f"/v1/schedules/{schedule_id}/permalink", "alice")[0] == 204
    run_audit_function(audit_aws)

    # Then acme's chain has both downloads of the run's file and both changes, never the key
    acme = trail("dave")
    assert verify(acme).ok
    downloads = [r for r in acme if r["action"] == "download" and r["subject"] == task_id]
    assert [(r["actor"], r["detail"]["via"], r["detail"]["schedule_id"]) for r in downloads] == [
        ("alice", "schedule_latest", schedule_id),
        ("permalink", "permalink", schedule_id),
    ]
    assert (downloads[1]["detail"]["source_ip"], downloads[1]["detail"]["user_agent"]) == ("1.2.3.4", "t")
    file = next(r for r in acme if r["action"] == "export.completed" and r["subject"] == task_id)["detail"]["file"]
    assert {r["detail"]["file"] for r in downloads} == {file}
    changes = [r["detail"].get("change") for r in acme if r["subject"] == schedule_id]
    assert changes[-2:] == ["permalink_minted", "permalink_revoked"]
    assert permalink["key"] not in json.dumps(acme)
    assert not any(r["subject"] in (task_id, schedule_id) for r in trail("erin"))


def task_records(aws: Resources) -> list[dict[str, Any]]:
    """The tasks stream's task records from the start, as a stream mapping hands them over."""
    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=aws.tasks_stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=aws.tasks_stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += [as_lambda_record(r, aws.tasks_stream_arn) for r in page["Records"] if is_task_record(r)]
            iterator = page.get("NextShardIterator") if page["Records"] else None
    return records


class KeptPosts:
    """The WebSocket management API's posts, kept (the connection's other end)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, Mapping[str, Any]]] = []

    def post(self, connection_id: str, message: Mapping[str, Any]) -> None:
        self.posts.append((connection_id, message))


def test_a_download_link_a_push_event_carries_is_recorded_before_it_is_sent(audit_aws: Resources) -> None:
    import dataclasses

    from exports.core.metrics import PowertoolsMetrics
    from exports.push import service as push
    from exports.push.composition import compose_push
    from exports.push.model import Subscription, Viewer
    from functions.push.handler import handle, metrics

    # Given alice following her tasks on a WebSocket connection, and her export completed
    sent = KeptPosts()
    deps = dataclasses.replace(compose_push(PowertoolsMetrics(metrics)), poster=sent)
    alice = Viewer("alice", {"sub": "alice", **USERS["alice"]})
    now = datetime.now(UTC)
    deps.connections.open("alice-1", alice, now)
    deps.connections.subscribe(Subscription("alice-1", alice, None), now)
    task_id = submit("alice", 3)
    run_queued(audit_aws)

    # When the push function sends the task's writes (and the stream delivers them again), and
    # she subscribes to the task on a second connection
    for _ in range(2):
        assert handle(task_records(audit_aws), deps) == {"batchItemFailures": []}
    deps.connections.open("alice-2", alice, now)
    push.subscribe("alice-2", alice, task_id, deps)
    run_audit_function(audit_aws)

    # Then each link sent is in acme's chain as a link handed to alice through the push channel
    links = [
        (connection, message["data"]["download_expires_at"])
        for connection, message in sent.posts
        if message.get("data", {}).get("download_url")
    ]
    # (a delivery again sends a link again)
    assert [connection for connection, _ in links] == ["alice-1", "alice-1", "alice-2"]
    acme = trail("dave")
    assert verify(acme).ok
    minted = [r for r in acme if r["action"] == "link.minted" and r["subject"] == task_id]
    assert {(r["actor"], r["detail"]["via"]) for r in minted} == {("alice", "push")}
    assert sorted(r["detail"]["link_expires_at"] for r in minted) == sorted(expires for _, expires in links)
    assert not any(r["subject"] == task_id for r in trail("erin"))
