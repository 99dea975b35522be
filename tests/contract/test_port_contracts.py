"""The same behaviour tests against each fake and against the real adapter on moto, so the fakes
the unit tests run on cannot drift from what the adapters do.

Each port has a fixture parametrised by implementation: ``fake`` (tests/unit/export_fakes.py,
tests/unit/service_fakes.py) and the adapter on moto. Observing what a port cannot tell by itself
(an object's body, a slot's holders, an execution's input) goes through a small probe per
implementation. The webhook sender has no case here: it speaks HTTP, not AWS (its adapter is
tested against a local receiver in tests/integration/test_callback_delivery.py).
"""

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from exports.accepting.admission_rules import Throughput, updated_throughput
from exports.accepting.dynamodb_admission import DynamoHotKeyLimiter, DynamoThroughputStats
from exports.accepting.ports import HotKeyLimiter, ThroughputStats
from exports.accepting.sqs_queue import SqsTaskQueue
from exports.core import deliveries
from exports.core.aws.dynamodb_capacity import DynamoCapacityPools
from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.aws.s3_results import S3ResultStore
from exports.core.aws.stepfunctions import StepFunctionsFanOut, StepFunctionsLifecycle
from exports.core.capacity_rules import Drain
from exports.core.config.queues import LANES
from exports.core.deliveries import DeliveryError, DeliveryPlan
from exports.core.errors import ConditionFailed, DuplicateSubmission, ExportsError, InvalidRequest, Overloaded
from exports.core.ports import (
    CapacityPools,
    Lifecycle,
    Receipt,
    Reservation,
    ResultStore,
    TaskMessage,
    TaskQueue,
    TaskRepository,
)
from exports.core.status import TaskStatus
from exports.core.task import Subscriber, Task, cancel, claim, merge_request, record_callback, record_progress
from exports.running.dynamodb_source_slots import DynamoSourceSlots
from exports.running.ports import FanOutStarter, SlotLease, SourceSlotLeases
from exports.sources.dynamodb.ports import ItemQuery, ItemsReader
from exports.sources.dynamodb.reader import DynamoItemsReader
from local_stack.embedded_aws import REGION, create_resources
from tests.unit.builders import LEASE, NOW, RETENTION, make_task
from tests.unit.export_fakes import FakeFiles, FakeQueue, FakeTasks
from tests.unit.service_fakes import (
    FakeCapacityPools,
    FakeFanOut,
    FakeHotKeyLimiter,
    FakeItemsReader,
    FakeLifecycle,
    FakeSourceSlots,
    FakeThroughputStats,
)

MIB = 1024 * 1024
# S3 wants every part but the last to be at least 5 MiB.
PART = b"p" * (5 * MIB)


@pytest.fixture
def moto() -> Iterator[Any]:
    with mock_aws():
        yield create_resources(functools.partial(boto3.client, region_name=REGION))


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
    assert tasks.dedup_holder("same") == task_n(2).task_id
    tasks.release_dedup(task_n(2, dedup_key="same"))
    assert tasks.dedup_holder("same") is None
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


def test_each_delivery_is_written_alone_and_only_as_read(tasks: TaskRepository) -> None:
    # Given a task that ended delivering to two destinations
    first, second = "dst_01JABCDEFGHJKMNPQRSTVWXYZ0", "dst_01JABCDEFGHJKMNPQRSTVWXYZ1"
    plan = DeliveryPlan(tenant="acme", destination_ids=(first, second))
    task = task_n(1, delivery=plan, deliveries=deliveries.initial(plan.destination_ids))
    tasks.create(task, max_active=5)
    ended = cancel(task, NOW, RETENTION)
    tasks.update(task, ended)
    error = DeliveryError(code="DESTINATION_UNREACHABLE", message="down")

    # When two writers, each from the same read, record a different delivery
    one = ended.model_copy(
        update={"deliveries": (deliveries.delivered(ended.deliveries[0], "/a", NOW, "a" * 64, 1), ended.deliveries[1])}
    )
    two = ended.model_copy(
        update={"deliveries": (ended.deliveries[0], deliveries.attempt_failed(ended.deliveries[1], error, True, None))}
    )
    tasks.record_deliveries(ended, one)
    tasks.record_deliveries(ended, two)

    # Then both are stored, and a third from that read loses on the delivery already written
    assert tasks.get(task.task_id).deliveries == (one.deliveries[0], two.deliveries[1])
    with pytest.raises(ConditionFailed):
        tasks.record_deliveries(ended, one)


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
    # The cursor is the page's last id: any id of that shape is a position in the caller's own
    # list (alice's cursor lists bob's tasks older than it: none here), never another's tasks.
    assert first.cursor == task_n(2).task_id
    assert tasks.list_for_user("bob", 2, None, first.cursor).tasks == []
    with pytest.raises(InvalidRequest):
        tasks.list_for_user("alice", 2, None, "not a cursor")


