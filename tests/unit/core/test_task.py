"""Task operations: each returns a new task and moves its status only as the table allows."""

from datetime import timedelta

import pytest
from pydantic import ValidationError

from exports.core.errors import InvalidTransition
from exports.core.status import TERMINAL, TaskStatus
from exports.core.task import (
    ExportFormat,
    TaskError,
    TaskSource,
    claim,
    complete,
    fail,
    new_task,
    record_progress,
    requeue,
    time_out,
)
from tests.unit.builders import LEASE, NOW, RETENTION, TASK_ID, make_result, make_running_task, make_task

LATER = NOW + timedelta(seconds=45)
TERMINAL_STATUSES = sorted(TERMINAL)


def test_new_task_is_pending_and_its_record_outlives_the_deadline_by_the_retention():
    task = new_task(
        task_id=TASK_ID,
        user_id="alice",
        export_type="orders",
        format=ExportFormat.XLSX,
        filters={"date_from": "2025-03-01", "date_to": "2025-03-02"},
        now=NOW,
        retention=RETENTION,
        timeout_sec=600,
        priority=2,
    )

    assert task.status is TaskStatus.PENDING
    assert (task.attempt, task.retry_count, task.progress, task.rows_written) == (0, 0, 0, 0)
    assert task.started_at is task.finished_at is task.lease_expires_at is None
    assert task.created_at == NOW
    assert task.deadline == NOW + timedelta(seconds=600)
    assert task.expires_at == NOW + timedelta(seconds=600) + RETENTION
    assert task.source is TaskSource.API
    assert task.priority == 2
    assert not task.is_terminal


def test_deadline_is_creation_plus_timeout():
    assert make_task(created_at=NOW, timeout_sec=90).deadline == NOW + timedelta(seconds=90)


def test_task_is_frozen():
    task = make_task()
    with pytest.raises(ValidationError):
        setattr(task, "status", TaskStatus.RUNNING)  # noqa: B010  (a write mypy rightly refuses)
    with pytest.raises(ValidationError):
        setattr(task, "progress", 50)  # noqa: B010


def test_progress_outside_0_to_100_is_refused():
    with pytest.raises(ValidationError):
        make_task(progress=101)
    with pytest.raises(ValidationError):
        make_task(progress=-1)


def test_claim_from_pending_starts_attempt_one_under_a_fresh_lease():
    task = make_task()

    claimed = claim(task, NOW, LEASE)

    assert claimed.status is TaskStatus.RUNNING
    assert claimed.attempt == 1
    assert claimed.started_at == NOW
    assert claimed.lease_expires_at == NOW + LEASE
    assert claimed.lease_is_live(NOW)
    assert not claimed.is_claimable(NOW)
    # the original is untouched
    assert task.status is TaskStatus.PENDING
    assert task.attempt == 0


def test_claim_of_running_task_with_live_lease_is_refused():
    running = make_running_task(now=NOW)

    with pytest.raises(InvalidTransition) as caught:
        claim(running, NOW + LEASE - timedelta(seconds=1), LEASE)

    assert (caught.value.current, caught.value.target) == ("RUNNING", "RUNNING")


@pytest.mark.parametrize("after_expiry", [timedelta(0), timedelta(seconds=1), timedelta(hours=1)])
def test_claim_of_running_task_whose_lease_ran_out_starts_the_next_attempt(after_expiry):
    running = record_progress(make_running_task(now=NOW), rows_written=500, progress=40, now=NOW, lease=LEASE)
    now = running.lease_expires_at + after_expiry

    reclaimed = claim(running, now, LEASE)

    assert reclaimed.status is TaskStatus.RUNNING
    assert reclaimed.attempt == 2
    assert reclaimed.lease_expires_at == now + LEASE
    assert reclaimed.started_at == NOW
    assert (reclaimed.progress, reclaimed.rows_written) == (0, 0)


@pytest.mark.parametrize("status", TERMINAL_STATUSES)
def test_claim_of_a_terminal_task_is_refused(status):
    with pytest.raises(InvalidTransition):
        claim(make_task(status=status), NOW, LEASE)


@pytest.mark.parametrize(("reported", "stored"), [(0, 0), (37, 37), (99, 99), (100, 99), (250, 99), (-5, 0)])
def test_record_progress_keeps_progress_between_0_and_99(reported, stored):
    running = make_running_task()
    assert record_progress(running, rows_written=10, progress=reported, now=NOW, lease=LEASE).progress == stored


