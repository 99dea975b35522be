"""submit_export on fakes: what is stored, started and queued, validation that changes nothing,
dedup (merge, promotion, replacement), quota, backlog, estimates and a broken workflow or queue."""

from typing import Any

import pytest

from examples.demo_plugins.orders import OrdersExport
from exports.config.metrics import Metric
from exports.domain.admission import throughput_key
from exports.domain.caller import Caller
from exports.domain.capacity import Drain, lane_pool
from exports.domain.errors import ExportsError, InvalidRequest, Overloaded, ServiceUnavailable
from exports.domain.spec import ExportSpec
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat, claim
from exports.ports import TaskMessage
from exports.services.control import cancel_export
from exports.services.submission import Submission, submit_export
from tests.unit.builders import LEASE
from tests.unit.export_fakes import NumbersExport
from tests.unit.fakes import FakeOrdersReader
from tests.unit.service_fakes import BrokenQueue, FakeResolver, ServiceWorld, service_world

MARCH = {"date_from": "2025-03-30", "date_to": "2025-03-31"}


def world(**settings: Any) -> ServiceWorld:
    return service_world(OrdersExport(FakeOrdersReader([])), **settings)


def spec(**fields: Any) -> ExportSpec:
    return ExportSpec(**{"export_type": "orders", "filters": MARCH, **fields})


def days(n: int, **fields: Any) -> ExportSpec:
    """A request of its own (identical requests would be merged into one task)."""
    return spec(filters={"date_from": "2025-03-01", "date_to": f"2025-03-{n + 1:02d}"}, **fields)


def submit(w: ServiceWorld, request: ExportSpec | None = None, user: str = "alice") -> Submission:
    return submit_export(request or spec(), Caller(user), w.api)


def test_a_submit_stores_a_pending_task_starts_its_lifecycle_and_queues_a_small_message() -> None:
    w = world()

    accepted = submit(w)

    task = w.tasks.get(accepted.task.task_id)
    assert task == accepted.task and task.status is TaskStatus.PENDING and not accepted.deduplicated
    assert (task.user_id, task.export_type, task.filters) == ("alice", "orders", MARCH)
    assert task.task_id.startswith("exp_") and task.created_at == w.clock()
    assert w.lifecycle.started == {task.task_id: {"task_id": task.task_id, "timeout_sec": 300}}
    assert w.queue.sent == [(TaskMessage(task.task_id, "orders", 5, redeliveries=0), 0)]
    assert accepted.estimated_completion_sec > 0
    assert w.tasks.active_count("alice") == 1
    assert w.counts(Metric.SUBMITTED) == 1


@pytest.mark.parametrize(
    ("request_fields", "field", "code"),
    [
        ({"export_type": "invoices"}, "export_type", "UNKNOWN_EXPORT_TYPE"),
        ({"filters": {"date_from": "2025-03-31", "date_to": "2025-03-01"}}, "filters", "VALIDATION_ERROR"),
        ({"filters": {"date_from": "2024-01-01", "date_to": "2025-03-01"}}, "filters", "VALIDATION_ERROR"),
        ({"filters": {"date_from": "2025-02-30", "date_to": "2025-03-01"}}, "filters.date_from", "VALIDATION_ERROR"),
        ({"filters": {"date_from": "yesterday", "date_to": "2025-03-01"}}, "filters.date_from", "VALIDATION_ERROR"),
        ({"filters": {"date_to": "2025-03-01"}}, "filters.date_from", "VALIDATION_ERROR"),
        ({"filters": {**MARCH, "status": "lost"}}, "filters.status", "VALIDATION_ERROR"),
        ({"filters": {**MARCH, "columns": ["secret"]}}, "filters.columns[0]", "VALIDATION_ERROR"),
        ({"filters": {**MARCH, "user_id": "mallory"}}, "filters.user_id", "VALIDATION_ERROR"),
        ({"callback_url": "not a url"}, "callback_url", "CALLBACK_URL_REFUSED"),
        ({"callback_url": "http://hooks.example.com/in"}, "callback_url", "CALLBACK_URL_REFUSED"),
        ({"callback_url": "https://internal.example.com/in"}, "callback_url", "CALLBACK_URL_REFUSED"),
    ],
)
def test_an_invalid_request_names_its_field_and_stores_starts_and_queues_nothing(
    request_fields: dict[str, Any], field: str, code: str
) -> None:
    w = world()
    w.resolve.hosts["internal.example.com"] = ["10.0.0.7"]

    with pytest.raises(InvalidRequest) as refused:
        submit(w, spec(**request_fields))

    assert (refused.value.field, refused.value.code) == (field, code)
    assert refused.value.message
    assert (w.tasks.tasks, w.queue.sent, w.lifecycle.started) == ({}, [], {})
    assert w.tasks.active_count("alice") == 0


