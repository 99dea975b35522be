"""The lifecycle workflow executed for real (moto runs the state machine, our handlers run as its
Lambda functions): deadlines, callbacks and their retries, cancel, and no lost callback."""

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import boto3
import pytest
from moto.awslambda.exceptions import LambdaClientError
from pydantic import BaseModel
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.config.names import Names
from exports.config.retry import CALLBACK_RETRY, LIFECYCLE_THROTTLE_RETRY
from exports.domain.ids import new_task_id
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat, Task, complete, new_task
from exports.export_types.base import Column, ColumnKind, ExportType, Row, ignore_progress
from exports.export_types.registry import ExportTypeRegistry
from exports.ports import TaskMessage
from exports.services.deliveries import process_task
from exports.services.endings import Outcome
from functions.submit.handler import lambda_handler as api_handler
from functions.worker import handler as worker
from local_stack import lambda_runtime
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event
from tests.integration.conftest import WEBHOOK_SECRET, CompressedRetryClock
from tests.polling import poll_until
from tests.receiver import Received, receiver


def expected_signature(received: Received) -> str:
    """Standard Webhooks, computed here independently of the service's code."""
    key = base64.b64decode(WEBHOOK_SECRET.removeprefix("whsec_"))
    signed = f"{received.headers['webhook-id']}.{received.headers['webhook-timestamp']}.".encode() + received.body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    return poll_until(check, timeout_sec=timeout, fail="condition not met in time")


class NoFilters(BaseModel):
    """Test export types take no filters."""


class SlowExport(ExportType):
    """Rows trickle in: long enough to pass a deadline or to be cancelled mid-way."""

    name = "slow"
    description = "test"
    filters_model = NoFilters
    started: ClassVar[threading.Event] = threading.Event()

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text")]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        SlowExport.started.set()
        for n in range(100_000):
            time.sleep(0.001)
            yield (n, "x" * 200)

    def file_stem(self, filters: Any) -> str:
        return "slow"


@pytest.fixture
def deps(running_aws: Resources) -> Any:
    real = worker.dependencies()
    settings = real.settings.model_copy(update={"upload_part_bytes": 5 * 1024 * 1024, "progress_interval_sec": 0.2})
    from dataclasses import replace

    return replace(real, registry=ExportTypeRegistry([*real.registry, SlowExport()]), settings=settings)


def start_task(deps: Any, timeout_sec: int, callback_url: str | None = None, export_type: str = "slow") -> Task:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=ExportFormat.CSV,
        filters={},
        now=now,
        retention=timedelta(hours=1),
        timeout_sec=timeout_sec,
        callback_url=callback_url,
    )
    deps.tasks.create(task, max_active=100)
    deps.lifecycle.start(task)
    return task


def submit(body: dict[str, Any]) -> dict[str, Any]:
    result = api_handler(http_event("POST", "/v1/exports", body), FakeContext())
    return {"status": result["statusCode"], **json.loads(result["body"])}


def orders_body(callback_url: str) -> dict[str, Any]:
    return {
        "export_type": "orders",
        "format": "csv",
        "callback_url": callback_url,
        "timeout_sec": 10,
        "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
    }