def test_record_progress_renews_the_lease_and_counts_rows():
    running = make_running_task(now=NOW)

    updated = record_progress(running, rows_written=1234, progress=50, now=LATER, lease=LEASE)

    assert updated.lease_expires_at == LATER + LEASE
    assert updated.rows_written == 1234
    assert updated.status is TaskStatus.RUNNING
    assert updated.attempt == running.attempt


@pytest.mark.parametrize("status", [TaskStatus.PENDING, *TERMINAL_STATUSES])
def test_record_progress_needs_a_running_task(status):
    with pytest.raises(InvalidTransition):
        record_progress(make_task(status=status), rows_written=1, progress=1, now=NOW, lease=LEASE)


def test_complete_stores_the_result_and_finishes_at_100():
    result = make_result(rows=17)

    done = complete(make_running_task(), result, LATER, RETENTION)

    assert done.status is TaskStatus.COMPLETED
    assert done.result == result
    assert done.progress == 100
    assert done.rows_written == 17
    assert done.finished_at == LATER
    assert done.expires_at == LATER + RETENTION
    assert done.lease_expires_at is None
    assert done.error is None
    assert done.is_terminal


def test_complete_after_a_retry_clears_the_earlier_error():
    retried = claim(requeue(make_running_task(), "THROTTLED", "slow down"), LATER, LEASE)

    done = complete(retried, make_result(), LATER, RETENTION)

    assert done.error is None
    assert done.retry_count == 1


def test_complete_of_a_pending_task_is_refused():
    with pytest.raises(InvalidTransition):
        complete(make_task(), make_result(), NOW, RETENTION)


@pytest.mark.parametrize("build", [make_task, make_running_task], ids=["pending", "running"])
def test_fail_records_the_error_and_ends_the_task(build):
    failed = fail(build(), "ENQUEUE_FAILED", "the task could not be queued", LATER, RETENTION)

    assert failed.status is TaskStatus.FAILED
    assert failed.error == TaskError(code="ENQUEUE_FAILED", message="the task could not be queued")
    assert failed.finished_at == LATER
    assert failed.expires_at == LATER + RETENTION
    assert failed.lease_expires_at is None
    assert failed.result is None


def test_fail_of_a_completed_task_is_refused():
    done = complete(make_running_task(), make_result(), LATER, RETENTION)
    with pytest.raises(InvalidTransition):
        fail(done, "X", "too late", LATER, RETENTION)


def test_requeue_sends_the_task_back_to_pending_and_counts_the_retry():
    running = record_progress(make_running_task(), rows_written=300, progress=30, now=NOW, lease=LEASE)

    queued = requeue(running, "THROTTLED", "DynamoDB throttled the read")

    assert queued.status is TaskStatus.PENDING
    assert queued.retry_count == 1
    assert queued.error == TaskError(code="THROTTLED", message="DynamoDB throttled the read")
    assert queued.lease_expires_at is None
    assert (queued.progress, queued.rows_written) == (0, 0)
    assert queued.attempt == 1
    assert claim(queued, LATER, LEASE).attempt == 2


def test_requeue_of_a_pending_task_is_refused():
    with pytest.raises(InvalidTransition):
        requeue(make_task(), "X", "not running")


@pytest.mark.parametrize("build", [make_task, make_running_task], ids=["pending", "running"])
def test_time_out_ends_the_task_with_deadline_passed(build):
    timed_out = time_out(build(timeout_sec=300), LATER, RETENTION)

    assert timed_out.status is TaskStatus.TIMEOUT
    assert timed_out.error is not None
    assert timed_out.error.code == "DEADLINE_PASSED"
    assert timed_out.task_id in timed_out.error.message
    assert timed_out.finished_at == LATER
    assert timed_out.expires_at == LATER + RETENTION
    assert timed_out.lease_expires_at is None
    assert timed_out.is_terminal


@pytest.mark.parametrize("status", TERMINAL_STATUSES)
def test_time_out_of_a_terminal_task_is_refused(status):
    with pytest.raises(InvalidTransition):
        time_out(make_task(status=status), LATER, RETENTION)


def test_a_pending_task_has_no_live_lease_and_is_claimable():
    task = make_task()
    assert not task.lease_is_live(NOW)
    assert task.is_claimable(NOW)
