"""The same behaviour tests against each fake and against the real adapter on moto, so the fakes
the unit tests run on cannot drift from what the adapters do.

Each port has a fixture parametrised by implementation: ``fake`` (tests/unit/export_fakes.py) and
the adapter on moto. Observing what a port cannot tell by itself (an object's body) goes through a
small probe per implementation.
"""

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from exports.adapters.dynamodb_tasks import DynamoTaskRepository
from exports.adapters.s3_results import S3ResultStore
from exports.adapters.sqs_queue import SqsTaskQueue
from exports.config import LANES
from exports.domain.errors import ConditionFailed, DuplicateSubmission, ExportsError, InvalidRequest, Overloaded
from exports.domain.status import TaskStatus
from exports.domain.task import Subscriber, Task, cancel, claim, merge_request, record_callback, record_progress
from exports.ports import Delivery, ExportFiles, ResultStore, TaskMessage, TaskQueue, TaskRepository
from local_stack.embedded_aws import REGION, create_resources
from tests.unit.builders import LEASE, NOW, RETENTION, make_task
from tests.unit.export_fakes import FakeFiles, FakeQueue, FakeTasks

MIB = 1024 * 1024
# S3 wants every part but the last to be at least 5 MiB.
PART = b"p" * (5 * MIB)


@pytest.fixture
def moto() -> Iterator[Any]:
    with mock_aws():
        yield create_resources(lambda service: boto3.client(service, region_name=REGION))


# TaskRepository ---------------------------------------------------------------------------------


@pytest.fixture(params=["fake", "dynamodb"])
def tasks(request: pytest.FixtureRequest) -> TaskRepository:
    if request.param == "fake":
        return FakeTasks()
    resources = request.getfixturevalue("moto")
    return DynamoTaskRepository(boto3.client("dynamodb", region_name=REGION), resources.tasks_table)


def task_n(n: int, **fields: Any) -> Task:
    """Task number ``n``: ids sort (and so list) by ``n``."""
    return make_task(task_id=f"exp_01JNCS6Z0000000000000000{n:02d}", **fields)


