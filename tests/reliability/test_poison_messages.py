"""Poison messages and the DLQ, with moto's real redrive: a message the worker cannot handle is
received ``MESSAGE_RETRY.attempts`` times (redelivered at once here: received with a visibility
timeout of 0), then moved to its lane's DLQ, while the good messages of its batches complete.
``scripts/redrive.py`` moves dead letters back once the cause is fixed."""

import json
from typing import Any

import boto3
import pytest
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.core.config.queues import Queue
from exports.core.config.retry import MESSAGE_RETRY
from exports.core.status import TaskStatus
from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import REGION, Resources
from scripts import redrive
from tests.builders import FakeContext, http_event
from tests.reliability.conftest import make_faults, quota, task_records
from tests.reliability.faults import InjectedCrash, Lanes

POISON = {
    "not json": "{{{ not json",
    "no task id": json.dumps({"export_type": "orders"}),
    "unknown task": json.dumps({"task_id": "exp_01JUNKJUNKJUNKJUNKJUNKJUNK", "export_type": "orders", "priority": 5}),
}


def submit(day: int) -> str:
    body = {
        "export_type": "orders",
        "filters": {"date_from": f"2025-03-{day:02d}", "date_to": f"2025-03-{day:02d}"},
    }
    result = api_handler(http_event("POST", "/v1/exports", body), FakeContext())
    assert result["statusCode"] == 202, result["body"]
    return json.loads(result["body"])["task_id"]


def deliver_until_empty(lanes: Lanes, limit: int = 20) -> list[set[str]]:
    """Batches of up to 10, redelivered at once when they fail; the failed ids of each batch."""
    failures: list[set[str]] = []
    for _ in range(limit):
        messages = lanes.receive("normal", count=10, visibility_sec=0)
        if not messages:
            return failures
        delivery = lanes.invoke("normal", messages)
        lanes.settle("normal", delivery)
        failures.append({m["Body"] for m in messages if m["MessageId"] in delivery.failed})
    pytest.fail("the queue did not drain")


def test_poison_messages_reach_the_dlq_after_the_receive_limit_without_blocking_their_batch(orders: Resources) -> None:
    lanes = Lanes(orders)
    good = [submit(day) for day in (28, 29, 30)]
    for body in POISON.values():
        lanes.sqs.send_message(QueueUrl=lanes.urls["normal"], MessageBody=body)

    failures = deliver_until_empty(lanes)

    # Every receive of a poison message failed it alone; the good tasks completed at the first.
    assert failures == [set(POISON.values())] * MESSAGE_RETRY.attempts
    records = task_records(orders)
    assert [records[task_id]["status"] for task_id in good] == [TaskStatus.COMPLETED] * 3
    dead = lanes.dead_letters("normal")
    assert sorted(m["Body"] for m in dead) == sorted(POISON.values())


def test_an_identifiable_task_whose_delivery_always_crashes_ends_failed_when_its_message_is_dead_lettered(
    orders: Resources,
) -> None:
    """The record handler raises every time for one task (here: its claim blows up). Its message
    goes to the DLQ like any poison message; but the task is known, so it must not be left
    PENDING until its deadline: it ends FAILED with an error code, and its quota slot is freed."""
    lanes = Lanes(orders)
    doomed, fine = submit(27), submit(28)
    faults = make_faults(seed=8)
    for _ in range(MESSAGE_RETRY.attempts + 1):
        faults.once(
            "dynamodb", "UpdateItem", crash_claim, when=lambda s, o, params: params["Key"]["task_id"]["S"] == doomed
        )

    failures = deliver_until_empty(lanes)

    assert len(failures) == MESSAGE_RETRY.attempts
    assert [json.loads(m["Body"])["task_id"] for m in lanes.dead_letters("normal")] == [doomed]
    records = task_records(orders)
    assert records[fine]["status"] == TaskStatus.COMPLETED
    assert records[doomed]["status"] == TaskStatus.FAILED, "left PENDING: only its deadline would end it"
    assert records[doomed]["error"]["code"]
    assert quota(orders, "alice") == 0


def crash_claim(service: str, operation: str, params: dict[str, Any]) -> None:
    raise InjectedCrash("the worker crashes on this task")


def dead_letter_everything(lanes: Lanes) -> list[MessageTypeDef]:
    """The worker is down (or crashing before it can answer): receive without answering until
    SQS moves every message to the DLQ."""
    for _ in range(MESSAGE_RETRY.attempts + 1):
        lanes.receive("normal", count=10, visibility_sec=0)
    return lanes.dead_letters("normal")