def test_a_reversed_range_says_so_and_an_unknown_type_lists_the_known_ones() -> None:
    w = world()
    with pytest.raises(InvalidRequest, match="date_from must not be after date_to"):
        submit(w, spec(filters={"date_from": "2025-03-31", "date_to": "2025-03-01"}))
    with pytest.raises(InvalidRequest, match="orders"):
        submit(w, spec(export_type="invoices"))


def test_a_format_the_type_does_not_produce_is_refused() -> None:
    class CsvOnly(NumbersExport):
        formats = (ExportFormat.CSV,)

    w = service_world(CsvOnly())
    with pytest.raises(InvalidRequest) as refused:
        submit_export(ExportSpec(export_type="numbers", format=ExportFormat.XLSX), Caller("alice"), w.api)
    assert refused.value.field == "format"
    assert w.tasks.tasks == {}


# --- dedup -------------------------------------------------------------------------------------


def test_an_identical_active_request_returns_the_same_task() -> None:
    w = world()
    first = submit(w)
    reordered = {"date_to": "2025-03-31", "date_from": "2025-03-30T00:00:00"}

    second = submit(w, spec(filters=reordered))

    assert (second.task.task_id, second.deduplicated) == (first.task.task_id, True)
    assert len(w.tasks.tasks) == 1 and len(w.queue.sent) == 1 and len(w.lifecycle.started) == 1
    assert w.tasks.active_count("alice") == 1
    assert w.counts(Metric.DEDUPLICATED) == 1


def test_other_users_formats_filters_or_timeouts_are_not_merged() -> None:
    w = world()
    ids = {
        submit(w).task.task_id,
        submit(w, user="bob").task.task_id,
        submit(w, spec(format=ExportFormat.XLSX)).task.task_id,
        submit(w, spec(filters={**MARCH, "status": "paid"})).task.task_id,
        submit(w, spec(timeout_sec=3600)).task.task_id,
        submit(w, spec(csv_bom=True)).task.task_id,
    }
    assert len(ids) == len(w.tasks.tasks) == 6
    assert w.counts(Metric.DEDUPLICATED) == 0


def test_a_request_differing_only_in_priority_is_merged_into_the_task() -> None:
    w = world()
    first = submit(w, spec(timeout_sec=3600))
    again = submit(w, spec(timeout_sec=3600, priority=4))  # the same lane
    assert (again.deduplicated, again.task.task_id, again.task.priority) == (True, first.task.task_id, 4)
    assert len(w.queue.sent) == 1  # not promoted into another lane: no second message


def test_once_the_first_task_ended_an_identical_request_makes_a_new_task() -> None:
    w = world()
    first = submit(w)
    cancel_export(first.task.task_id, "alice", w.api)

    second = submit(w)

    assert second.task.task_id != first.task.task_id and not second.deduplicated
    assert w.tasks.get(second.task.task_id).status is TaskStatus.PENDING
    assert second.task.dedup_key is not None
    assert w.tasks.dedup[second.task.dedup_key][0] == second.task.task_id


def test_a_dedup_marker_outliving_its_ended_holder_is_taken_over() -> None:
    w = world()
    first = submit(w)
    cancelled = cancel_export(first.task.task_id, "alice", w.api)
    assert cancelled.dedup_key is not None
    w.tasks.dedup[cancelled.dedup_key] = (first.task.task_id, first.task.deadline)  # its release was lost

    second = submit(w)

    assert second.task.task_id != first.task.task_id and not second.deduplicated
    assert second.task.dedup_key is not None
    assert w.tasks.dedup[second.task.dedup_key][0] == second.task.task_id


def test_a_merged_request_loses_nothing_it_asked_for_and_promotes_the_task() -> None:
    w = world()
    first = submit(w, spec(priority=9, callback_url="https://a.example.com/hook"))

    second = submit(w, spec(priority=1, callback_url="https://b.example.com/hook"))

    assert (second.deduplicated, second.task.task_id) == (True, first.task.task_id)
    stored = w.tasks.get(first.task.task_id)
    assert stored.priority == 1
    assert [s.url for s in stored.subscribers] == ["https://a.example.com/hook", "https://b.example.com/hook"]
    assert [(m.priority, delay) for m, delay in w.queue.sent] == [(9, 0), (1, 0)]  # queued again in the high lane
    assert w.queue.depths() == {"high": 1, "normal": 0, "low": 1}
    assert w.counts(Metric.PROMOTED) == 1 and w.counts(Metric.DEDUPLICATED) == 1


def test_a_merge_into_a_running_task_is_not_queued_again() -> None:
    w = world()
    first = submit(w, spec(priority=9))
    w.tasks.update(first.task, claim(first.task, w.clock(), LEASE))

    merged = submit(w, spec(priority=1))

    assert merged.task.priority == 1 and merged.task.status is TaskStatus.RUNNING
    assert len(w.queue.sent) == 1


