"""The owner's commands (cancel, retry), the reads (details, list) and the lifecycle's calls
(watch, expire) on fakes."""

from datetime import timedelta
from typing import Any

import pytest

from examples.demo_plugins.orders import OrdersExport
from exports.accepting.submission import submit_export
from exports.api.control import cancel_export, retry_export
from exports.api.queries import list_tasks, task_details
from exports.core.caller import Caller
from exports.core.config.metrics import Metric
from exports.core.errors import LostOwnership, TaskNotCancellable, TaskNotFound, TaskNotRetryable
from exports.core.spec import ExportSpec
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, Task, claim, complete, fail, record_progress
from exports.core.task_writes import write_progress
from exports.finishing.lifecycle import expire, watch
from tests.unit.builders import LEASE, make_result
from tests.unit.fakes import FakeOrdersReader
from tests.unit.service_fakes import ServiceWorld, service_world

MARCH = {"date_from": "2025-03-30", "date_to": "2025-03-31"}


def world() -> ServiceWorld:
    return service_world(OrdersExport(FakeOrdersReader([])))


def pending(w: ServiceWorld, **fields: Any) -> Task:
    request = ExportSpec(**{"export_type": "orders", "filters": MARCH, **fields})
    return submit_export(request, Caller("alice"), w.api).task


def running(w: ServiceWorld, task: Task) -> Task:
    claimed = claim(task, w.clock(), LEASE)
    w.tasks.update(task, claimed)
    return claimed


# --- cancel -------------------------------------------------------------------------------------


def test_cancel_ends_a_pending_task_frees_its_slot_and_tells_its_workflow() -> None:
    w = world()
    task = pending(w)
    w.tasks.set_lifecycle_token(task.task_id, "token-1")

    cancelled = cancel_export(task.task_id, "alice", w.api)

    assert cancelled.status is TaskStatus.CANCELLED and cancelled.finished_at == w.clock()
    assert w.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert w.tasks.active_count("alice") == 0 and w.tasks.dedup == {}
    assert w.lifecycle.reports == [("token-1", {"status": "CANCELLED", "has_callback": False, "has_deliveries": False})]
    assert w.counts(Metric.CANCELLED) == 1


def test_cancel_of_a_running_task_takes_it_from_its_worker() -> None:
    w = world()
    claimed = running(w, pending(w))

    cancel_export(claimed.task_id, "alice", w.api)

    with pytest.raises(LostOwnership):  # the worker's next progress write
        write_progress(record_progress(claimed, 10, 10, w.clock(), LEASE), w.api)
    assert w.tasks.get(claimed.task_id).status is TaskStatus.CANCELLED


def test_cancel_looks_again_when_a_worker_moved_the_task_meanwhile() -> None:
    w = world()
    task = pending(w)
    write = w.tasks.update
    moved: list[Task] = []

    def claimed_underfoot(before: Task, after: Task) -> None:
        """The first time cancel writes, a worker has just claimed the task."""
        if not moved and after.status is TaskStatus.CANCELLED:
            moved.append(claim(before, w.clock(), LEASE))
            write(before, moved[0])
        write(before, after)

    w.tasks.update = claimed_underfoot  # type: ignore[method-assign]

    cancelled = cancel_export(task.task_id, "alice", w.api)

    assert moved and (cancelled.status, cancelled.attempt) == (TaskStatus.CANCELLED, 1)
    assert w.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert w.tasks.active_count("alice") == 0


def test_cancel_refuses_an_ended_task_and_hides_other_users_tasks() -> None:
    w = world()
    task = pending(w)
    cancel_export(task.task_id, "alice", w.api)

    with pytest.raises(TaskNotCancellable):
        cancel_export(task.task_id, "alice", w.api)
    with pytest.raises(TaskNotFound):
        cancel_export(task.task_id, "bob", w.api)
    with pytest.raises(TaskNotFound):
        cancel_export("exp_01JUNKJUNKJUNKJUNKJUNKJUNK", "alice", w.api)
    with pytest.raises(TaskNotFound):
        cancel_export("../../etc", "alice", w.api)
    assert w.counts(Metric.CANCELLED) == 1


# --- retry --------------------------------------------------------------------------------------


def test_retry_refuses_a_task_that_has_not_ended_or_that_completed() -> None:
    w = world()
    task = pending(w)
    with pytest.raises(TaskNotRetryable):
        retry_export(task.task_id, Caller("alice"), w.api)
    claimed = running(w, task)
    with pytest.raises(TaskNotRetryable):
        retry_export(task.task_id, Caller("alice"), w.api)
    w.tasks.update(claimed, complete(claimed, make_result(), w.clock(), timedelta(hours=1)))
    with pytest.raises(TaskNotRetryable):
        retry_export(task.task_id, Caller("alice"), w.api)
    assert len(w.tasks.tasks) == 1 and len(w.queue.sent) == 1


