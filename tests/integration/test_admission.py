"""Admission and fairness against moto: dedup, idempotency keys, lanes, backpressure, quotas,
hot-key limits and estimates. Races use real threads."""

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.adapters.dynamodb_idempotency import IdempotentCalls
from exports.adapters.task_table import capacity_id, drain_id, key
from exports.config.queues import LANES
from exports.domain.admission import Estimates, throughput_key
from exports.domain.capacity import lane_pool
from exports.domain.status import TaskStatus
from exports.ports import TaskMessage
from exports.services.deliveries import process_task
from exports.services.endings import Outcome
from functions.submit import handler as api
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from local_stack.worker_loop import WorkerLoop
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY

BODY: dict[str, Any] = {
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
}


def submit(body: dict[str, Any] = BODY, user: str = "alice", headers: dict[str, str] | None = None) -> dict[str, Any]:
    result = api.lambda_handler(http_event("POST", "/v1/exports", body, user=user, headers=headers), FakeContext())
    headers = {name.lower(): value for name, value in (result.get("headers") or {}).items()}
    return {"http": result["statusCode"], "headers": headers, **json.loads(result["body"])}


def task_items(aws: Resources) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=aws.tasks_table)["Items"]
    return [item for item in items if "user_id" in item]


def messages(aws: Resources) -> list[MessageTypeDef]:
    sqs = boto3.client("sqs", region_name=REGION)
    found: list[MessageTypeDef] = []
    for url in aws.queue_urls.values():
        found += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get("Messages", [])
    return found


def active_slots(user: str) -> int:
    return worker.dependencies().tasks.active_count(user)


# --- dedup -------------------------------------------------------------------------------------


def test_an_identical_active_request_returns_the_same_task(aws: Resources) -> None:
    first = submit()
    reordered = {"filters": {"date_to": "2025-03-31", "date_from": "2025-03-30"}, "export_type": "orders"}

    second = submit(reordered)

    assert (second["http"], second["task_id"], second["deduplicated"]) == (202, first["task_id"], True)
    assert first["deduplicated"] is False
    assert len(task_items(aws)) == 1
    assert len(messages(aws)) == 1


def test_other_users_formats_or_filters_are_not_merged(aws: Resources) -> None:
    ids = {
        submit()["task_id"],
        submit(user="bob")["task_id"],
        submit({**BODY, "format": "xlsx"})["task_id"],
        submit({**BODY, "filters": {**BODY["filters"], "status": "paid"}})["task_id"],
    }
    assert len(ids) == 4


def test_fifty_concurrent_identical_submits_make_one_task_and_one_message(
    aws: Resources, atomic_dynamodb: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lambda runs one invocation per process; 50 threads share one in this test, and Powertools'
    # metrics buffer is per process, so it stays out of the way here.
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    barrier = threading.Barrier(50)

    def one() -> dict[str, Any]:
        barrier.wait()
        return submit()

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(lambda _: one(), range(50)))

    assert {a["http"] for a in answers} == {202}
    assert len({a["task_id"] for a in answers}) == 1
    assert sum(not a["deduplicated"] for a in answers) == 1
    assert len(task_items(aws)) == 1
    assert len(messages(aws)) == 1
    assert active_slots("alice") == 1


def test_once_the_first_task_ended_an_identical_request_makes_a_new_task(aws: Resources) -> None:
    first = submit()
    api.lambda_handler(http_event("POST", f"/v1/exports/{first['task_id']}/cancel"), FakeContext())

    second = submit()

    assert second["task_id"] != first["task_id"]
    assert second["deduplicated"] is False


# --- idempotency keys ---------------------------------------------------------------------------


