"""The DynamoDB task repository: every write conditional, listing by index."""

import threading
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from exports.core import deliveries
from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.deliveries import DeliveryError, DeliveryPlan, DeliveryStatus
from exports.core.errors import ConditionFailed, InvalidRequest
from exports.core.ids import new_task_id
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, Task, claim, fail, new_task, record_partition_progress
from local_stack.embedded_aws import REGION, Resources

LEASE = timedelta(minutes=2)
MAX_ACTIVE = 100


def make_task(user: str = "alice", at: datetime | None = None) -> Task:
    now = at or datetime.now(UTC)
    return new_task(
        task_id=new_task_id(now),
        user_id=user,
        export_type="orders",
        format=ExportFormat.CSV,
        filters={"date_from": "2025-01-01", "date_to": "2025-01-31", "ratio": 0.5},
        now=now,
        retention=timedelta(hours=24),
    )


@pytest.fixture
def repo(aws: Resources) -> DynamoTaskRepository:
    return DynamoTaskRepository(boto3.client("dynamodb", region_name=REGION), aws.tasks_table)


def test_a_task_round_trips_and_carries_its_ttl(repo: DynamoTaskRepository, aws: Resources) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    assert repo.get(task.task_id) == task
    raw = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=aws.tasks_table, Key={"task_id": {"S": task.task_id}}
    )["Item"]
    assert int(raw["expires_at_epoch"]["N"]) == int(task.expires_at.timestamp())


def test_create_refuses_an_existing_id(repo: DynamoTaskRepository) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    with pytest.raises(ConditionFailed):
        repo.create(task.model_copy(update={"user_id": "mallory"}), MAX_ACTIVE)
    assert repo.get(task.task_id).user_id == "alice"


def test_an_update_from_a_stale_state_loses_and_sees_the_current_one(repo: DynamoTaskRepository) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    now = datetime.now(UTC)
    repo.update(task, claim(task, now, LEASE))

    with pytest.raises(ConditionFailed) as lost:
        repo.update(task, fail(task, "X", "stale", now, LEASE))
    assert lost.value.current is not None and lost.value.current["status"] == "RUNNING"
    assert repo.get(task.task_id).status is TaskStatus.RUNNING