def test_redrive_moves_dead_letters_back_with_their_attributes_and_the_tasks_then_complete(
    orders: Resources, capsys: pytest.CaptureFixture[str]
) -> None:
    lanes = Lanes(orders)
    task_ids = [submit(day) for day in (20, 21, 22)]
    dead = dead_letter_everything(lanes)
    assert len(dead) == 3

    assert redrive.main(["--lane", "normal", "--dry-run"]) == 0
    assert "normal: 3 dead-lettered" in capsys.readouterr().out
    assert lanes.depth(dead_letters=True) == 3

    # moto has no StartMessageMoveTask: the script falls back to receive, send, delete.
    assert redrive.main(["--lane", "normal"]) == 0
    assert "3 moved back, 0 failed" in capsys.readouterr().out

    assert lanes.depth(dead_letters=True) == 0
    back = lanes.receive("normal", count=10, visibility_sec=0)
    assert sorted(m["MessageAttributes"]["task_id"]["StringValue"] for m in back) == sorted(task_ids)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in back} == {"1"}  # a fresh start
    deliver_until_empty(lanes)
    records = task_records(orders)
    assert [records[task_id]["status"] for task_id in task_ids] == [TaskStatus.COMPLETED] * 3


def test_redrive_moves_at_most_what_it_is_told_and_reads_the_queues_from_a_stack(orders: Resources) -> None:
    lanes = Lanes(orders)
    for day in (10, 11, 12, 13):
        submit(day)
    dead_letter_everything(lanes)
    cloudformation = FakeStack(
        {
            "TaskQueueUrlNormal": lanes.urls["normal"],
            "DeadLetterQueueUrlNormal": lanes.dlq_urls["normal"],
        }
    )
    (queues,) = redrive.lane_queues_from_stack(cloudformation, "exports-dev", ["normal"])
    sqs = boto3.client("sqs", region_name=REGION)

    (report,) = redrive.redrive(sqs, [queues], dry_run=False, copy=True, limit=3, rate=None)

    assert (report.waiting, report.moved, report.failed) == (4, 3, 0)
    assert lanes.depth(dead_letters=True) == 1
    assert lanes.depth() == 3


class FakeStack:
    """CloudFormation's DescribeStacks for a stack with these outputs."""

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs

    def describe_stacks(self, StackName: str) -> dict[str, Any]:
        return {"Stacks": [{"Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in self.outputs.items()]}]}


def test_redrive_uses_sqs_own_move_task_where_there_is_one(orders: Resources) -> None:
    lanes = Lanes(orders)
    submit(9)
    dead_letter_everything(lanes)

    class MovingSqs:
        """moto's SQS plus the StartMessageMoveTask it lacks."""

        def __init__(self, real: Any) -> None:
            self.real = real
            self.started: list[dict[str, Any]] = []

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

        def start_message_move_task(self, **request: Any) -> dict[str, Any]:
            self.started.append(request)
            return {"TaskHandle": "handle-1"}

    sqs = MovingSqs(boto3.client("sqs", region_name=REGION))
    queues = redrive.local_lane_queues(sqs, ["normal"])

    (report,) = redrive.redrive(sqs, queues, dry_run=False, copy=False, limit=None, rate=10)

    assert report.move_task == "handle-1"
    (request,) = sqs.started
    assert request["SourceArn"].endswith(":exports-tasks-normal-dlq")
    assert request["DestinationArn"].endswith(":exports-tasks-normal")
    assert request["MaxNumberOfMessagesPerSecond"] == 10


def test_a_failed_delivery_comes_back_after_a_short_backoff_not_the_visibility_timeout(orders: Resources) -> None:
    """Received with the queue's long visibility timeout, a delivery that raises is made visible
    again after its backoff (7.5 to 15 s for a first failure), so the five receives before the
    DLQ, and PROCESSING_FAILED, come within minutes, not after the task's deadline."""
    lanes = Lanes(orders)
    task_id = submit(26)
    faults = make_faults(seed=9)
    faults.once("dynamodb", "UpdateItem", crash_claim)

    delivery = lanes.invoke("normal", lanes.receive("normal", visibility_sec=Queue.VISIBILITY_TIMEOUT_SEC))

    assert len(delivery.failed) == 1
    (again,) = lanes.sqs.receive_message(QueueUrl=lanes.urls["normal"], WaitTimeSeconds=20, AttributeNames=["All"])[
        "Messages"
    ]
    assert (json.loads(again["Body"])["task_id"], again["Attributes"]["ApproximateReceiveCount"]) == (task_id, "2")