def test_the_same_key_and_body_replay_the_first_answer(aws: Resources) -> None:
    key = {"Idempotency-Key": "order-export-7f3a"}
    first = submit(headers=key)
    again = submit(headers=key)

    assert again["http"] == 202
    assert {k: again[k] for k in ("task_id", "created_at", "status")} == {
        k: first[k] for k in ("task_id", "created_at", "status")
    }
    assert again["headers"].get("idempotent-replayed") == "true"
    assert "idempotent-replayed" not in first["headers"]
    assert len(task_items(aws)) == 1


def test_the_same_key_with_another_body_is_refused(aws: Resources) -> None:
    key = {"Idempotency-Key": "k-1"}
    submit(headers=key)
    refused = submit({**BODY, "format": "xlsx"}, headers=key)
    assert refused["http"] == 422
    assert (refused["error"]["code"], refused["error"]["field"]) == ("IDEMPOTENCY_KEY_REUSED", "Idempotency-Key")
    assert len(task_items(aws)) == 1


def test_keys_are_per_user(aws: Resources) -> None:
    key = {"Idempotency-Key": "shared-key"}
    assert submit(headers=key)["task_id"] != submit(user="bob", headers=key)["task_id"]


def test_keys_are_per_caller_scope_too(aws: Resources) -> None:
    # The same user, whose tenant claim changed: the same key is another request.
    calls = IdempotentCalls(boto3.client("dynamodb", region_name=REGION), aws.tasks_table)
    answers = iter([{"task_id": "first"}, {"task_id": "second"}, {"task_id": "unexpected"}])

    def call() -> dict[str, Any]:
        return next(answers)

    acme = calls.replay_or_call("alice", "k-scope", {"b": 1}, call, scope='{"tenant_id": "acme"}')
    globex = calls.replay_or_call("alice", "k-scope", {"b": 1}, call, scope='{"tenant_id": "globex"}')
    again = calls.replay_or_call("alice", "k-scope", {"b": 1}, call, scope='{"tenant_id": "acme"}')
    assert (acme, globex, again) == (
        ({"task_id": "first"}, False),
        ({"task_id": "second"}, False),
        ({"task_id": "first"}, True),
    )


def test_a_request_that_fails_validation_stores_nothing_under_its_key(aws: Resources) -> None:
    key = {"Idempotency-Key": "k-2"}
    bad = submit({**BODY, "priority": 0}, headers=key)
    assert bad["http"] == 422
    good = submit(headers=key)
    assert good["http"] == 202


@pytest.mark.parametrize("key", ["x" * 256, "", "with space", "ünïcode"])
def test_malformed_keys_are_refused(aws: Resources, key: str) -> None:
    answer = submit(headers={"Idempotency-Key": key})
    assert (answer["http"], answer["error"]["field"]) == (422, "Idempotency-Key")
    assert task_items(aws) == []


# --- backpressure and quotas --------------------------------------------------------------------