def test_of_many_concurrent_claims_exactly_one_wins(repo: DynamoTaskRepository, atomic_dynamodb: None) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    winners: list[int] = []
    barrier = threading.Barrier(8)

    def try_claim(worker: int) -> None:
        barrier.wait()
        try:
            repo.update(task, claim(task, datetime.now(UTC), LEASE))
            winners.append(worker)
        except ConditionFailed:
            pass

    threads = [threading.Thread(target=try_claim, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1
    assert repo.get(task.task_id).attempt == 1


def test_partitions_writing_progress_at_once_cannot_drop_each_others_counts(repo: DynamoTaskRepository) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    now = datetime.now(UTC)
    running = claim(task, now, LEASE)
    repo.update(task, running)
    first = record_partition_progress(running, 0, 10, 100, now, LEASE)
    repo.update_partitions(running, first)  # no counts yet: the attribute is absent

    with pytest.raises(ConditionFailed):  # read before the first write
        repo.update_partitions(running, record_partition_progress(running, 1, 30, 100, now, LEASE))
    repo.update_partitions(first, record_partition_progress(first, 1, 30, 100, now, LEASE))

    stored = repo.get(task.task_id)
    assert stored.partition_rows == {"0": 10, "1": 30} and stored.rows_written == 40


def test_none_values_are_removed_not_stored(repo: DynamoTaskRepository) -> None:
    task = make_task()
    repo.create(task, MAX_ACTIVE)
    running = claim(task, datetime.now(UTC), LEASE)
    repo.update(task, running)
    failed = fail(running, "E", "boom", datetime.now(UTC), LEASE)
    repo.update(running, failed)
    assert repo.get(task.task_id).lease_expires_at is None


def test_listing_pages_newest_first_per_user(repo: DynamoTaskRepository) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    mine = [make_task(at=start + timedelta(minutes=n)) for n in range(5)]
    for task in [*mine, make_task("bob", at=start)]:
        repo.create(task, MAX_ACTIVE)

    first = repo.list_for_user("alice", 2, None, None)
    second = repo.list_for_user("alice", 2, None, first.cursor)
    third = repo.list_for_user("alice", 2, None, second.cursor)
    listed = [t.task_id for page in (first, second, third) for t in page.tasks]
    assert listed == [t.task_id for t in reversed(mine)]
    assert third.cursor is None


def test_a_status_filter_keeps_paging_until_the_page_is_full(repo: DynamoTaskRepository) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    tasks = [make_task(at=start + timedelta(minutes=n)) for n in range(6)]
    for n, task in enumerate(tasks):
        repo.create(task, MAX_ACTIVE)
        if n % 3 == 0:
            repo.update(task, fail(task, "E", "x", start, LEASE))
    page = repo.list_for_user("alice", 2, TaskStatus.FAILED, None)
    assert [t.task_id for t in page.tasks] == [tasks[3].task_id, tasks[0].task_id]


@pytest.mark.parametrize("cursor", ["garbage!", "e30", "eyJ0YXNrX2lkIjogMX0"])
def test_malformed_cursors_are_refused(repo: DynamoTaskRepository, cursor: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        repo.list_for_user("alice", 2, None, cursor)
    assert refused.value.field == "next_token"


def _delivering(destinations: tuple[str, ...]) -> Task:
    """A task that delivers to ``destinations``, ended FAILED (its deliveries' writes need a
    terminal task as much as any other: status and attempt are part of every condition)."""
    now = datetime.now(UTC)
    task = make_task().model_copy(
        update={
            "delivery": DeliveryPlan(tenant="acme", destination_ids=destinations),
            "deliveries": deliveries.initial(destinations),
        }
    )
    return fail(task, "E", "failed", now, timedelta(hours=1))


FIRST, SECOND = "dst_01JABCDEFGHJKMNPQRSTVWXYZ0", "dst_01JABCDEFGHJKMNPQRSTVWXYZ1"


def test_two_rounds_recording_different_deliveries_keep_each_others_results(repo: DynamoTaskRepository) -> None:
    # Given a task delivering to two destinations, read by two rounds of attempts at once
    task = _delivering((FIRST, SECOND))
    repo.create(task, MAX_ACTIVE)
    error = DeliveryError(code="DESTINATION_UNREACHABLE", message="down")
    now = datetime.now(UTC)
    first = task.model_copy(
        update={"deliveries": (deliveries.delivered(task.deliveries[0], "/a", now, "a" * 64, 1), task.deliveries[1])}
    )
    second = task.model_copy(
        update={"deliveries": (task.deliveries[0], deliveries.attempt_failed(task.deliveries[1], error, True, "/b"))}
    )

    # When each records the delivery it attempted
    repo.record_deliveries(task, first)
    repo.record_deliveries(task, second)

    # Then both results are stored: neither write replaced the other's delivery
    stored = repo.get(task.task_id)
    assert stored is not None
    assert [d.status for d in stored.deliveries] == [DeliveryStatus.DELIVERED, DeliveryStatus.FAILED]
    assert stored.deliveries == (first.deliveries[0], second.deliveries[1])


def test_of_two_writers_of_the_same_delivery_one_wins(repo: DynamoTaskRepository) -> None:
    # Given a FAILED delivery, read by two retries requested at once
    task = _delivering((FIRST,))
    repo.create(task, MAX_ACTIVE)
    error = DeliveryError(code="DESTINATION_UNREACHABLE", message="down")
    failed = task.model_copy(update={"deliveries": (deliveries.attempt_failed(task.deliveries[0], error, True, None),)})
    repo.record_deliveries(task, failed)
    retried = failed.model_copy(update={"deliveries": (deliveries.retried(failed.deliveries[0]),)})

    # When both put it back to PENDING, then Then the second loses and sees the first's write
    repo.record_deliveries(failed, retried)
    with pytest.raises(ConditionFailed) as lost:
        repo.record_deliveries(failed, retried)
    assert lost.value.current is not None
    stored = repo.get(task.task_id)
    assert stored is not None and stored.deliveries == retried.deliveries
    assert stored.deliveries[0].requested_retries == 1


def test_a_delivery_stored_before_retry_rounds_existed_is_the_first_round(
    repo: DynamoTaskRepository, aws: Resources
) -> None:
    # Given a task whose stored delivery has no requested_retries (written before they existed)
    task = _delivering((FIRST,))
    repo.create(task, MAX_ACTIVE)
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=aws.tasks_table,
        Key={"task_id": {"S": task.task_id}},
        UpdateExpression="REMOVE deliveries[0].requested_retries",
    )

    # When the workflow's round records its attempt, Then it is written
    now = datetime.now(UTC)
    after = task.model_copy(update={"deliveries": (deliveries.delivered(task.deliveries[0], "/a", now, "a" * 64, 1),)})
    repo.record_deliveries(task, after)
    stored = repo.get(task.task_id)
    assert stored is not None and stored.deliveries == after.deliveries