def test_a_created_task_reads_back_and_takes_a_quota_slot(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    assert tasks.get(task.task_id) == task
    assert tasks.active_count("alice") == 1
    assert tasks.get(task_n(2).task_id) is None


def test_creating_an_existing_id_is_a_condition_failure(tasks: TaskRepository) -> None:
    tasks.create(task_n(1), max_active=5)
    with pytest.raises(ConditionFailed):
        tasks.create(task_n(1), max_active=5)
    assert tasks.active_count("alice") == 1


def test_the_quota_refuses_a_task_past_max_active(tasks: TaskRepository) -> None:
    tasks.create(task_n(1), max_active=1)
    with pytest.raises(Overloaded) as refused:
        tasks.create(task_n(2), max_active=1)
    assert refused.value.code == "QUOTA_EXCEEDED"
    assert tasks.get(task_n(2).task_id) is None


def test_an_active_dedup_key_names_its_holder_until_it_is_replaced_or_released(tasks: TaskRepository) -> None:
    first = task_n(1, dedup_key="same")
    tasks.create(first, max_active=5)
    with pytest.raises(DuplicateSubmission) as duplicate:
        tasks.create(task_n(2, dedup_key="same"), max_active=5)
    assert duplicate.value.holder == first.task_id
    tasks.create(task_n(2, dedup_key="same"), max_active=5, replace_holder=first.task_id)
    tasks.release_dedup(first)  # no longer the holder: the marker stays the second's
    with pytest.raises(DuplicateSubmission) as still:
        tasks.create(task_n(3, dedup_key="same"), max_active=5)
    assert still.value.holder == task_n(2).task_id
    tasks.release_dedup(task_n(2, dedup_key="same"))
    tasks.create(task_n(3, dedup_key="same"), max_active=5)


def test_a_dedup_key_held_past_its_holders_deadline_is_free(tasks: TaskRepository) -> None:
    tasks.create(task_n(1, dedup_key="same", timeout_sec=60), max_active=5)
    later = NOW + timedelta(seconds=120)
    tasks.create(task_n(2, dedup_key="same", created_at=later, expires_at=later + RETENTION), max_active=5)


def test_an_update_is_conditional_on_status_and_attempt(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    running = claim(task, NOW, LEASE)
    tasks.update(task, running)
    assert tasks.get(task.task_id) == running
    with pytest.raises(ConditionFailed) as conflict:
        tasks.update(task, claim(task, NOW, LEASE))  # a second claim from the same PENDING read
    assert Task.model_validate(conflict.value.current) == running


def test_an_update_writes_only_what_changed(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    tasks.set_lifecycle_token(task.task_id, "token-1")  # stored after ``task`` was read
    tasks.update(task, claim(task, NOW, LEASE))
    assert tasks.get(task.task_id).lifecycle_token == "token-1"
    tasks.update(task, task)  # nothing changed: nothing written, no condition to fail


def test_ending_a_task_frees_its_quota_slot_once(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    ended = cancel(task, NOW, RETENTION)
    tasks.update(task, ended)
    assert tasks.active_count("alice") == 0
    with pytest.raises(ConditionFailed):
        tasks.update(task, ended)
    assert tasks.active_count("alice") == 0


def test_progress_is_written_while_the_attempt_holds_the_task(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    running = claim(task, NOW, LEASE)
    tasks.update(task, running)
    progressed = record_progress(running, 40, 40, NOW + timedelta(seconds=5), LEASE)
    tasks.record_progress(progressed)
    stored = tasks.get(task.task_id)
    assert (stored.rows_written, stored.progress, stored.lease_expires_at) == (40, 40, progressed.lease_expires_at)
    tasks.update(running, cancel(progressed, NOW, RETENTION))
    with pytest.raises(ConditionFailed):
        tasks.record_progress(record_progress(running, 50, 50, NOW, LEASE))
    assert tasks.get(task.task_id).rows_written == 40


def test_callback_states_are_written_while_the_task_is_as_read(tasks: TaskRepository) -> None:
    task = task_n(1, subscribers=(Subscriber(url="https://example.com/hook"),))
    tasks.create(task, max_active=5)
    ended = cancel(task, NOW, RETENTION)
    tasks.update(task, ended)
    delivered = record_callback(ended, delivered=True, error=None, final=True)
    tasks.record_callbacks(delivered)
    assert tasks.get(task.task_id).subscribers == delivered.subscribers
    with pytest.raises(ConditionFailed):
        tasks.record_callbacks(record_callback(task, delivered=True, error=None, final=True))  # still PENDING


def test_a_merge_is_conditional_on_priority_and_subscribers_too(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    first = merge_request(task, 1, "https://example.com/a")
    tasks.merge(task, first)
    assert tasks.get(task.task_id) == first
    with pytest.raises(ConditionFailed):
        tasks.merge(task, merge_request(task, 2, "https://example.com/b"))


def test_the_lifecycle_token_is_stored_on_an_existing_task_only(tasks: TaskRepository) -> None:
    task = task_n(1)
    tasks.create(task, max_active=5)
    assert tasks.set_lifecycle_token(task.task_id, "token-1") == task.model_copy(update={"lifecycle_token": "token-1"})
    with pytest.raises(ConditionFailed):
        tasks.set_lifecycle_token(task_n(2).task_id, "token-2")


def test_a_users_tasks_list_newest_first_in_pages_and_by_status(tasks: TaskRepository) -> None:
    for n in (1, 2, 3):
        tasks.create(task_n(n), max_active=5)
    tasks.create(task_n(4, user_id="bob"), max_active=5)
    tasks.update(task_n(2), claim(task_n(2), NOW, LEASE))

    first = tasks.list_for_user("alice", 2, None, None)
    assert [task.task_id for task in first.tasks] == [task_n(3).task_id, task_n(2).task_id]
    assert first.cursor is not None
    rest = tasks.list_for_user("alice", 2, None, first.cursor)
    assert ([task.task_id for task in rest.tasks], rest.cursor) == ([task_n(1).task_id], None)
    running = tasks.list_for_user("alice", 10, TaskStatus.RUNNING, None)
    assert [task.task_id for task in running.tasks] == [task_n(2).task_id]
    with pytest.raises(InvalidRequest):
        tasks.list_for_user("bob", 2, None, first.cursor)  # alice's cursor
    with pytest.raises(InvalidRequest):
        tasks.list_for_user("alice", 2, None, "not a cursor")


# ExportFiles (the result store of long exports) -----------------------------------------------------


@dataclass
class Files:
    """An ExportFiles implementation and how to look at what it stored."""

    store: ExportFiles
    results: ResultStore
    body: Callable[[str], bytes | None]
    tags: Callable[[str], dict[str, str]]


@pytest.fixture(params=["fake", "s3"])
def files(request: pytest.FixtureRequest) -> Files:
    if request.param == "fake":
        fake = FakeFiles()
        return Files(
            fake.export_files(),
            fake,
            lambda key: fake.objects[key]["body"] if key in fake.objects else None,
            lambda key: fake.tags.get(key, {}),
        )
    resources = request.getfixturevalue("moto")
    s3 = boto3.client("s3", region_name=REGION)
    results = S3ResultStore(s3, resources.bucket)

    def body(key: str) -> bytes | None:
        listed = s3.list_objects_v2(Bucket=resources.bucket, Prefix=key).get("Contents", [])
        if not any(item["Key"] == key for item in listed):
            return None
        return s3.get_object(Bucket=resources.bucket, Key=key)["Body"].read()

    def tags(key: str) -> dict[str, str]:
        tag_set = s3.get_object_tagging(Bucket=resources.bucket, Key=key)["TagSet"]
        return {tag["Key"]: tag["Value"] for tag in tag_set}

    return Files(results.export_files(), results, body, tags)


KEY = "results/exp_1/1/numbers.csv"


def test_an_upload_is_invisible_until_completed(files: Files) -> None:
    upload = files.store.start_upload(KEY, "text/csv", "numbers.csv", {"task-id": "exp_1"})
    upload.upload_part(PART)
    upload.upload_part(b"tail")
    assert files.body(KEY) is None
    upload.complete()
    assert files.body(KEY) == PART + b"tail"


def test_another_invocation_goes_on_with_an_upload_from_its_id_and_parts(files: Files) -> None:
    first = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    first.upload_part(PART)
    resumed = files.store.resume_upload(KEY, first.upload_id, first.parts)
    assert (resumed.upload_id, resumed.parts) == (first.upload_id, first.parts)
    resumed.upload_part(b"rest")
    resumed.complete()
    assert files.body(KEY) == PART + b"rest"


def test_an_aborted_upload_leaves_nothing(files: Files) -> None:
    upload = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    upload.upload_part(PART)
    upload.abort()
    assert files.body(KEY) is None


def test_checkpoints_are_written_read_and_deleted(files: Files) -> None:
    checkpoint = "results/exp_1/checkpoint.bin"
    assert files.store.read_checkpoint(checkpoint) is None
    files.store.write_checkpoint(checkpoint, b"state")
    assert files.store.read_checkpoint(checkpoint) == b"state"
    files.store.write_checkpoint(checkpoint, b"later")
    assert files.store.read_checkpoint(checkpoint) == b"later"
    files.store.delete_checkpoint(checkpoint)
    files.store.delete_checkpoint(checkpoint)  # gone already: no error
    assert files.store.read_checkpoint(checkpoint) is None


def test_a_finished_object_is_tagged(files: Files) -> None:
    upload = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    upload.upload_part(b"all")
    upload.complete()
    files.store.tag_result(KEY, {"rows": "1", "sha256": "abc"})
    assert files.tags(KEY) == {"rows": "1", "sha256": "abc"}


def test_a_deleted_result_is_gone_and_deleting_it_again_is_harmless(files: Files) -> None:
    upload = files.results.start_upload(KEY, "text/csv", "numbers.csv", {})
    upload.upload_part(b"all")
    upload.complete()
    files.results.delete(KEY)
    files.results.delete(KEY)
    assert files.body(KEY) is None


# TaskQueue --------------------------------------------------------------------------------------


@dataclass
class Queue:
    """A TaskQueue implementation and what a worker's poll does to one of its lanes."""

    queue: TaskQueue
    # Take one waiting message of the lane, as a worker's poll does: its delivery.
    receive: Callable[[str], Delivery]


@pytest.fixture(params=["fake", "sqs"])
def queue(request: pytest.FixtureRequest) -> Queue:
    if request.param == "fake":
        fake = FakeQueue()
        return Queue(fake, fake.receive)
    resources = request.getfixturevalue("moto")
    sqs = boto3.client("sqs", region_name=REGION)

    def receive(lane: str) -> Delivery:
        url = resources.queue_urls[lane]
        (received,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Delivery(queue_arn=arn, receipt_handle=received["ReceiptHandle"], receive_count=1)

    # No depth cache: every reading is the queue's.
    return Queue(SqsTaskQueue(sqs, resources.queue_urls, cache_sec=0), receive)


def message(n: int, priority: int) -> TaskMessage:
    return TaskMessage(task_id=task_n(n).task_id, export_type="orders", priority=priority)


def test_a_message_waits_on_its_prioritys_lane(queue: Queue) -> None:
    assert queue.queue.depths() == {lane.name: 0 for lane in LANES}
    queue.queue.send(message(1, priority=1))
    queue.queue.send(message(2, priority=9))
    queue.queue.send(message(3, priority=9))
    assert queue.queue.depths() == {"high": 1, "normal": 0, "low": 2}
    assert queue.queue.running() == {lane.name: 0 for lane in LANES}


def test_a_delayed_message_is_not_yet_waiting(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5), delay_sec=60)
    assert queue.queue.depths()["normal"] == 0


def test_a_received_message_counts_as_running_until_it_is_done(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    queue.queue.send(message(2, priority=5))
    queue.receive("normal")
    assert queue.queue.depths()["normal"] == 1
    assert queue.queue.running()["normal"] == 1


def test_a_failed_delivery_comes_back_after_the_delay_it_is_given(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    queue.queue.send(message(2, priority=5))
    later, now = queue.receive("normal"), queue.receive("normal")
    queue.queue.redeliver_after(later, 60)
    queue.queue.redeliver_after(now, 0)
    assert queue.queue.depths()["normal"] == 1
    assert queue.queue.running()["normal"] == 1


def test_a_redelivery_must_name_one_of_the_task_queues(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    delivery = queue.receive("normal")
    elsewhere = dataclasses.replace(delivery, queue_arn=delivery.queue_arn.rsplit(":", 1)[0] + ":elsewhere")
    with pytest.raises(ExportsError):
        queue.queue.redeliver_after(elsewhere, 10)