@pytest.mark.parametrize("end", ["cancelled", "failed"])
def test_retry_creates_a_linked_task_with_the_same_parameters(end: str) -> None:
    w = world()
    original = pending(w, priority=2, format=ExportFormat.XLSX, callback_url="https://hooks.example.com/in")
    if end == "cancelled":
        cancel_export(original.task_id, "alice", w.api)
    else:
        claimed = running(w, original)
        w.tasks.update(claimed, fail(claimed, "X", "broken", w.clock(), timedelta(hours=1)))

    retried = retry_export(original.task_id, Caller("alice"), w.api).task

    assert retried.task_id != original.task_id
    assert (retried.retry_of, retried.source.value, retried.status) == (original.task_id, "retry", TaskStatus.PENDING)
    for name in ("export_type", "format", "filters", "priority", "timeout_sec", "callback_url", "dedup_key"):
        assert getattr(retried, name) == getattr(original, name)
    assert w.queue.sent[-1][0].task_id == retried.task_id
    assert retried.task_id in w.lifecycle.started
    with pytest.raises(TaskNotFound):
        retry_export(original.task_id, Caller("bob"), w.api)


# --- reads --------------------------------------------------------------------------------------


def test_details_show_a_download_link_once_completed() -> None:
    w = world()
    task = pending(w)
    assert task_details(task.task_id, "alice", w.api).download_url is None
    claimed = running(w, task)
    w.tasks.update(claimed, complete(claimed, make_result(key="results/x/orders.csv"), w.clock(), timedelta(hours=1)))

    details = task_details(task.task_id, "alice", w.api)

    assert details.download_url == "https://example.com/results/x/orders.csv"
    assert details.download_expires_at == w.clock() + timedelta(seconds=w.api.settings.download_url_ttl_sec)
    with pytest.raises(TaskNotFound):
        task_details(task.task_id, "bob", w.api)


def test_a_task_past_its_retention_is_gone_even_before_ttl_deletes_it() -> None:
    w = world()
    task = pending(w)
    w.clock.advance((task.expires_at - w.clock()).total_seconds())

    with pytest.raises(TaskNotFound):
        task_details(task.task_id, "alice", w.api)
    with pytest.raises(TaskNotFound):
        cancel_export(task.task_id, "alice", w.api)
    assert list_tasks("alice", w.api).tasks == []


def test_list_is_newest_first_paged_and_private() -> None:
    w = world()
    ids = []
    for n in range(5):
        filters = {"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}
        ids.append(submit_export(ExportSpec("orders", filters=filters), Caller("alice"), w.api).task.task_id)
        w.clock.advance(1)
    submit_export(ExportSpec("orders", filters=MARCH), Caller("bob"), w.api)

    page = list_tasks("alice", w.api, limit=3)
    rest = list_tasks("alice", w.api, limit=3, cursor=page.cursor)

    assert [t.task_id for t in page.tasks] == ids[::-1][:3]
    assert ([t.task_id for t in rest.tasks], rest.cursor) == (ids[::-1][3:], None)
    assert list_tasks("alice", w.api, status=TaskStatus.COMPLETED).tasks == []
    assert len(list_tasks("bob", w.api).tasks) == 1


# --- the lifecycle workflow's calls -------------------------------------------------------------


def test_watch_stores_the_token_and_reports_an_already_ended_task_at_once() -> None:
    w = world()
    task = pending(w)
    watch(task.task_id, "token-1", w.lifecycle_deps)
    assert w.tasks.get(task.task_id).lifecycle_token == "token-1"
    assert w.lifecycle.reports == []

    ended = pending(w, timeout_sec=60)
    claimed = running(w, ended)
    w.tasks.update(claimed, fail(claimed, "X", "y", w.clock(), timedelta(hours=1)))  # before the token came
    watch(ended.task_id, "token-2", w.lifecycle_deps)
    assert w.lifecycle.reports == [("token-2", {"status": "FAILED", "has_callback": False, "has_deliveries": False})]


def test_expire_times_out_a_task_that_has_not_ended_and_leaves_an_ended_one_alone() -> None:
    w = world()
    task = pending(w, callback_url="https://hooks.example.com/in")
    w.tasks.set_lifecycle_token(task.task_id, "token-1")
    w.clock.advance(task.timeout_sec)

    timed_out = expire(task.task_id, w.lifecycle_deps)

    assert (timed_out.status, timed_out.error.code) == (TaskStatus.TIMEOUT, "DEADLINE_PASSED")
    assert w.tasks.get(task.task_id).status is TaskStatus.TIMEOUT
    assert w.tasks.active_count("alice") == 0
    assert w.lifecycle.reports == [("token-1", {"status": "TIMEOUT", "has_callback": True, "has_deliveries": False})]
    assert w.counts(Metric.TIMED_OUT) == 1
    assert expire(task.task_id, w.lifecycle_deps) == w.tasks.get(task.task_id)  # ended already: as it is
    assert w.counts(Metric.TIMED_OUT) == 1
    with pytest.raises(TaskNotFound):
        expire("exp_01JUNKJUNKJUNKJUNKJUNKJUNK", w.lifecycle_deps)


def test_a_task_that_times_out_or_is_cancelled_before_it_started_gives_its_queue_place_back() -> None:
    w = world()
    waiting, cancelled = pending(w), pending(w, filters={"date_from": "2025-01-01", "date_to": "2025-01-02"})
    assert w.capacity.tasks["lane#normal"] == 2
    w.clock.advance(waiting.timeout_sec)

    expire(waiting.task_id, w.lifecycle_deps)
    cancel_export(cancelled.task_id, "alice", w.api)

    assert w.capacity.tasks["lane#normal"] == 0 and w.capacity.queued["lane#normal"] == 0
    expire(waiting.task_id, w.lifecycle_deps)  # ended already: nothing is given back twice
    assert w.capacity.tasks["lane#normal"] == 0