# --- backpressure and quotas --------------------------------------------------------------------


def test_a_full_backlog_refuses_with_a_retry_after_and_creates_nothing() -> None:
    w = world(max_backlog=3)
    for n in range(3):
        submit(w, days(n))

    with pytest.raises(Overloaded) as refused:
        submit(w)

    assert refused.value.code == "BACKLOG_FULL" and refused.value.details["retry_after"] > 0
    assert len(w.tasks.tasks) == 3 and len(w.queue.sent) == 3
    assert w.counts(Metric.REJECTED) == 1


def test_a_user_at_quota_is_refused_until_a_task_ends() -> None:
    w = world(max_active_tasks_per_user=2)
    first, _ = submit(w, days(0)), submit(w, days(1))

    with pytest.raises(Overloaded) as refused:
        submit(w, days(2))
    assert refused.value.code == "QUOTA_EXCEEDED" and refused.value.details["retry_after"] > 0
    assert len(w.tasks.tasks) == 2 and len(w.queue.sent) == 2
    assert w.counts(Metric.REJECTED) == 1
    assert submit(w, days(2), user="bob").task.user_id == "bob"  # quotas are per user

    cancel_export(first.task.task_id, "alice", w.api)
    assert submit(w, days(2)).task.status is TaskStatus.PENDING


def test_an_unreadable_queue_depth_lets_the_submit_through() -> None:
    class Depthless(BrokenQueue):
        def depths(self) -> dict[str, int]:
            raise ExportsError("get queue attributes: AccessDenied")

    queue = Depthless()
    queue.broken = False
    w = service_world(OrdersExport(FakeOrdersReader([])), queue=queue, max_backlog=1)
    submit(w, days(0))
    submit(w, days(1))
    assert len(w.queue.sent) == 2


# --- a workflow or queue that refuses -----------------------------------------------------------


def test_a_lifecycle_that_will_not_start_fails_the_task_instead_of_stranding_it() -> None:
    w = world()
    w.lifecycle.fail_start = True

    with pytest.raises(ServiceUnavailable):
        submit(w)

    (task,) = w.tasks.tasks.values()
    assert (task.status, task.error.code) == (TaskStatus.FAILED, "SCHEDULE_FAILED")
    assert w.queue.sent == []
    assert w.tasks.active_count("alice") == 0 and w.tasks.dedup == {}
    assert w.counts(Metric.ENQUEUE_FAILED) == 1 and w.counts(Metric.SUBMITTED) == 0
    w.lifecycle.fail_start = False
    assert not submit(w).deduplicated  # the failed task holds nothing: a resubmit starts afresh


def test_a_failed_enqueue_fails_the_task_instead_of_stranding_it() -> None:
    w = service_world(OrdersExport(FakeOrdersReader([])), queue=BrokenQueue())

    with pytest.raises(ServiceUnavailable):
        submit(w)

    (task,) = w.tasks.tasks.values()
    assert (task.status, task.error.code) == (TaskStatus.FAILED, "ENQUEUE_FAILED")
    assert task.task_id in w.lifecycle.started
    assert w.tasks.active_count("alice") == 0 and w.tasks.dedup == {}
    assert w.counts(Metric.ENQUEUE_FAILED) == 1


# --- estimates ----------------------------------------------------------------------------------


def test_the_estimate_follows_measured_throughput_the_tasks_size_and_the_work_queued_ahead() -> None:
    w = world()
    # 100 rows/s, 100 rows per day
    w.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)
    small = submit(w, spec(priority=1))  # 2 days
    large = submit(w, spec(priority=1, filters={"date_from": "2025-01-01", "date_to": "2025-01-31"}))
    for n in range(6):
        submit(w, days(n))  # 1 + 2 + ... + 6 = 21 s of work in the normal lane
    behind_six = submit(w, spec(filters={"date_from": "2025-02-01", "date_to": "2025-02-02"}))

    assert small.estimated_completion_sec == 2  # its own 200 rows at 100 rows/s, nothing ahead
    # The small one's 2 s ahead, at an unmeasured lane's cautious 1 s a second; then 3,100 rows.
    assert large.estimated_completion_sec == 33
    # 21 s of work ahead at 1 s a second (two workers at half an estimated second a second until
    # their drain is measured), then its own 2 s.
    assert behind_six.estimated_completion_sec == 23
    assert w.capacity.queued[lane_pool("normal")] == 21 + 2 and w.capacity.tasks[lane_pool("normal")] == 7
    stored = w.tasks.get(behind_six.task.task_id)
    assert (stored.queued_work_sec, stored.queued_in) == (2.0, (lane_pool("normal"),))