def run_queued_work(resources: Resources) -> None:
    """What the SQS event source does: hand the queued message to the worker."""
    from local_stack.worker_loop import to_sqs_event

    sqs = boto3.client("sqs", region_name=REGION)
    messages = sqs.receive_message(
        QueueUrl=resources.queue_urls["normal"],
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    ).get("Messages", [])
    worker.lambda_handler(to_sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:q", REGION), FakeContext())


def objects_and_uploads(resources: Resources) -> tuple[list[Any], list[Any]]:
    s3 = boto3.client("s3", region_name=REGION)
    objects = s3.list_objects_v2(Bucket=resources.bucket).get("Contents", [])
    uploads = s3.list_multipart_uploads(Bucket=resources.bucket).get("Uploads", [])
    return objects, uploads


def test_a_flapping_receiver_gets_the_same_signed_event_until_it_accepts(
    running_aws: Resources, retry_clock: CompressedRetryClock
) -> None:
    with receiver([503, 500, 204]) as hook:
        accepted = submit(orders_body(hook.url))
        run_queued_work(running_aws)
        calls = hook.wait_for(3)
        task = wait_for(lambda: (t := get(accepted["task_id"]))["callback"]["status"] == "DELIVERED" and t)

    assert len(calls) == 3
    assert len({c.headers["webhook-id"] for c in calls}) == 1
    for call in calls:
        assert call.headers["webhook-signature"] == expected_signature(call)
        assert call.headers["content-type"] == "application/json"
        assert abs(int(call.headers["webhook-timestamp"]) - time.time()) < 60
    payload = json.loads(calls[-1].body)
    assert set(payload) == {"type", "timestamp", "data"}
    assert payload["type"] == "export.completed"
    data = payload["data"]
    assert data["task_id"] == accepted["task_id"]
    assert data["status"] == "COMPLETED"
    assert data["download_url"] and data["download_expires_at"]
    assert data["callback_seq"] == 2
    assert data["rows"] == data["rows_written"] and data["sha256"] and data["file_name"] and data["size_bytes"]
    assert data["format"] == "csv" and data["export_type"] == "orders" and data["error"] is None
    # The retries waited 1 s, then 4 s (compressed 20x here), in that order. The gaps between the
    # calls are not compared: on a loaded machine a Lambda's start can outweigh a compressed wait.
    assert retry_clock.intervals == [1, 4]
    assert task["callback"] == {"status": "DELIVERED", "attempts": 3, "last_error": None}


def test_an_always_failing_receiver_gets_four_attempts_then_the_task_records_the_failure(
    running_aws: Resources, retry_clock: CompressedRetryClock, capsys: pytest.CaptureFixture[str]
) -> None:
    with receiver([500]) as hook:
        accepted = submit(orders_body(hook.url))
        run_queued_work(running_aws)
        task = wait_for(lambda: (t := get(accepted["task_id"]))["callback"]["status"] == "FAILED" and t)
        calls = hook.requests

    assert len(calls) == 1 + CALLBACK_RETRY.retries == 4
    assert retry_clock.intervals == [1, 4, 16]
    assert task["status"] == "COMPLETED"  # the export's outcome never depends on its callback
    assert task["callback"]["attempts"] == 4
    assert task["callback"]["last_error"] == "HTTP 500"
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert any(m.get("CallbackFailed") == [1.0] for m in emitted)


def test_a_final_4xx_or_a_redirect_is_not_retried(running_aws: Resources, retry_clock: CompressedRetryClock) -> None:
    for status in (404, 302):
        with receiver([status]) as hook:
            accepted = submit(orders_body(hook.url))
            run_queued_work(running_aws)
            task_id = accepted["task_id"]

            def failed_callback(task_id: str = task_id) -> Any:
                return (t := get(task_id))["callback"]["status"] == "FAILED" and t

            task = wait_for(failed_callback)
            assert len(hook.requests) == 1
        assert task["callback"]["last_error"] == f"HTTP {status}"
    assert retry_clock.intervals == []


def test_a_slow_export_hits_its_deadline_and_leaves_nothing_behind(running_aws: Resources, deps: Any) -> None:
    with receiver([204]) as hook:
        task = start_task(deps, timeout_sec=3, callback_url=hook.url)
        outcome = process_task(TaskMessage(task.task_id, "slow", 5), deps)
        calls = hook.wait_for(1)

    assert outcome is Outcome.LOST_OWNERSHIP
    stored = deps.tasks.get(task.task_id)
    assert stored.status is TaskStatus.TIMEOUT
    assert stored.error.code == "DEADLINE_PASSED"
    assert objects_and_uploads(running_aws) == ([], [])
    assert json.loads(calls[0].body)["data"]["status"] == "TIMEOUT"


def test_cancel_mid_export_stops_the_worker_and_leaves_nothing_behind(running_aws: Resources, deps: Any) -> None:
    with receiver([204]) as hook:
        task = start_task(deps, timeout_sec=60, callback_url=hook.url)
        SlowExport.started.clear()
        outcomes: list[Outcome] = []
        running = threading.Thread(
            target=lambda: outcomes.append(process_task(TaskMessage(task.task_id, "slow", 5), deps))
        )
        running.start()
        SlowExport.started.wait(10)
        wait_for(lambda: deps.tasks.get(task.task_id).status is TaskStatus.RUNNING)

        result = api_handler(http_event("POST", f"/v1/exports/{task.task_id}/cancel"), FakeContext())
        running.join(30)
        calls = hook.wait_for(1)

    assert result["statusCode"] == 200
    assert json.loads(result["body"])["status"] == "CANCELLED"
    assert outcomes == [Outcome.LOST_OWNERSHIP]
    assert deps.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert objects_and_uploads(running_aws) == ([], [])
    assert json.loads(calls[0].body)["data"]["status"] == "CANCELLED"


def test_cancel_and_retry_answer_409_when_the_state_does_not_allow_them(running_aws: Resources, deps: Any) -> None:
    task = start_task(deps, timeout_sec=3)
    status = api_handler(http_event("POST", f"/v1/exports/{task.task_id}/retry"), FakeContext())["statusCode"]
    assert status == 409  # PENDING: nothing to retry yet
    assert api_handler(http_event("POST", f"/v1/exports/{task.task_id}/cancel"), FakeContext())["statusCode"] == 200
    again = api_handler(http_event("POST", f"/v1/exports/{task.task_id}/cancel"), FakeContext())
    assert again["statusCode"] == 409
    assert json.loads(again["body"])["error"]["code"] == "TASK_NOT_CANCELLABLE"
    other = api_handler(http_event("POST", f"/v1/exports/{task.task_id}/cancel", user="bob"), FakeContext())
    assert other["statusCode"] == 404


def test_retry_creates_a_linked_task_with_the_same_parameters(running_aws: Resources) -> None:
    accepted = submit({**orders_body("http://127.0.0.1:9/hook"), "priority": 2})
    assert (
        api_handler(http_event("POST", f"/v1/exports/{accepted['task_id']}/cancel"), FakeContext())["statusCode"] == 200
    )

    result = api_handler(http_event("POST", f"/v1/exports/{accepted['task_id']}/retry"), FakeContext())

    assert result["statusCode"] == 202
    retried = get(json.loads(result["body"])["task_id"])
    original = get(accepted["task_id"])
    assert retried["retry_of"] == accepted["task_id"]
    assert retried["status"] == "PENDING"
    for name in ("export_type", "format", "filters", "priority"):
        assert retried[name] == original[name]


def test_no_callback_is_lost_when_the_worker_dies_after_ending_the_task(running_aws: Resources, deps: Any) -> None:
    with receiver([204]) as hook:
        task = start_task(deps, timeout_sec=3, callback_url=hook.url, export_type="orders")
        # The worker wrote COMPLETED and died before telling the workflow.
        wait_for(lambda: deps.tasks.get(task.task_id).lifecycle_token)
        stored = deps.tasks.get(task.task_id)
        running = stored.model_copy(update={"status": TaskStatus.RUNNING, "attempt": 1})
        deps.tasks.update(stored, running)
        result = deps.results.start_upload("results/x/orders.csv", "text/csv", "orders.csv", {})
        result.upload_part(b"a,b\r\n")
        result.complete()
        from exports.domain.task import ExportResult

        done = complete(
            running,
            ExportResult(
                key="results/x/orders.csv",
                bytes=5,
                rows=0,
                sha256="0" * 64,
                content_type="text/csv",
                file_name="orders.csv",
            ),
            datetime.now(UTC),
            timedelta(hours=1),
        )
        deps.tasks.update(running, done)
        calls = hook.wait_for(1, timeout=20)

    assert len(calls) == 1
    assert json.loads(calls[0].body)["data"]["status"] == "COMPLETED"
    assert deps.tasks.get(task.task_id).status is TaskStatus.COMPLETED


def get(task_id: str) -> dict[str, Any]:
    return json.loads(api_handler(http_event("GET", f"/v1/exports/{task_id}"), FakeContext())["body"])


def run_lane(resources: Resources, lane: str) -> list[MessageTypeDef]:
    """Hand the lane's queued messages to the worker; returns them."""
    from local_stack.worker_loop import to_sqs_event

    sqs = boto3.client("sqs", region_name=REGION)
    messages = sqs.receive_message(
        QueueUrl=resources.queue_urls[lane], MaxNumberOfMessages=10, AttributeNames=["All"]
    ).get("Messages", [])
    if messages:
        worker.lambda_handler(to_sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:q", REGION), FakeContext())
    return messages


def test_a_merged_request_loses_nothing_it_asked_for(running_aws: Resources, retry_clock: CompressedRetryClock) -> None:
    """Given A asks at low priority with a callback, when B asks the same at high priority with
    its own callback, then B gets A's task promoted into the high lane, and both are called back,
    each signed on its own and verified by the reference Standard Webhooks library."""
    from standardwebhooks import Webhook

    with receiver([204]) as hook_a, receiver([503, 204]) as hook_b:
        first = submit({**orders_body(hook_a.url), "priority": 9})
        second = submit({**orders_body(hook_b.url), "priority": 1})
        assert second["deduplicated"] is True and second["task_id"] == first["task_id"]
        shown = get(first["task_id"])
        assert shown["priority"] == 1
        assert [c["url"] for c in shown["callbacks"]] == [hook_a.url, hook_b.url]

        promoted = run_lane(running_aws, "high")
        assert [json.loads(m["Body"])["priority"] for m in promoted] == [1]
        calls_a, calls_b = hook_a.wait_for(1), hook_b.wait_for(2)
        task = wait_for(
            lambda: (
                (t := get(first["task_id"]))["callbacks"]
                and all(c["status"] == "DELIVERED" for c in t["callbacks"])
                and t
            )
        )
        run_lane(running_aws, "low")  # the message in the old lane is only a duplicate now

    assert task["status"] == "COMPLETED"
    assert [(c["attempts"], c["last_error"]) for c in task["callbacks"]] == [(1, None), (2, None)]
    assert task["callback"] == {"status": "DELIVERED", "attempts": 1, "last_error": None}
    verifier = Webhook(WEBHOOK_SECRET)
    for call in [*calls_a, *calls_b]:
        event = verifier.verify(call.body, dict(call.headers))
        assert event["type"] == "export.completed"
        assert event["data"]["task_id"] == first["task_id"] and event["data"]["download_url"]
    ids_a, ids_b = {c.headers["webhook-id"] for c in calls_a}, {c.headers["webhook-id"] for c in calls_b}
    assert len(ids_a) == len(ids_b) == 1 and ids_a != ids_b


def test_requests_with_different_timeouts_are_not_merged(running_aws: Resources) -> None:
    """Each gets the deadline it asked for: a task's deadline is fixed when its lifecycle starts."""
    body = {key: value for key, value in orders_body("").items() if key != "callback_url"}
    first = submit({**body, "timeout_sec": 10})
    second = submit({**body, "timeout_sec": 3600})
    assert second["deduplicated"] is False and second["task_id"] != first["task_id"]
    assert get(second["task_id"])["deadline"] != get(first["task_id"])["deadline"]
    third = submit({**body, "timeout_sec": 3600, "priority": 2})
    assert third["deduplicated"] is True and third["task_id"] == second["task_id"]


def test_a_throttled_lifecycle_function_is_retried_with_full_jitter_until_it_runs(
    running_aws: Resources, retry_clock: CompressedRetryClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Lambda throttles the lifecycle function's first invocations, as in a burst of submits
    throttled, invoked = 6, []
    real = lambda_runtime.handler_for

    def throttling(function_name: str) -> Any:
        if Names.LIFECYCLE_FUNCTION in function_name:
            invoked.append(function_name)
            if len(invoked) <= throttled:
                raise LambdaClientError("TooManyRequestsException", "Rate Exceeded.")
        return real(function_name)

    monkeypatch.setattr(lambda_runtime, "handler_for", throttling)

    # When a task is submitted, then run
    body = {key: value for key, value in orders_body("").items() if key != "callback_url"}
    accepted = submit({**body, "timeout_sec": 300})
    wait_for(lambda: len(invoked) > throttled)
    run_queued_work(running_aws)

    # Then its execution waited for the function and got the task's outcome
    sfn = boto3.client("stepfunctions", region_name=REGION)
    execution = wait_for(
        lambda: next(
            (
                e
                for e in sfn.list_executions(stateMachineArn=running_aws.state_machine_arn)["executions"]
                if e["name"].startswith(accepted["task_id"]) and e["status"] != "RUNNING"
            ),
            None,
        )
    )
    assert execution["status"] == "SUCCEEDED"
    assert get(accepted["task_id"])["status"] == "COMPLETED"
    # ... after one wait per throttle, each drawn from [0, min(cap, 1 s x 2^n)] (full jitter)
    caps = [
        min(LIFECYCLE_THROTTLE_RETRY.cap_sec, LIFECYCLE_THROTTLE_RETRY.base_sec * LIFECYCLE_THROTTLE_RETRY.factor**n)
        for n in range(throttled)
    ]
    assert len(retry_clock.intervals) == throttled
    assert all(0 <= waited <= cap for waited, cap in zip(retry_clock.intervals, caps, strict=True))
    assert retry_clock.intervals != caps  # drawn, not the plain backoff


def test_a_burst_of_throttles_of_the_callback_function_spends_none_of_the_callbacks_attempts(
    running_aws: Resources, retry_clock: CompressedRetryClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Lambda throttles the callback function more often than a callback is retried
    throttled, invoked = CALLBACK_RETRY.retries + 2, []
    real = lambda_runtime.handler_for

    def throttling(function_name: str) -> Any:
        if Names.CALLBACK_FUNCTION in function_name:
            invoked.append(function_name)
            if len(invoked) <= throttled:
                raise LambdaClientError("TooManyRequestsException", "Rate Exceeded.")
        return real(function_name)

    monkeypatch.setattr(lambda_runtime, "handler_for", throttling)

    # When a task with a callback ends
    with receiver([204]) as hook:
        accepted = submit(orders_body(hook.url))
        run_queued_work(running_aws)
        task = wait_for(lambda: (t := get(accepted["task_id"]))["callback"]["status"] == "DELIVERED" and t)
        calls = hook.requests

    # Then the throttles were waited out with full jitter, and the one real attempt delivered it
    assert len(calls) == 1
    assert task["callback"] == {"status": "DELIVERED", "attempts": 1, "last_error": None}
    caps = [
        min(LIFECYCLE_THROTTLE_RETRY.cap_sec, LIFECYCLE_THROTTLE_RETRY.base_sec * LIFECYCLE_THROTTLE_RETRY.factor**n)
        for n in range(throttled)
    ]
    assert len(retry_clock.intervals) == throttled
    assert all(0 <= waited <= cap for waited, cap in zip(retry_clock.intervals, caps, strict=True))


class GatedExport(ExportType):
    """A few rows, then it waits for ``release``: holds its task RUNNING as long as a test needs."""

    name = "gated"
    description = "test"
    filters_model = NoFilters
    started: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER)]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        GatedExport.started.set()
        yield (1,)
        assert GatedExport.release.wait(30)
        yield (2,)

    def file_stem(self, filters: Any) -> str:
        return "gated"


@pytest.fixture
def gated(running_aws: Resources, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The API and the worker both serve ``gated``; returns the worker's dependencies."""
    from dataclasses import replace
    from functools import cache

    from exports.api import app as api_app
    from functions.submit import handler as api

    api_deps = api.dependencies()
    registry = ExportTypeRegistry([*api_deps.registry, GatedExport()])
    # The route modules call the API's composition through exports.api.app.
    monkeypatch.setattr(api_app, "dependencies", cache(lambda: replace(api_deps, registry=registry)))
    GatedExport.started.clear()
    GatedExport.release.clear()
    return replace(worker.dependencies(), registry=registry)


def test_a_callback_merged_into_a_pending_task_without_one_is_delivered(
    running_aws: Resources, retry_clock: CompressedRetryClock
) -> None:
    """Issue 23: the first request asked for no callback, an identical one merged into it while
    PENDING did. The workflow learned "no callback" from the task as the worker held it, and the
    second caller's callback stayed PENDING with 0 attempts after COMPLETED."""
    with receiver([204]) as hook:
        first = submit({**orders_body(""), "callback_url": None})
        second = submit(orders_body(hook.url))
        assert second["deduplicated"] is True and second["task_id"] == first["task_id"]

        run_queued_work(running_aws)
        (call,) = hook.wait_for(1)
        task = wait_for(lambda: (t := get(first["task_id"]))["callbacks"][0]["status"] == "DELIVERED" and t)

    assert task["status"] == "COMPLETED"
    assert task["callbacks"] == [{"url": hook.url, "status": "DELIVERED", "attempts": 1, "last_error": None}]
    assert json.loads(call.body)["data"]["task_id"] == first["task_id"]
    assert call.headers["webhook-signature"] == expected_signature(call)


def test_a_callback_merged_into_a_running_task_without_one_is_delivered(
    running_aws: Resources, retry_clock: CompressedRetryClock, gated: Any
) -> None:
    """The same, merged while the worker runs the export (it holds the task as it claimed it)."""
    body = {"export_type": "gated", "format": "csv", "timeout_sec": 60}
    with receiver([204]) as hook:
        first = submit(body)
        outcomes: list[Outcome] = []
        running = threading.Thread(
            target=lambda: outcomes.append(process_task(TaskMessage(first["task_id"], "gated", 5), gated))
        )
        running.start()
        assert GatedExport.started.wait(10)
        assert get(first["task_id"])["status"] == "RUNNING"

        second = submit({**body, "callback_url": hook.url})
        assert second["deduplicated"] is True and second["task_id"] == first["task_id"]
        GatedExport.release.set()
        running.join(30)
        (call,) = hook.wait_for(1)
        task = wait_for(lambda: (t := get(first["task_id"]))["callbacks"][0]["status"] == "DELIVERED" and t)

    assert outcomes == [Outcome.COMPLETED]
    assert task["status"] == "COMPLETED" and task["rows"] == 2
    assert [(c["url"], c["attempts"]) for c in task["callbacks"]] == [(hook.url, 1)]
    assert json.loads(call.body)["type"] == "export.completed"


class MergeAfterRead:
    """The task repository, with an identical request submitted right after the worker's first
    read of the task: the merge lands between that read and the claim, which is conditional on
    status and attempt only, so the worker runs with a copy that lacks the new subscriber."""

    def __init__(self, tasks: Any, merge: Callable[[], dict[str, Any]]) -> None:
        self._tasks = tasks
        self._merge = merge
        self.merged: list[dict[str, Any]] = []

    def get(self, task_id: str) -> Any:
        task = self._tasks.get(task_id)
        if not self.merged:
            self.merged.append(self._merge())
        return task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tasks, name)


def test_a_callback_merged_between_the_workers_read_and_its_claim_is_delivered(
    running_aws: Resources, retry_clock: CompressedRetryClock, gated: Any
) -> None:
    """The PENDING order of issue 23's dedup bug, made certain: the worker read the task
    before the merge and claimed it after."""
    from dataclasses import replace

    body = {"export_type": "gated", "format": "csv", "timeout_sec": 60}
    GatedExport.release.set()
    with receiver([204]) as hook:
        first = submit(body)
        tasks = MergeAfterRead(gated.tasks, lambda: submit({**body, "callback_url": hook.url}))

        outcome = process_task(TaskMessage(first["task_id"], "gated", 5), replace(gated, tasks=tasks))
        (call,) = hook.wait_for(1)
        task = wait_for(lambda: (t := get(first["task_id"]))["callbacks"][0]["status"] == "DELIVERED" and t)

    assert tasks.merged[0]["deduplicated"] is True and tasks.merged[0]["task_id"] == first["task_id"]
    assert outcome is Outcome.COMPLETED and task["status"] == "COMPLETED"
    assert [(c["url"], c["attempts"]) for c in task["callbacks"]] == [(hook.url, 1)]
    assert json.loads(call.body)["data"]["task_id"] == first["task_id"]