def test_a_full_backlog_answers_429_and_creates_nothing(aws: Resources, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPORTS_MAX_BACKLOG", "3")
    api.dependencies.cache_clear()
    for n in range(3):
        assert (
            submit({**BODY, "filters": {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}})["http"] == 202
        )
    # The depth is cached for a few seconds; a fresh function instance sees it at once.
    api.dependencies.cache_clear()

    refused = submit()

    assert refused["http"] == 429
    assert refused["error"]["code"] == "BACKLOG_FULL"
    assert int(refused["headers"]["retry-after"]) > 0
    assert len(task_items(aws)) == 3


def test_a_user_at_quota_gets_429_until_a_task_ends(aws: Resources, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPORTS_MAX_ACTIVE_TASKS_PER_USER", "2")
    api.dependencies.cache_clear()
    bodies = [{**BODY, "filters": {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}} for n in range(3)]
    first, _ = submit(bodies[0]), submit(bodies[1])

    refused = submit(bodies[2])
    assert (refused["http"], refused["error"]["code"]) == (429, "QUOTA_EXCEEDED")
    assert int(refused["headers"]["retry-after"]) > 0
    assert submit(bodies[2], user="bob")["http"] == 202  # quotas are per user

    api.lambda_handler(http_event("POST", f"/v1/exports/{first['task_id']}/cancel"), FakeContext())
    assert submit(bodies[2])["http"] == 202


def test_every_terminal_state_gives_the_slot_back(orders: Resources) -> None:
    deps = worker.dependencies()
    bodies = [{**BODY, "filters": {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}} for n in range(4)]
    ids = [submit(body)["task_id"] for body in bodies]
    assert active_slots("alice") == 4

    api.lambda_handler(http_event("POST", f"/v1/exports/{ids[0]}/cancel"), FakeContext())  # CANCELLED
    expired = deps.tasks.get(ids[1])
    late = replace(deps, clock=lambda: expired.deadline + timedelta(seconds=1))
    assert process_task(TaskMessage(ids[1], "orders", 5), late) is Outcome.TIMED_OUT  # TIMEOUT
    assert process_task(TaskMessage(ids[2], "orders", 5), deps) is Outcome.COMPLETED  # COMPLETED
    broken = deps.tasks.get(ids[3])
    assert broken is not None
    deps.tasks.update(broken, broken.model_copy(update={"max_retries": 0, "filters": {"date_from": "x"}}))
    assert process_task(TaskMessage(ids[3], "orders", 5), deps) is Outcome.FAILED  # FAILED
    assert deps.tasks.get(ids[3]).error.code == "INVALID_FILTERS"

    assert {deps.tasks.get(i).status for i in ids} == {
        TaskStatus.CANCELLED,
        TaskStatus.TIMEOUT,
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
    }
    assert active_slots("alice") == 0


# --- hot keys -----------------------------------------------------------------------------------


def test_a_hot_key_over_its_rate_defers_without_spending_retries(
    orders: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPORTS_HOT_KEY_BURST", "2")
    monkeypatch.setenv("EXPORTS_HOT_KEY_RATE_PER_MINUTE", "1")
    worker.dependencies.cache_clear()
    deps = worker.dependencies()
    ids = [submit(BODY, user=user)["task_id"] for user in ("u1", "u2", "u3")]  # same hot key, three users
    messages(orders)  # take the submit messages out of the way

    outcomes = [process_task(TaskMessage(i, "orders", 5), deps) for i in ids]

    assert outcomes == [Outcome.COMPLETED, Outcome.COMPLETED, Outcome.DEFERRED]
    deferred = deps.tasks.get(ids[2])
    assert (deferred.status, deferred.retry_count, deferred.attempt) == (TaskStatus.PENDING, 0, 0)
    sqs = boto3.client("sqs", region_name=REGION)
    again = sqs.receive_message(QueueUrl=orders.queue_urls["normal"], WaitTimeSeconds=0).get("Messages", [])
    assert again == []  # the deferral message is delayed, not visible at once
    attributes = sqs.get_queue_attributes(QueueUrl=orders.queue_urls["normal"], AttributeNames=["All"])["Attributes"]
    assert int(attributes["ApproximateNumberOfMessagesDelayed"]) == 1
    # Another hot key is not affected.
    other = submit({**BODY, "filters": {"date_from": "2025-03-29", "date_to": "2025-03-31"}}, user="u1")["task_id"]
    assert process_task(TaskMessage(other, "orders", 5), deps) is Outcome.COMPLETED


def test_concurrent_workers_never_spend_the_same_token(aws: Resources, atomic_dynamodb: None) -> None:
    limiter = worker.dependencies().limiter
    now = datetime.now(UTC)
    barrier = threading.Barrier(12)

    def take() -> float:
        barrier.wait()
        return limiter.acquire("orders:2025-01-01:2025-01-31", now)

    with ThreadPoolExecutor(max_workers=12) as pool:
        waits = list(pool.map(lambda _: take(), range(12)))
    assert sum(wait == 0 for wait in waits) == 5  # HotKey.BURST
    assert all(wait > 0 for wait in waits if wait != 0)


# --- lanes --------------------------------------------------------------------------------------


def test_a_high_priority_task_overtakes_a_flood_of_low_priority_ones(
    orders: Resources, monkeypatch: pytest.MonkeyPatch, atomic_dynamodb: None
) -> None:
    # Worker threads of every lane write to moto at once: atomic_dynamodb, as the local stack.
    monkeypatch.setenv("EXPORTS_MAX_ACTIVE_TASKS_PER_USER", "500")
    monkeypatch.setenv("EXPORTS_HOT_KEY_BURST", "1000")
    api.dependencies.cache_clear()
    worker.dependencies.cache_clear()
    # Runs of a day measured at half a second: the flood fits its deadlines, admission takes it all.
    worker.dependencies().throughput.record(throughput_key("orders", "csv"), rows=100, seconds=0.5, days=1)
    day = SEED_DAY.isoformat()
    low = [
        submit({**BODY, "priority": 10, "filters": {"date_from": day, "date_to": day, "columns": [c]}})["task_id"]
        for c in ["order_id", "amount", "status", "currency"]
    ]
    low += [
        submit(
            {**BODY, "priority": 10, "filters": {"date_from": day, "date_to": day, "columns": ["order_id", c]}},
            user=f"user{n}",
        )["task_id"]
        for n in range(24)
        for c in ["amount", "status", "note", "items"]
    ]
    high = submit({**BODY, "priority": 1, "filters": {"date_from": day, "date_to": day}})["task_id"]
    sqs = boto3.client("sqs", region_name=REGION)
    loops = [
        WorkerLoop(
            sqs, orders.queue_urls[lane.name], worker.lambda_handler, batch_size=1, concurrency=lane.max_concurrency
        )
        for lane in LANES
    ]
    for loop in loops:
        loop.start()
    try:
        deps = worker.dependencies()
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while deps.tasks.get(high).status is not TaskStatus.COMPLETED and datetime.now(UTC) < deadline:
            threading.Event().wait(0.05)
        low_done = sum(deps.tasks.get(i).status is TaskStatus.COMPLETED for i in low)
    finally:
        for loop in loops:
            loop.stop()
    assert len(low) >= 100
    assert deps.tasks.get(high).status is TaskStatus.COMPLETED
    assert low_done < len(low) / 2


# --- estimates ----------------------------------------------------------------------------------


def test_the_estimate_follows_measured_throughput_the_tasks_size_and_the_work_queued_ahead(aws: Resources) -> None:
    deps = worker.dependencies()
    deps.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)  # 100 rows/s, 100/day
    small = submit({**BODY, "priority": 1})["estimated_completion_sec"]  # 2 days
    large = submit({**BODY, "priority": 1, "filters": {"date_from": "2025-01-01", "date_to": "2025-01-31"}})
    for n in range(6):
        submit({**BODY, "filters": {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}})
    behind_six = submit({**BODY, "filters": {"date_from": "2025-02-01", "date_to": "2025-02-02"}})

    assert small == 2  # its own 200 rows at 100 rows/s, nothing ahead in the high lane
    # The small one's 2 s ahead, at an unmeasured lane's cautious 1 s a second; then 3,100 rows.
    assert large["estimated_completion_sec"] == 33
    # 1 + 2 + ... + 6 = 21 s of work ahead at 1 s a second, then its own 2 s.
    assert behind_six["estimated_completion_sec"] == 23


def test_a_format_is_estimated_from_its_own_runs_not_another_formats(aws: Resources) -> None:
    deps = worker.dependencies()
    # Fast CSV runs of the type: 10,000 rows/s. A PDF of it has no runs yet: the defaults hold.
    deps.throughput.record(throughput_key("orders", "csv"), rows=100_000, seconds=10.0, days=10)
    csv_estimate = submit({**BODY, "priority": 1})["estimated_completion_sec"]
    pdf_first = submit({**BODY, "priority": 1, "format": "pdf"})["estimated_completion_sec"]
    # Slow PDF runs: 100 rows/s, 10,000 rows a day.
    deps.throughput.record(throughput_key("orders", "pdf"), rows=100_000, seconds=1000.0, days=10)
    api.dependencies.cache_clear()
    # In an empty lane, with a deadline its 200 s fit in (the source's slots have work queued).
    pdf_measured = submit({**BODY, "priority": 9, "format": "pdf", "timeout_sec": 600})

    assert csv_estimate == 2  # 20,000 rows at 10,000 rows/s
    # No PDF run measured: the default, not the CSV's pace; behind the CSV's 2 s at 1 s a second.
    assert pdf_first == 2 + Estimates.DEFAULT_TASK_SEC
    # 20,000 rows at 100 rows/s, after the seconds queued ahead on the orders' data source (its
    # slots are shared by every lane): the CSV's 2 and the first PDF's 5, drained by its slots.
    assert 200 < pdf_measured["estimated_completion_sec"] <= 204


def test_first_claims_take_their_queue_places_and_a_lane_too_slow_refuses_with_its_estimate(
    aws: Resources,
) -> None:
    deps = worker.dependencies()
    deps.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)  # 100 rows/s
    ids = []
    for n in range(3):
        filters = {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}
        ids.append(submit({**BODY, "filters": filters})["task_id"])
    normal = lane_pool("normal")
    dynamodb = boto3.client("dynamodb", region_name=REGION)

    def queued() -> dict[str, Any]:
        return dynamodb.get_item(TableName=aws.tasks_table, Key=key(capacity_id(normal)))["Item"]

    assert (float(queued()["queued_sec"]["N"]), int(queued()["queued_tasks"]["N"])) == (6.0, 3)
    for task_id in ids:
        assert process_task(TaskMessage(task_id, "orders", 5), deps) is Outcome.COMPLETED
    assert (float(queued()["queued_sec"]["N"]), int(queued()["queued_tasks"]["N"])) == (0.0, 0)
    drain = dynamodb.get_item(TableName=aws.tasks_table, Key=key(drain_id(normal)))["Item"]
    assert int(drain["samples"]["N"]) == 2  # the second and third started behind work

    # The lane got slow: 2 s of estimated work a minute. Six tasks queued take three minutes.
    deps.capacity.start(normal, 0.0, datetime.now(UTC))  # (a start of nothing: only its instant counts)
    slow = key(drain_id(normal))
    dynamodb.update_item(
        TableName=aws.tasks_table,
        Key=slow,
        UpdateExpression="SET work_sec = :work, elapsed_sec = :elapsed, samples = :samples",
        ExpressionAttributeValues={":work": {"N": "2"}, ":elapsed": {"N": "60"}, ":samples": {"N": "100"}},
    )
    api.dependencies.cache_clear()  # a fresh instance: no cached drain
    for n in range(6):
        submit({**BODY, "filters": {"date_from": "2025-04-01", "date_to": f"2025-04-{n + 1:02d}"}})
    before = len(task_items(aws))
    refused = submit({**BODY, "timeout_sec": 60, "filters": {"date_from": "2025-02-10", "date_to": "2025-02-11"}})
    alone = submit({**BODY, "priority": 1, "filters": {"date_from": "2025-02-01", "date_to": "2025-02-02"}})

    assert refused["http"] == 429 and refused["error"]["code"] == "WOULD_TIME_OUT"
    estimate = refused["error"]["estimate"]
    assert estimate["timeout_sec"] == 60 and estimate["estimated_completion_sec"] > 60
    assert 0 < int(refused["headers"]["retry-after"]) <= estimate["estimated_start_sec"]
    assert len(task_items(aws)) == before + 1  # the refused one stored nothing (the high one is the 1)
    assert alone["http"] == 202 and alone["estimated_completion_sec"] < 60  # the high lane is empty
