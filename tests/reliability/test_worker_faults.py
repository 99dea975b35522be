"""One fault at a time where the fault-injection run found the file and the record disagreeing:
each test names the step that fails and what the service must still guarantee."""

import json
from typing import Any

import boto3
import pytest
from botocore import xform_name
from botocore.exceptions import ReadTimeoutError

from exports.core.config.retry import MESSAGE_RETRY, TRANSIENT_RETRY
from exports.core.status import TERMINAL, TaskStatus
from functions.submit.handler import lambda_handler as api_handler
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.reliability.conftest import make_faults, objects_by_task, open_uploads, quota, task_records
from tests.reliability.faults import Faults, Lanes, crash, throttle


@pytest.fixture
def faults(orders: Resources) -> Faults:
    return make_faults(seed=1)


def submit(user: str = "alice", fmt: str = "csv") -> str:
    body = {
        "export_type": "orders",
        "format": fmt,
        "filters": {"date_from": "2025-03-20", "date_to": SEED_DAY.isoformat()},
    }
    result = api_handler(http_event("POST", "/v1/exports", body, user=user), FakeContext())
    assert result["statusCode"] == 202, result["body"]
    return json.loads(result["body"])["task_id"]


def drain(lanes: Lanes, limit: int = 12) -> int:
    """Deliver until the lane is empty, like the event source (a failed record comes back)."""
    for deliveries in range(limit):
        messages = lanes.receive("normal")
        if not messages:
            return deliveries
        lanes.settle("normal", lanes.invoke("normal", messages))
    pytest.fail(f"the queue did not drain in {limit} deliveries")


def ended_with_its_file_complete_or_absent(resources: Resources, task_id: str) -> dict[str, Any]:
    record = task_records(resources)[task_id]
    keys = objects_by_task(resources).get(task_id, [])
    assert record["status"] in TERMINAL, f"left {record['status']} with nothing queued (it waits for its deadline)"
    if record["status"] == TaskStatus.COMPLETED:
        assert keys == [record["result"]["key"]]
    else:
        assert keys == [], f"a {record['status']} task left its file behind"
    assert open_uploads(resources) == []
    return record


def cancel_now(task_id: str) -> Any:
    def action(*_: Any) -> None:
        result = api_handler(http_event("POST", f"/v1/exports/{task_id}/cancel"), FakeContext())
        assert result["statusCode"] == 200, result["body"]

    return action


def test_a_throttled_completed_write_does_not_strand_the_task_with_its_file(orders: Resources, faults: Faults) -> None:
    """The upload completed; writing COMPLETED (the end-task transaction) is throttled once."""
    task_id = submit()
    faults.once("dynamodb", "TransactWriteItems", throttle)

    drain(Lanes(orders))

    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert record["status"] == TaskStatus.COMPLETED
    assert quota(orders, "alice") == 0


def test_a_cancel_landing_before_the_completed_write_leaves_no_file_even_if_the_delete_is_throttled(
    orders: Resources, faults: Faults
) -> None:
    task_id = submit()
    faults.once("dynamodb", "TransactWriteItems", cancel_now(task_id))
    faults.once("s3", "DeleteObject", throttle, when=lambda s, o, params: "checkpoint" not in params["Key"])

    drain(Lanes(orders))

    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert record["status"] == TaskStatus.CANCELLED


def test_a_fault_after_the_upload_completed_leaves_no_file_when_the_task_fails(
    orders: Resources, faults: Faults
) -> None:
    """Tagging the finished object keeps failing: the export is retried, then FAILED; the object
    every attempt completed must not stay behind."""
    task_id = submit()
    for _ in range(4):
        faults.once("s3", "PutObjectTagging", throttle)

    drain(Lanes(orders))

    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert record["status"] == TaskStatus.FAILED


