"""Races, forced both ways: two workers on one task, cancel against completion, the deadline
against completion. Each interleaving is made exact by running the rival at a chosen AWS call of
the worker (a hook before the call), and a threaded run adds the interleavings nobody chose.
DynamoDB's per-item atomicity is restored in moto (``running_aws`` serialises its operations)."""

import json
import random
import threading
import time
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

import boto3
import pytest

from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.running.endings import Outcome
from exports.running.messages import process_task
from functions.lifecycle import handler as lifecycle
from functions.submit.handler import lambda_handler as api_handler
from functions.worker import handler as worker
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import REGION, Resources, put_items
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.polling import poll_until
from tests.receiver import receiver
from tests.reliability.conftest import make_faults, objects_by_task, open_uploads, task_records
from tests.reliability.faults import Lanes

# Where the rival strikes: before the claim, during the export, just before the worker's own
# terminal write, or after the task completed.
POINTS = (
    ("dynamodb", "UpdateItem"),
    ("dynamodb", "Query"),
    ("s3", "CreateMultipartUpload"),
    ("s3", "UploadPart"),
    ("s3", "CompleteMultipartUpload"),
    ("dynamodb", "TransactWriteItems"),
    None,
)


def orders_body(day: int, callback_url: str | None = None) -> dict[str, Any]:
    """A distinct small export per ``day`` (so none is merged into another)."""
    body: dict[str, Any] = {
        "export_type": "orders",
        "filters": {
            "date_from": (SEED_DAY - timedelta(days=day + 1)).isoformat(),
            "date_to": (SEED_DAY - timedelta(days=day)).isoformat(),
        },
        "timeout_sec": 600,
    }
    if callback_url:
        body["callback_url"] = callback_url
    return body


def submit(body: dict[str, Any], user: str = "alice") -> str:
    result = api_handler(http_event("POST", "/v1/exports", body, user=user), FakeContext())
    assert result["statusCode"] == 202, result["body"]
    return json.loads(result["body"])["task_id"]