# ResultStore ------------------------------------------------------------------------------------------


@dataclass
class Files:
    """A ResultStore implementation and how to look at what it stored."""

    store: ResultStore
    body: Callable[[str], bytes | None]
    tags: Callable[[str], dict[str, str]]


@pytest.fixture(params=["fake", "s3"])
def files(request: pytest.FixtureRequest) -> Files:
    if request.param == "fake":
        fake = FakeFiles()
        return Files(
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

    return Files(results, body, tags)


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


def test_numbered_parts_sent_in_any_order_by_several_writers_make_one_object_in_number_order(files: Files) -> None:
    started = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    second = files.store.resume_upload(KEY, started.upload_id, ())
    third_etag = second.upload_part_number(3, b"third")
    first_etag = started.upload_part_number(1, PART)
    assembler = files.store.resume_upload(KEY, started.upload_id, [(1, first_etag), (3, third_etag)])
    assembler.upload_part_number(2, PART)
    assembler.complete()
    assert files.body(KEY) == PART + PART + b"third"


def test_a_finished_object_reads_back_in_order(files: Files) -> None:
    upload = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    upload.upload_part(PART)
    upload.upload_part(b"end")
    upload.complete()
    chunks = list(files.store.read_result(KEY))
    assert b"".join(chunks) == PART + b"end"
    assert len(chunks) > 1  # streamed, not one read of the whole file


def test_a_deleted_result_is_gone_and_deleting_it_again_is_harmless(files: Files) -> None:
    upload = files.store.start_upload(KEY, "text/csv", "numbers.csv", {})
    upload.upload_part(b"all")
    upload.complete()
    files.store.delete(KEY)
    files.store.delete(KEY)
    assert files.body(KEY) is None


# TaskQueue --------------------------------------------------------------------------------------


@dataclass
class Queue:
    """A TaskQueue implementation and what a worker's poll does to one of its lanes."""

    queue: TaskQueue
    # Take one waiting message of the lane, as a worker's poll does: its receipt.
    receive: Callable[[str], Receipt]


@pytest.fixture(params=["fake", "sqs"])
def queue(request: pytest.FixtureRequest) -> Queue:
    if request.param == "fake":
        fake = FakeQueue()
        return Queue(fake, fake.receive)
    resources = request.getfixturevalue("moto")
    sqs = boto3.client("sqs", region_name=REGION)

    def receive(lane: str) -> Receipt:
        url = resources.queue_urls[lane]
        (received,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Receipt(queue_arn=arn, receipt_handle=received["ReceiptHandle"], receive_count=1)

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


def test_a_delayed_message_is_not_yet_waiting(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5), delay_sec=60)
    assert queue.queue.depths()["normal"] == 0


def test_a_received_message_no_longer_waits(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    queue.queue.send(message(2, priority=5))
    queue.receive("normal")
    assert queue.queue.depths()["normal"] == 1


def test_a_failed_delivery_comes_back_after_the_delay_it_is_given(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    queue.queue.send(message(2, priority=5))
    later, now = queue.receive("normal"), queue.receive("normal")
    queue.queue.retry_later(later, 60)
    queue.queue.retry_later(now, 0)
    assert queue.queue.depths()["normal"] == 1


def test_a_redelivery_must_name_one_of_the_task_queues(queue: Queue) -> None:
    queue.queue.send(message(1, priority=5))
    receipt = queue.receive("normal")
    elsewhere = dataclasses.replace(receipt, queue_arn=receipt.queue_arn.rsplit(":", 1)[0] + ":elsewhere")
    with pytest.raises(ExportsError):
        queue.queue.retry_later(elsewhere, 10)


# HotKeyLimiter ----------------------------------------------------------------------------------

RATE_PER_MINUTE, BURST = 6, 2  # a token every 10 s, two at once


@pytest.fixture(params=["fake", "dynamodb"])
def limiter(request: pytest.FixtureRequest) -> HotKeyLimiter:
    if request.param == "fake":
        return FakeHotKeyLimiter(RATE_PER_MINUTE, BURST)
    resources = request.getfixturevalue("moto")
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    return DynamoHotKeyLimiter(dynamodb, resources.tasks_table, RATE_PER_MINUTE, BURST)


def test_a_hot_key_grants_its_burst_then_says_how_long_to_wait(limiter: HotKeyLimiter) -> None:
    assert [limiter.acquire("orders:march", NOW) for _ in range(BURST)] == [0.0] * BURST
    assert limiter.acquire("orders:march", NOW) == pytest.approx(10.0)
    assert limiter.acquire("orders:march", NOW + timedelta(seconds=4)) == pytest.approx(6.0)
    assert limiter.acquire("orders:april", NOW) == 0.0  # another key has its own bucket


def test_a_refused_take_spends_nothing_and_tokens_come_back_at_the_rate(limiter: HotKeyLimiter) -> None:
    for _ in range(BURST):
        limiter.acquire("k", NOW)
    for _ in range(3):
        assert limiter.acquire("k", NOW + timedelta(seconds=5)) > 0
    assert limiter.acquire("k", NOW + timedelta(seconds=10)) == 0.0
    assert limiter.acquire("k", NOW + timedelta(seconds=10)) == pytest.approx(10.0)
    later = NOW + timedelta(hours=1)  # a long pause refills to the burst, not beyond
    assert [limiter.acquire("k", later) for _ in range(BURST + 1)][-1] == pytest.approx(10.0)


# ThroughputStats --------------------------------------------------------------------------------

SMOOTHING = 0.5


@pytest.fixture(params=["fake", "dynamodb"])
def throughput(request: pytest.FixtureRequest) -> ThroughputStats:
    if request.param == "fake":
        return FakeThroughputStats(SMOOTHING)
    resources = request.getfixturevalue("moto")
    return DynamoThroughputStats(boto3.client("dynamodb", region_name=REGION), resources.tasks_table, SMOOTHING)


def test_throughput_is_unknown_until_a_run_is_recorded_then_averages_runs(throughput: ThroughputStats) -> None:
    assert throughput.get("orders") is None
    throughput.record("orders", rows=1000, seconds=10.0, days=10)
    first = throughput.get("orders")
    assert first == Throughput(
        rows_per_sec=100.0,
        task_sec=10.0,
        rows_per_task=1000.0,
        rows_squared=1e6,
        rows_times_sec=1e4,
        rows_per_day=100.0,
    )
    throughput.record("orders", rows=3000, seconds=10.0, days=10)
    assert throughput.get("orders") == updated_throughput(first, 3000, 10.0, SMOOTHING, 10)
    assert throughput.get("customers") is None


def test_a_type_without_a_date_range_keeps_its_rows_per_day_unknown(throughput: ThroughputStats) -> None:
    throughput.record("customers", rows=50, seconds=2.0)
    stored = throughput.get("customers")
    assert stored is not None and stored.rows_per_day is None
    assert (stored.rows_per_sec, stored.rows_per_task) == (25.0, 50.0)


# CapacityPools ------------------------------------------------------------------------------------


@pytest.fixture(params=["fake", "dynamodb"])
def capacity(request: pytest.FixtureRequest) -> CapacityPools:
    if request.param == "fake":
        return FakeCapacityPools(SMOOTHING)
    resources = request.getfixturevalue("moto")
    # No drain cache: every reading is the table's.
    return DynamoCapacityPools(boto3.client("dynamodb", region_name=REGION), resources.tasks_table, SMOOTHING, 0)


def test_work_is_queued_while_at_most_the_limit_is_queued_already(capacity: CapacityPools) -> None:
    assert capacity.reserve("lane#normal", 4.0, limit_sec=0.001) == Reservation(admitted=True, queued_sec=0.0)
    assert capacity.reserve("lane#normal", 4.0, limit_sec=4.0) == Reservation(admitted=True, queued_sec=4.0)
    assert capacity.reserve("lane#normal", 4.0, limit_sec=7.9) == Reservation(admitted=False, queued_sec=8.0)
    assert capacity.reserve("lane#high", 4.0, limit_sec=0.001).admitted  # pools are apart
    capacity.release("lane#normal", 4.0)
    assert capacity.reserve("lane#normal", 1.0, limit_sec=4.0) == Reservation(admitted=True, queued_sec=4.0)


def test_starts_take_work_off_and_measure_the_drain_while_work_stays_queued(capacity: CapacityPools) -> None:
    for _ in range(5):
        capacity.reserve("lane#normal", 2.0, limit_sec=100.0)
    capacity.start("lane#normal", 2.0, NOW, 2.0)
    assert capacity.drain("lane#normal") is None  # no start before it to measure from
    capacity.start("lane#normal", 2.0, NOW + timedelta(seconds=1), 2.0)
    capacity.start("lane#normal", 2.0, NOW + timedelta(seconds=4), 2.0)
    assert capacity.drain("lane#normal") == Drain(work_sec=2.0, elapsed_sec=2.0, samples=2)
    capacity.start("lane#normal", 2.0, NOW + timedelta(seconds=5))  # its type's speed unmeasured: no sample
    assert capacity.drain("lane#normal") == Drain(work_sec=2.0, elapsed_sec=2.0, samples=2)
    capacity.start("lane#normal", 2.0, NOW + timedelta(seconds=6), 1.0)  # measured since: 1 s of work
    assert capacity.drain("lane#normal") == Drain(work_sec=1.5, elapsed_sec=1.5, samples=3)
    capacity.reserve("lane#normal", 2.0, limit_sec=100.0)  # the queue was empty after the last start
    capacity.start("lane#normal", 2.0, NOW + timedelta(hours=1), 2.0)  # an idle hour is no drain
    assert capacity.drain("lane#normal") == Drain(work_sec=1.5, elapsed_sec=1.5, samples=3)
    assert capacity.reserve("lane#normal", 1.0, limit_sec=0.001) == Reservation(admitted=True, queued_sec=0.0)


# SourceSlotLeases ------------------------------------------------------------------------------------


@dataclass
class Slots:
    """A SourceSlotLeases implementation and who holds a source's slots now."""

    slots: SourceSlotLeases
    holders: Callable[[str, int], list[str]]


@pytest.fixture(params=["fake", "dynamodb"])
def slots(request: pytest.FixtureRequest) -> Slots:
    if request.param == "fake":
        fake = FakeSourceSlots(lease=LEASE)
        return Slots(fake, fake.holders)
    resources = request.getfixturevalue("moto")
    dynamo = DynamoSourceSlots(boto3.client("dynamodb", region_name=REGION), resources.tasks_table, lease=LEASE)
    return Slots(dynamo, dynamo.holders)


def test_a_source_gives_out_at_most_its_limit_of_slots(slots: Slots) -> None:
    first = slots.slots.acquire("shop", 2, "exp_a", NOW)
    second = slots.slots.acquire("shop", 2, "exp_b", NOW)
    assert first is not None and second is not None
    assert {first.index, second.index} == {0, 1}
    assert slots.slots.acquire("shop", 2, "exp_c", NOW) is None
    assert sorted(slots.holders("shop", 2)) == ["exp_a", "exp_b"]
    assert slots.slots.acquire("warehouse", 2, "exp_c", NOW) is not None  # another source


def test_a_holder_asking_again_gets_its_own_slot(slots: Slots) -> None:
    lease = slots.slots.acquire("shop", 1, "exp_a", NOW)
    assert slots.slots.acquire("shop", 1, "exp_a", NOW + timedelta(seconds=1)) == lease


def test_a_released_slot_is_free_and_releasing_anothers_slot_changes_nothing(slots: Slots) -> None:
    lease = slots.slots.acquire("shop", 1, "exp_a", NOW)
    assert lease is not None
    slots.slots.release(SlotLease("shop", lease.index, "exp_b"))  # not exp_b's
    assert slots.holders("shop", 1) == ["exp_a"]
    slots.slots.release(lease)
    assert slots.holders("shop", 1) == []
    slots.slots.release(lease)  # released already: harmless
    assert slots.slots.acquire("shop", 1, "exp_b", NOW) is not None


def test_an_expired_lease_is_taken_over_and_its_old_holder_cannot_renew_it(slots: Slots) -> None:
    lease = slots.slots.acquire("shop", 1, "exp_a", NOW)
    assert lease is not None
    assert slots.slots.acquire("shop", 1, "exp_b", NOW + LEASE - timedelta(seconds=1)) is None
    late = NOW + LEASE + timedelta(seconds=2)
    taken = slots.slots.acquire("shop", 1, "exp_b", late)
    assert taken is not None and slots.holders("shop", 1) == ["exp_b"]
    assert slots.slots.renew(lease, late) is False
    slots.slots.release(lease)  # the old holder's release leaves the new holder's slot alone
    assert slots.holders("shop", 1) == ["exp_b"]


def test_renewing_keeps_a_slot_past_its_first_lease(slots: Slots) -> None:
    lease = slots.slots.acquire("shop", 1, "exp_a", NOW)
    assert lease is not None
    assert slots.slots.renew(lease, NOW + LEASE - timedelta(seconds=5)) is True
    assert slots.slots.acquire("shop", 1, "exp_b", NOW + LEASE + timedelta(seconds=2)) is None
    assert slots.slots.renew(SlotLease("shop", lease.index, "exp_b"), NOW) is False
    assert slots.slots.renew(SlotLease("shop", lease.index + 1, "exp_a"), NOW) is False  # never taken


# Lifecycle --------------------------------------------------------------------------------------


@dataclass
class Workflow:
    """A Lifecycle implementation and the executions it started: task id -> input."""

    lifecycle: Lifecycle
    executions: Callable[[], dict[str, dict[str, Any]]]


@pytest.fixture(params=["fake", "stepfunctions"])
def workflow(request: pytest.FixtureRequest) -> Workflow:
    if request.param == "fake":
        fake = FakeLifecycle()
        return Workflow(fake, lambda: dict(fake.started))
    resources = request.getfixturevalue("moto")
    sfn = boto3.client("stepfunctions", region_name=REGION)

    def executions() -> dict[str, dict[str, Any]]:
        listed = sfn.list_executions(stateMachineArn=resources.state_machine_arn)["executions"]
        return {
            execution["name"]: json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"])
            for execution in listed
        }

    return Workflow(StepFunctionsLifecycle(sfn, resources.state_machine_arn), executions)


def test_a_task_gets_one_execution_named_after_it_with_its_deadline(workflow: Workflow) -> None:
    task = task_n(1, timeout_sec=60)
    workflow.lifecycle.start(task)
    workflow.lifecycle.start(task)  # started again (a retried submit): still one execution
    workflow.lifecycle.start(task_n(2))
    assert workflow.executions() == {
        task.task_id: {"task_id": task.task_id, "timeout_sec": 60},
        task_n(2).task_id: {"task_id": task_n(2).task_id, "timeout_sec": 300},
    }


def test_an_end_reported_to_an_execution_that_moved_on_is_no_error(workflow: Workflow) -> None:
    task = task_n(1)
    workflow.lifecycle.start(task)
    workflow.lifecycle.report_end("a-token-nobody-waits-for", cancel(task, NOW, RETENTION))


# FanOutStarter ----------------------------------------------------------------------------------


@dataclass
class FanOutWorkflow:
    """A FanOutStarter implementation and the executions it started: name -> input."""

    starter: FanOutStarter
    executions: Callable[[], dict[str, dict[str, Any]]]


@pytest.fixture(params=["fake", "stepfunctions"])
def fan_out(request: pytest.FixtureRequest) -> FanOutWorkflow:
    if request.param == "fake":
        fake = FakeFanOut()
        return FanOutWorkflow(fake, lambda: dict(fake.started))
    resources = request.getfixturevalue("moto")
    sfn = boto3.client("stepfunctions", region_name=REGION)

    def executions() -> dict[str, dict[str, Any]]:
        listed = sfn.list_executions(stateMachineArn=resources.fan_out_state_machine_arn)["executions"]
        return {
            execution["name"]: json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"])
            for execution in listed
        }

    return FanOutWorkflow(StepFunctionsFanOut(sfn, resources.fan_out_state_machine_arn), executions)


def test_each_split_attempt_gets_one_execution_named_after_it_with_its_partitions(fan_out: FanOutWorkflow) -> None:
    fan_out.starter.start("exp_1", 0, 3)
    fan_out.starter.start("exp_1", 1, 2)  # the retried attempt: an execution of its own
    assert fan_out.executions() == {
        "exp_1-0": {"task_id": "exp_1", "attempt": 0, "partitions": [0, 1, 2]},
        "exp_1-1": {"task_id": "exp_1", "attempt": 1, "partitions": [0, 1]},
    }


def test_an_attempt_cannot_start_a_second_execution(fan_out: FanOutWorkflow) -> None:
    fan_out.starter.start("exp_1", 0, 3)
    with pytest.raises(ExportsError):
        fan_out.starter.start("exp_1", 0, 2)
    assert list(fan_out.executions()) == ["exp_1-0"]


# ItemsReader ------------------------------------------------------------------------------------

ITEMS_TABLE = "contract-items"


@pytest.fixture(params=["fake", "dynamodb"])
def items(request: pytest.FixtureRequest) -> ItemsReader:
    rows = [
        {"pk": "shop", "sk": f"2025-01-0{day}", "status": status, "total": total}
        for day, status, total in [(1, "paid", "10.10"), (2, "open", "5"), (3, "paid", "0.30"), (4, "paid", "7")]
    ] + [{"pk": "other", "sk": "2025-01-01", "status": "paid", "total": "1"}]
    if request.param == "fake":
        fake = FakeItemsReader({ITEMS_TABLE: ("pk", "sk")})
        for row in rows:
            fake.put(ITEMS_TABLE, {**row, "total": Decimal(row["total"])})
        return fake
    request.getfixturevalue("moto")
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName=ITEMS_TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for row in rows:
        item = {name: {"S": value} for name, value in row.items() if name != "total"}
        dynamodb.put_item(TableName=ITEMS_TABLE, Item={**item, "total": {"N": row["total"]}})
    return DynamoItemsReader(dynamodb)


def read_all(reader: ItemsReader, query: ItemQuery, limit: int) -> list[list[dict[str, Any]]]:
    """Every page of ``query``, following the continuation keys."""
    pages, start = [], None
    while True:
        page, start = reader.page(query, start, limit)
        pages.append(page)
        if start is None:
            return pages


def test_a_partition_reads_page_by_page_in_sort_key_order_with_exact_numbers(items: ItemsReader) -> None:
    query = ItemQuery(table=ITEMS_TABLE, index=None, partition_name="pk", partition_value="shop")
    pages = read_all(items, query, limit=3)
    assert [[item["sk"] for item in page] for page in pages] == [
        ["2025-01-01", "2025-01-02", "2025-01-03"],
        ["2025-01-04"],
    ]
    assert pages[0][0]["total"] == Decimal("10.10")


def test_a_sort_key_range_or_prefix_bounds_the_read(items: ItemsReader) -> None:
    between = ItemQuery(ITEMS_TABLE, None, "pk", "shop", "sk", sort_from="2025-01-02", sort_to="2025-01-03")
    assert [item["sk"] for item in read_all(items, between, 10)[0]] == ["2025-01-02", "2025-01-03"]
    from_day = ItemQuery(ITEMS_TABLE, None, "pk", "shop", "sk", sort_from="2025-01-03")
    assert [item["sk"] for item in read_all(items, from_day, 10)[0]] == ["2025-01-03", "2025-01-04"]
    prefix = ItemQuery(ITEMS_TABLE, None, "pk", "shop", "sk", sort_begins_with="2025-01-0")
    assert len(read_all(items, prefix, 10)[0]) == 4


def test_filters_apply_after_the_limit_so_a_page_may_come_back_short(items: ItemsReader) -> None:
    query = ItemQuery(ITEMS_TABLE, None, "pk", "shop", filters=[("status", ["paid"])])
    pages = read_all(items, query, limit=2)
    assert [[item["sk"] for item in page] for page in pages] == [["2025-01-01"], ["2025-01-03", "2025-01-04"]]