def test_a_task_records_the_rows_expected_only_when_measured_or_known() -> None:
    w = world()
    unmeasured = submit(w, days(1)).task
    w.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)  # 100 rows per day
    measured = submit(w, days(3)).task  # 4 days

    assert unmeasured.estimated_rows is None  # the defaults are no measure of this type
    assert measured.estimated_rows == 400
    assert w.tasks.get(measured.task_id).estimated_rows == 400


def test_a_lanes_measured_drain_turns_its_queued_work_into_the_wait() -> None:
    w = world()
    w.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)
    for n in range(3):
        submit(w, days(n))  # 6 s of work queued in the normal lane
    # The lane's workers took up 4 estimated seconds a second: runs are faster than estimated.
    w.capacity.drains[lane_pool("normal")] = Drain(work_sec=4.0, elapsed_sec=1.0, samples=10)

    queued = submit(w, spec(filters={"date_from": "2025-02-10", "date_to": "2025-02-11"}))

    # 6 s ahead at 4 a second: 1.5 s; then its own 2 s.
    assert queued.estimated_completion_sec == 4


def test_an_export_that_the_queue_ahead_would_make_late_is_refused_with_its_estimate() -> None:
    w = world()
    w.throughput.record(throughput_key("orders", "csv"), rows=1000, seconds=10.0, days=10)
    for n in range(3):
        submit(w, days(n))  # 6 s of work queued in the normal lane
    w.capacity.drains[lane_pool("normal")] = Drain(work_sec=1.0, elapsed_sec=100.0, samples=10)  # the lane got slow
    queued_before = dict(w.capacity.queued)

    with pytest.raises(Overloaded) as refused:
        submit(w, spec(timeout_sec=60, filters={"date_from": "2025-02-10", "date_to": "2025-02-11"}))
    alone = submit(w, spec(priority=1, timeout_sec=60, filters={"date_from": "2025-02-01", "date_to": "2025-02-02"}))

    error = refused.value
    assert error.code == "WOULD_TIME_OUT" and error.estimate is not None
    # 6 s ahead at 0.01 a second: 600 s to wait, then its own 2 s.
    assert (error.estimate.estimated_start_sec, error.estimate.estimated_completion_sec) == (600, 602)
    assert error.estimate.timeout_sec == 60
    # It fits once at most 0.01 x (0.6 x 60 - 2) = 0.34 s is queued: after 566 s.
    assert error.retry_after == 566
    assert w.capacity.queued[lane_pool("normal")] == queued_before[lane_pool("normal")]  # nothing reserved
    assert len([t for t in w.tasks.tasks.values() if t.timeout_sec == 60 and t.priority == 5]) == 0
    assert alone.estimated_completion_sec == 2  # the high lane has its own workers, and nothing queued
    assert w.counts(Metric.CAPACITY_REFUSED) == 1


def test_work_that_never_starts_from_the_queue_gives_its_place_back() -> None:
    w = world()
    first = submit(w)
    merged = submit(w)  # identical: merged into the first, its reservation given back
    other = submit(w, days(3))
    cancel_export(other.task.task_id, "alice", w.api)

    assert merged.deduplicated
    assert w.capacity.tasks[lane_pool("normal")] == 1
    assert w.capacity.queued[lane_pool("normal")] == first.task.queued_work_sec


def test_unreadable_statistics_give_the_default_estimate_not_an_error() -> None:
    w = world()
    w.throughput.broken = True
    accepted = submit(w)
    assert accepted.estimated_completion_sec >= 1
    assert w.tasks.get(accepted.task.task_id).status is TaskStatus.PENDING


def test_a_resolver_is_asked_at_submit_for_the_callback_host() -> None:
    resolver = FakeResolver({"hooks.example.com": ["93.184.216.34"]})
    w = service_world(OrdersExport(FakeOrdersReader([])), resolve=resolver)
    accepted = submit(w, spec(callback_url="https://hooks.example.com/in"))
    assert resolver.lookups == ["hooks.example.com"]
    assert accepted.task.callback_url == "https://hooks.example.com/in"


def test_an_identical_active_export_answers_even_when_the_lane_is_full() -> None:
    w = world()
    first = submit(w, spec(timeout_sec=60))
    w.capacity.reserve(lane_pool("normal"), 10**6, limit_sec=10**7)  # the lane is a day behind

    again = submit(w, spec(timeout_sec=60, priority=4))  # identical, and asks for more priority

    assert again.deduplicated and again.task.task_id == first.task.task_id
    assert w.tasks.get(first.task.task_id).priority == 4
    assert w.counts(Metric.CAPACITY_REFUSED) == 1  # refused by the lane, answered by the active task
    with pytest.raises(Overloaded):
        submit(w, days(4, timeout_sec=60))  # another export is refused