def wait_for_token(resources: Resources, task_id: str) -> None:
    """The workflow stores its token on the task right after submit (in a moto thread)."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    poll_until(
        lambda: dynamodb.get_item(TableName=resources.tasks_table, Key={"task_id": {"S": task_id}})["Item"],
        lambda item: "lifecycle_token" in item,
        timeout_sec=20,
        interval_sec=0.01,
        fail=f"{task_id}: no workflow token",
    )


def cancel(task_id: str) -> int:
    return api_handler(http_event("POST", f"/v1/exports/{task_id}/cancel"), FakeContext())["statusCode"]


def expire(task_id: str) -> str:
    return lifecycle.lambda_handler({"action": "expire", "task_id": task_id}, FakeContext())["status"]


def assert_consistent(resources: Resources, task_id: str, expected: str) -> dict[str, Any]:
    """Record, object and upload agree: the file exists exactly when the task COMPLETED."""
    record = task_records(resources)[task_id]
    objects = objects_by_task(resources).get(task_id, [])
    assert record["status"] == expected, (task_id, record["status"])
    assert objects == ([record["result"]["key"]] if expected == TaskStatus.COMPLETED else []), objects
    assert not [u for u in open_uploads(resources) if task_id in u["Key"]]
    return record


@pytest.fixture
def seeded(running_aws: Resources) -> Resources:
    put_items(running_aws.orders_table, demo_orders(400, SEED_DAY))
    return running_aws


@pytest.mark.parametrize(("rival", "status"), [(cancel, TaskStatus.CANCELLED), (expire, TaskStatus.TIMEOUT)])
def test_a_cancel_or_the_deadline_racing_completion_ends_the_task_one_way_everywhere(
    seeded: Resources, rival: Any, status: TaskStatus
) -> None:
    faults, lanes = make_faults(seed=3), Lanes(seeded)
    tasks: dict[Any, str] = {}
    with receiver([204]) as hook:
        for n, point in enumerate(POINTS):
            task_id = tasks[point] = submit(orders_body(n, hook.url))
            wait_for_token(seeded, task_id)
            if point:
                faults.once(*point, lambda *_, task_id=task_id: rival(task_id))
            lanes.settle("normal", lanes.invoke("normal", lanes.receive("normal")))
            faults.disarm()
            if point is None:
                rival(task_id)  # too late: the task has completed
        calls = hook.wait_for(len(POINTS))

    callbacks = {json.loads(c.body)["data"]["task_id"]: json.loads(c.body)["data"]["status"] for c in calls}
    for point, task_id in tasks.items():
        expected = TaskStatus.COMPLETED if point is None else status
        assert_consistent(seeded, task_id, expected)
        assert callbacks[task_id] == expected, point
    assert len(calls) == len(POINTS)


def test_two_workers_delivered_the_same_task_at_once_run_it_once(seeded: Resources) -> None:
    """The second delivery arrives while the first worker is between reading and claiming."""
    lanes = Lanes(seeded)
    task_id = submit(orders_body(0))
    messages = lanes.receive("normal")
    deps = worker.dependencies()
    rival: list[Outcome] = []
    faults = make_faults(seed=4)
    message = TaskMessage(task_id, "orders", 5)
    faults.once("dynamodb", "UpdateItem", lambda *_: rival.append(process_task(message, deps)))
    uploads: Counter = Counter()
    faults.once("s3", "CreateMultipartUpload", lambda *_: uploads.update(["first"]))

    delivery = lanes.invoke("normal", messages)

    assert rival == [Outcome.COMPLETED]
    assert delivery.failed == set()
    assert uploads == Counter()  # the first worker lost the claim and never started an upload
    record = assert_consistent(seeded, task_id, TaskStatus.COMPLETED)
    assert record["attempt"] == 1


def test_many_workers_racing_for_the_same_tasks_run_each_once(seeded: Resources) -> None:
    deps = worker.dependencies()
    task_ids = [submit(orders_body(n)) for n in range(6)]
    outcomes: dict[str, list[Outcome]] = {task_id: [] for task_id in task_ids}
    start = threading.Barrier(3 * len(task_ids))

    def run(task_id: str) -> None:
        start.wait()
        outcomes[task_id].append(process_task(TaskMessage(task_id, "orders", 5), deps))

    threads = [threading.Thread(target=run, args=(t,)) for t in task_ids for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    for task_id, seen in outcomes.items():
        assert sorted(seen) == sorted([Outcome.COMPLETED, Outcome.SKIPPED, Outcome.SKIPPED]), seen
        assert assert_consistent(seeded, task_id, TaskStatus.COMPLETED)["attempt"] == 1


def test_cancels_from_another_thread_at_random_moments_agree_with_the_file(seeded: Resources) -> None:
    rng = random.Random(5)
    deps = worker.dependencies()
    results: dict[str, tuple[Outcome, int]] = {}
    with receiver([204]) as hook:
        task_ids = [submit(orders_body(n, hook.url)) for n in range(8)]
        for task_id in task_ids:
            wait_for_token(seeded, task_id)
            pause = rng.uniform(0, 0.08)
            answers: list[int] = []

            def cancel_later(task_id: str = task_id, pause: float = pause, answers: list[int] = answers) -> None:
                time.sleep(pause)
                answers.append(cancel(task_id))

            canceller = threading.Thread(target=cancel_later)
            canceller.start()
            outcome = process_task(TaskMessage(task_id, "orders", 5), deps)
            canceller.join(30)
            results[task_id] = (outcome, answers[0])
        calls = hook.wait_for(len(task_ids))

    callbacks = {json.loads(c.body)["data"]["task_id"]: json.loads(c.body)["data"]["status"] for c in calls}
    for task_id, (outcome, answer) in results.items():
        expected = TaskStatus.CANCELLED if answer == 200 else TaskStatus.COMPLETED
        assert answer in (200, 409)
        assert outcome in ((Outcome.COMPLETED,) if answer == 409 else (Outcome.SKIPPED, Outcome.LOST_OWNERSHIP))
        assert_consistent(seeded, task_id, expected)
        assert callbacks[task_id] == expected


def test_a_worker_that_outlived_its_lease_leaves_the_new_owners_file_alone(seeded: Resources) -> None:
    """Worker A stalls until its lease runs out; worker B reclaims the task and completes it; then
    A wakes up, completes its own upload and finds it lost the task. The COMPLETED task must keep
    a file that matches its record (A's upload and A's clean-up must not touch B's file)."""
    real = worker.dependencies()
    task_id = submit(orders_body(0))
    late = replace(real, clock=lambda: real.clock() + real.settings.lease + timedelta(seconds=1))
    faults = make_faults(seed=6)
    rival: list[Outcome] = []
    faults.once(
        "s3", "CompleteMultipartUpload", lambda *_: rival.append(process_task(TaskMessage(task_id, "orders", 5), late))
    )

    first = process_task(TaskMessage(task_id, "orders", 5), real)

    assert (first, rival) == (Outcome.LOST_OWNERSHIP, [Outcome.COMPLETED])
    record = assert_consistent(seeded, task_id, TaskStatus.COMPLETED)
    assert record["attempt"] == 2
    data = boto3.client("s3", region_name=REGION).get_object(Bucket=seeded.bucket, Key=record["result"]["key"])
    assert data["ContentLength"] == record["result"]["bytes"]