def test_a_throttled_abort_does_not_leave_the_upload_open(orders: Resources, faults: Faults) -> None:
    """Completing the upload fails, and so does the first abort: the retry finishes the export, and
    the failed attempt's parts must not stay behind (S3 bills them until they are aborted)."""
    task_id = submit()
    faults.once("s3", "CompleteMultipartUpload", throttle)
    faults.once("s3", "AbortMultipartUpload", throttle)

    drain(Lanes(orders))

    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert record["status"] == TaskStatus.COMPLETED


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("POST", "/v1/exports", "TransactWriteItems"),
        ("GET", "/v1/exports/{task_id}", "GetItem"),
        ("POST", "/v1/exports/{task_id}/cancel", "TransactWriteItems"),
        ("GET", "/v1/exports", "Query"),
    ],
)
def test_a_throttled_dependency_answers_503_with_retry_after_not_500(
    orders: Resources, faults: Faults, method: str, path: str, operation: str
) -> None:
    task_id = submit()
    for _ in range(6):  # more than submit's own retries of a conflicted transaction
        faults.once("dynamodb", operation, throttle)
    body = {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-01"}}
    result = api_handler(
        http_event(method, path.format(task_id=task_id), body if method == "POST" else None), FakeContext()
    )
    assert result["statusCode"] == 503, result["body"]
    assert result["headers"]["Retry-After"]
    assert json.loads(result["body"])["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "Throughput" not in result["body"]  # the AWS error stays in the log


def test_a_task_that_could_not_be_scheduled_is_failed_even_if_that_write_is_throttled_at_first(
    orders: Resources, faults: Faults
) -> None:
    """The workflow refuses to start, and the write that marks the task FAILED is throttled twice:
    the client gets a 503 and the task still ends (no PENDING task without workflow or message
    holding a quota slot for ever)."""
    faults.once("stepfunctions", "StartExecution", throttle)
    faults.once("dynamodb", "TransactWriteItems", lambda *_: None)  # the create goes through
    faults.once("dynamodb", "TransactWriteItems", throttle)
    faults.once("dynamodb", "TransactWriteItems", throttle)
    body = {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-01"}}

    result = api_handler(http_event("POST", "/v1/exports", body), FakeContext())

    assert result["statusCode"] == 503, result["body"]
    (record,) = task_records(orders).values()
    assert (record["status"], record["error"]["code"]) == (TaskStatus.FAILED, "SCHEDULE_FAILED")
    assert quota(orders, "alice") == 0


def lands_but_the_answer_is_lost(service: str, operation: str, params: dict[str, Any]) -> None:
    """The write reaches DynamoDB (through a client of its own), then the connection drops."""
    getattr(boto3.client("dynamodb", region_name=REGION), xform_name(operation))(**params)
    raise ReadTimeoutError(endpoint_url="https://dynamodb.test")


def test_a_completed_write_whose_answer_was_lost_completes_the_task_once(orders: Resources, faults: Faults) -> None:
    """The retry meets the change it made itself: done, not someone else's change (which would
    delete the file of a COMPLETED task); the quota slot is released once."""
    task_id = submit()
    faults.once("dynamodb", "TransactWriteItems", lands_but_the_answer_is_lost)

    drain(Lanes(orders))

    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert (record["status"], record["attempt"], record["status_seq"]) == (TaskStatus.COMPLETED, 1, 2)
    assert quota(orders, "alice") == 0


def test_a_completed_write_that_keeps_failing_hands_the_task_back_before_deleting_its_file(
    orders: Resources, faults: Faults
) -> None:
    """Every try of the COMPLETED write is throttled: the task goes back to PENDING (a write that
    also fences off a late completion), and only then is that attempt's file deleted; the retry
    completes with a file of its own."""
    task_id = submit()
    for _ in range(TRANSIENT_RETRY.attempts):
        faults.once("dynamodb", "TransactWriteItems", throttle)
    lanes = Lanes(orders)

    lanes.settle("normal", lanes.invoke("normal", lanes.receive("normal")))

    record = task_records(orders)[task_id]
    assert (record["status"], record["retry_count"], record["error"]["code"]) == ("PENDING", 1, "TRANSIENT_ERROR")
    assert objects_by_task(orders).get(task_id, []) == []
    drain(lanes)
    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert (record["status"], record["attempt"]) == (TaskStatus.COMPLETED, 2)
    assert record["result"]["key"].startswith(f"results/{task_id}/2/")
    assert quota(orders, "alice") == 0


def test_a_retry_handed_back_whose_answer_was_lost_is_still_queued(orders: Resources, faults: Faults) -> None:
    """The export crashes; writing it back to PENDING lands but its answer is lost. The retry of
    that write meets its own change: the new message must still be sent (a PENDING task without
    one would wait for its deadline)."""
    task_id = submit()
    faults.once("s3", "UploadPart", crash)
    faults.once(
        "dynamodb", "UpdateItem", lands_but_the_answer_is_lost, when=lambda s, o, params: "retry_count" in str(params)
    )

    lanes = Lanes(orders)

    delivery = lanes.invoke("normal", lanes.receive("normal"))

    # Handled, not failed: a failed delivery would only come back after the queue's visibility
    # timeout (90 minutes on AWS), past the task's deadline.
    assert faults.injected["lands_but_the_answer_is_lost:dynamodb.UpdateItem"] == 1
    assert delivery.failed == set()
    lanes.settle("normal", delivery)
    drain(lanes)
    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert (record["status"], record["retry_count"], record["attempt"]) == (TaskStatus.COMPLETED, 1, 2)


def test_transient_faults_before_the_claim_send_the_message_again_and_never_reach_the_dlq(
    orders: Resources, faults: Faults
) -> None:
    """Reading the task is throttled on more deliveries than the DLQ's receive limit. Each
    delivery is acknowledged and the message comes back as a new one (left to SQS it would
    return only after the visibility timeout, past the deadline, and count towards the DLQ)."""
    task_id = submit()
    throttled = MESSAGE_RETRY.attempts + 1
    for _ in range(throttled):
        faults.once("dynamodb", "GetItem", throttle, when=lambda s, o, params: params["Key"]["task_id"]["S"] == task_id)
    lanes = Lanes(orders)

    deliveries = drain(lanes, limit=throttled + 3)

    assert faults.injected["throttle:dynamodb.GetItem"] == throttled
    assert deliveries == throttled + 1
    assert lanes.depth(dead_letters=True) == 0
    record = ended_with_its_file_complete_or_absent(orders, task_id)
    assert (record["status"], record["retry_count"]) == (TaskStatus.COMPLETED, 0)
