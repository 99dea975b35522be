"""process_task and process_message on fakes: claim, complete, retries with backoff, leases,
deadlines, cancellation, hot-key and source-slot deferrals, and failed receipts."""

from typing import Any

import pytest

from examples.demo_plugins.orders import OrdersExport
from exports.accepting.admission_rules import throughput_key
from exports.api.control import cancel_export
from exports.core.capacity_rules import Drain, lane_pool
from exports.core.config.metrics import Metric
from exports.core.errors import ExportsError, RetryableError, TaskNotFound
from exports.core.ports import Receipt, TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.running.endings import NO_SOURCE, Outcome
from exports.running.messages import process_message, process_task
from tests.unit.builders import make_order, make_task
from tests.unit.export_fakes import NumbersExport, numbers_in
from tests.unit.fakes import FakeOrdersReader
from tests.unit.service_fakes import LimitedNumbers, ServiceWorld, service_world

NORMAL_QUEUE = "arn:aws:sqs:us-east-1:123456789012:exports-tasks-normal"


def put(w: ServiceWorld, n: int = 1, export_type: str = "numbers", **fields: Any) -> Task:
    """A PENDING task ``n`` created now, admitted like a submit does."""
    now = w.clock()
    fields = {"filters": {}, "created_at": now, "expires_at": now + w.worker.settings.retention, **fields}
    task = make_task(task_id=f"exp_01JNCS6Z0000000000000000{n:02d}", export_type=export_type, **fields)
    w.tasks.create(task, max_active=100)
    return task


def message(task: Task, **fields: Any) -> TaskMessage:
    return TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority, **fields)


def flaky(failures: int) -> NumbersExport:
    """Numbered rows whose source is throttled ``failures`` times before it works."""
    left = [failures]

    def throttled(first: int) -> None:
        if left[0] > 0:
            left[0] -= 1
            raise RetryableError("source throttled")

    return NumbersExport(before_page=throttled)


def test_a_task_is_claimed_exported_and_completed() -> None:
    w = service_world()
    task = put(w)
    w.clock.advance(3)

    assert process_task(message(task), w.worker) is Outcome.COMPLETED

    done = w.tasks.get(task.task_id)
    assert (done.status, done.attempt, done.progress, done.rows_written) == (TaskStatus.COMPLETED, 1, 100, 100)
    body = w.files.objects[done.result.key]["body"]
    assert body.startswith(b"N,Day,Amount,Text\r\n") and body.count(b"\r\n") == 101
    assert done.result.bytes == len(body)
    assert w.tasks.active_count("alice") == 0
    assert (w.counts(Metric.STARTED), w.counts(Metric.COMPLETED), w.counts(Metric.ROWS_EXPORTED)) == (1, 1, 100)
    assert w.throughput.get(throughput_key("numbers", done.format.value)).rows_per_task == 100
    assert w.files.uploads == {}


def test_a_duplicate_delivery_is_acknowledged_without_a_second_export() -> None:
    w = service_world()
    task = put(w)
    process_task(message(task), w.worker)
    first = w.tasks.get(task.task_id)

    assert process_task(message(task), w.worker) is Outcome.SKIPPED

    assert w.tasks.get(task.task_id) == first
    assert len(w.files.objects) == 1 and w.counts(Metric.DUPLICATE_DELIVERY) == 1


def test_the_worker_tells_the_workflow_when_the_task_ends() -> None:
    w = service_world()
    task = put(w)
    w.tasks.set_lifecycle_token(task.task_id, "token-1")
    process_task(message(task), w.worker)
    assert w.lifecycle.reports == [("token-1", {"status": "COMPLETED", "has_callback": False, "has_deliveries": False})]


# --- retries ------------------------------------------------------------------------------------


def test_a_transient_failure_requeues_with_backoff_until_the_budget_is_spent() -> None:
    w = service_world(flaky(10), random=0.5)
    task = put(w, max_retries=2)

    assert process_task(message(task), w.worker) is Outcome.RETRY_SCHEDULED
    again = w.tasks.get(task.task_id)
    assert (again.status, again.retry_count, again.error.code) == (TaskStatus.PENDING, 1, "TRANSIENT_ERROR")
    assert process_task(message(task), w.worker) is Outcome.RETRY_SCHEDULED
    assert process_task(message(task), w.worker) is Outcome.FAILED

    # Equal jitter at 0.5: three quarters of 15 s, then of 15 * 4 s.
    assert w.queue.sent == [(message(task), 11), (message(task), 45)]
    final = w.tasks.get(task.task_id)
    assert (final.status, final.retry_count, final.attempt, final.error.code) == (
        TaskStatus.FAILED,
        2,
        3,
        "TRANSIENT_ERROR",
    )
    assert w.files.objects == {} and w.files.uploads == {}
    assert (w.counts(Metric.RETRIED), w.counts(Metric.FAILED)) == (2, 1)
    assert w.tasks.active_count("alice") == 0
    # The failure is counted by its code and its type's source (a plugin type declares none).
    assert w.metrics.dimensions == [(Metric.FAILED, {"error_code": "TRANSIENT_ERROR", "source": NO_SOURCE})]


def test_a_retry_that_succeeds_completes_the_task() -> None:
    w = service_world(flaky(1))
    task = put(w)
    assert process_task(message(task), w.worker) is Outcome.RETRY_SCHEDULED
    assert process_task(message(task), w.worker) is Outcome.COMPLETED
    done = w.tasks.get(task.task_id)
    assert (done.status, done.retry_count, done.attempt, done.result.rows) == (TaskStatus.COMPLETED, 1, 2, 100)


def test_a_crash_in_the_export_is_retried_as_an_internal_error() -> None:
    def crash(first: int) -> None:
        raise RuntimeError("lost a thread")

    w = service_world(NumbersExport(before_page=crash))
    task = put(w, max_retries=1)
    assert process_task(message(task), w.worker) is Outcome.RETRY_SCHEDULED
    assert process_task(message(task), w.worker) is Outcome.FAILED
    failed = w.tasks.get(task.task_id)
    assert (failed.error.code, failed.retry_count) == ("INTERNAL_ERROR", 1)


@pytest.mark.parametrize(
    "error",
    [
        # What a value the connection's encoding could not hold raised (issue 36), retried 3 times.
        UnicodeEncodeError("shift_jis", "\U0001f600", 0, 1, "illegal multibyte sequence"),
        TypeError("'<' not supported between instances of 'str' and 'int'"),
        ZeroDivisionError("division by zero"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_an_error_a_value_raises_fails_the_task_at_once_naming_it_in_the_log(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    def crash(first: int) -> None:
        raise error

    w = service_world(NumbersExport(before_page=crash))
    task = put(w, max_retries=3)
    assert process_task(message(task), w.worker) is Outcome.FAILED

    failed = w.tasks.get(task.task_id)
    assert (failed.status, failed.error.code, failed.retry_count) == (TaskStatus.FAILED, "VALUE_ERROR", 0)
    assert type(error).__name__ not in failed.error.message and task.task_id in failed.error.message
    assert w.queue.sent == []
    logged = next(record for record in caplog.records if record.getMessage() == "export failed")
    assert type(error).__name__ in logged.detail and logged.task_id == task.task_id  # type: ignore[attr-defined]


def test_stored_filters_that_no_longer_validate_fail_the_task_without_a_retry() -> None:
    w = service_world(OrdersExport(FakeOrdersReader([])))
    task = put(w, export_type="orders", filters={"date_from": "x"})
    assert process_task(message(task), w.worker) is Outcome.FAILED
    failed = w.tasks.get(task.task_id)
    assert (failed.status, failed.error.code, failed.retry_count) == (TaskStatus.FAILED, "INVALID_FILTERS", 0)
    assert w.queue.sent == []


# --- leases, deadlines, cancellation ------------------------------------------------------------


def test_a_running_task_under_a_live_lease_is_not_run_twice() -> None:
    w = service_world()
    task = put(w)
    running = task.model_copy(
        update={"status": TaskStatus.RUNNING, "attempt": 1, "lease_expires_at": w.clock() + w.worker.settings.lease}
    )
    w.tasks.tasks[task.task_id] = running
    assert process_task(message(task), w.worker) is Outcome.SKIPPED
    assert w.tasks.get(task.task_id) == running and w.files.objects == {}


def test_a_task_whose_worker_died_is_reclaimed_after_its_lease() -> None:
    w = service_world()
    task = put(w)
    w.tasks.tasks[task.task_id] = task.model_copy(
        update={"status": TaskStatus.RUNNING, "attempt": 1, "lease_expires_at": w.clock()}
    )
    w.clock.advance(1)
    assert process_task(message(task), w.worker) is Outcome.COMPLETED
    assert w.tasks.get(task.task_id).attempt == 2


def test_a_task_past_its_deadline_times_out_instead_of_running() -> None:
    w = service_world()
    task = put(w, timeout_sec=300)
    w.clock.advance(300)
    assert process_task(message(task), w.worker) is Outcome.TIMED_OUT
    stored = w.tasks.get(task.task_id)
    assert (stored.status, stored.error.code) == (TaskStatus.TIMEOUT, "DEADLINE_PASSED")
    assert w.files.objects == {} and w.counts(Metric.TIMED_OUT) == 1 and w.counts(Metric.STARTED) == 0


def admitted(w: ServiceWorld, n: int, work_sec: float, timeout_sec: int = 300) -> Task:
    """A PENDING task admitted by deadline: its ``work_sec`` queued in the normal lane."""
    w.capacity.reserve(lane_pool("normal"), work_sec, limit_sec=10**6)
    return put(
        w,
        n,
        timeout_sec=timeout_sec,
        queued_work_sec=work_sec,
        queued_in=(lane_pool("normal"),),
        queued_work_measured=True,
    )


def test_a_first_start_takes_the_tasks_place_and_measures_the_lanes_drain() -> None:
    w = service_world()
    tasks = [admitted(w, n, work_sec=2.0) for n in range(1, 4)]  # queued at their type's measured runs

    for task in tasks:
        assert process_task(message(task), w.worker) is Outcome.COMPLETED
        w.clock.advance(1)

    assert w.capacity.queued[lane_pool("normal")] == 0 and w.capacity.tasks[lane_pool("normal")] == 0
    # The second and third started with work still queued behind the one before: 2 s a second.
    assert w.capacity.drains[lane_pool("normal")] == Drain(work_sec=2.0, elapsed_sec=1.0, samples=2)


def test_a_start_of_work_queued_at_the_defaults_guess_measures_no_drain() -> None:
    w = service_world()
    tasks = [put(w, n, queued_work_sec=5.0, queued_in=(lane_pool("normal"),)) for n in range(1, 4)]
    for _ in range(3):
        w.capacity.reserve(lane_pool("normal"), 5.0, limit_sec=10**6)
    for task in tasks:
        assert process_task(message(task), w.worker) is Outcome.COMPLETED
        w.clock.advance(1)
    assert lane_pool("normal") not in w.capacity.drains and w.capacity.queued[lane_pool("normal")] == 0


def test_a_task_too_late_to_finish_is_not_begun_and_gives_its_place_back() -> None:
    w = service_world()
    task = admitted(w, 1, work_sec=20.0, timeout_sec=60)
    w.clock.advance(45)  # 15 s left, a 20-second run

    assert process_task(message(task), w.worker) is Outcome.TIMED_OUT

    stored = w.tasks.get(task.task_id)
    assert (stored.status, stored.error.code) == (TaskStatus.TIMEOUT, "DEADLINE_UNREACHABLE")
    assert stored.error.message.startswith("the export could no longer start in time to finish within its")
    assert w.files.objects == {} and w.files.uploads == {} and w.counts(Metric.STARTED) == 0
    assert w.counts(Metric.NOT_BEGUN) == 1
    assert w.capacity.queued[lane_pool("normal")] == 0 and w.capacity.tasks[lane_pool("normal")] == 0


def test_a_task_whose_run_never_fitted_its_deadline_is_tried_all_the_same() -> None:
    w = service_world()
    task = admitted(w, 1, work_sec=90.0, timeout_sec=60)
    w.clock.advance(30)

    assert process_task(message(task), w.worker) is Outcome.COMPLETED
    assert w.counts(Metric.NOT_BEGUN) == 0


def test_a_cancelled_task_is_not_run() -> None:
    w = service_world()
    task = put(w)
    cancel_export(task.task_id, "alice", w.api)
    assert process_task(message(task), w.worker) is Outcome.SKIPPED
    assert w.files.objects == {} and w.files.uploads == {} and w.counts(Metric.STARTED) == 0


def test_a_task_cancelled_mid_export_leaves_no_object_and_no_upload() -> None:
    w = service_world()

    def cancel_at_page_five(first: int) -> None:
        w.clock.advance(3)  # time for a progress write between pages
        if first == 50:
            cancel_export(task.task_id, "alice", w.api)

    numbers_in(w.worker.registry).before_page = cancel_at_page_five
    task = put(w)

    assert process_task(message(task), w.worker) is Outcome.LOST_OWNERSHIP

    assert w.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert w.files.objects == {} and w.files.uploads == {}
    assert w.counts(Metric.COMPLETED) == 0


# --- hot keys and source slots ------------------------------------------------------------------


def test_a_hot_key_over_its_rate_defers_without_spending_retries() -> None:
    orders = [make_order(order_id=f"O{n}", order_day="2025-03-30") for n in range(3)]
    w = service_world(OrdersExport(FakeOrdersReader(orders)), hot_key_burst=2, hot_key_rate_per_minute=1)
    march = {"date_from": "2025-03-30", "date_to": "2025-03-31"}
    tasks = [put(w, n, "orders", filters=march, user_id=user) for n, user in enumerate(("u1", "u2", "u3"), 1)]

    outcomes = [process_task(message(task), w.worker) for task in tasks]

    assert outcomes == [Outcome.COMPLETED, Outcome.COMPLETED, Outcome.DEFERRED]
    deferred = w.tasks.get(tasks[2].task_id)
    assert (deferred.status, deferred.retry_count, deferred.attempt) == (TaskStatus.PENDING, 0, 0)
    assert w.queue.sent == [(message(tasks[2]), 60)]  # a token in 60 s, plus jitter, at most 60 s
    assert w.queue.depths()["normal"] == 0  # delayed, not waiting
    assert w.counts(Metric.DEFERRED) == 1
    other = put(w, 4, "orders", filters={"date_from": "2025-03-29", "date_to": "2025-03-31"}, user_id="u1")
    assert process_task(message(other), w.worker) is Outcome.COMPLETED  # another hot key is not affected


def test_a_source_at_its_limit_defers_the_task_and_a_run_holds_and_frees_its_slot() -> None:
    held: list[list[str]] = []
    w = service_world(LimitedNumbers(max_concurrent=1))
    numbers_in(w.worker.registry, "limited_numbers").before_page = lambda first: held.append(w.slots.holders("shop", 1))
    busy = w.slots.acquire("shop", 1, "exp_someone_else", w.clock())
    assert busy is not None  # the one slot was free
    task = put(w, export_type="limited_numbers")

    assert process_task(message(task), w.worker) is Outcome.DEFERRED

    assert w.tasks.get(task.task_id).status is TaskStatus.PENDING
    assert w.queue.sent == [(message(task), 23)]  # SOURCE_BUSY_DEFERRAL's 15 s, plus jitter
    assert w.counts(Metric.SOURCE_DEFERRED) == 1 and w.counts(Metric.DEFERRED) == 0

    w.slots.release(busy)
    assert process_task(message(task), w.worker) is Outcome.COMPLETED
    assert held and all(holders == [task.task_id] for holders in held)
    assert w.slots.holders("shop", 1) == []


def test_a_failed_run_frees_its_slot_too() -> None:
    def crash(first: int) -> None:
        raise RetryableError("throttled")

    w = service_world(LimitedNumbers(max_concurrent=1, before_page=crash))
    task = put(w, export_type="limited_numbers")
    assert process_task(message(task), w.worker) is Outcome.RETRY_SCHEDULED
    assert w.slots.holders("shop", 1) == [] and len(w.slots.released) == 1


# --- queue waits and receipts -----------------------------------------------------------------


def test_a_transient_fault_before_the_claim_sends_the_message_again_with_backoff() -> None:
    w = service_world(random=0.5)
    task = put(w)
    real_get = w.tasks.get
    faults = [RetryableError("read task: ThrottlingException")]

    def throttled(task_id: str) -> Task | None:
        if faults:
            raise faults.pop()
        return real_get(task_id)

    w.tasks.get = throttled  # type: ignore[method-assign]

    assert process_task(message(task), w.worker) is Outcome.REDELIVERED

    assert w.queue.sent == [(message(task, requeues=1), 11)]
    assert w.tasks.get(task.task_id).status is TaskStatus.PENDING
    assert w.counts(Metric.REDELIVERED) == 1


def test_a_failed_delivery_comes_back_after_the_retry_backoff() -> None:
    w = service_world(random=0.5)
    unknown = TaskMessage("exp_01JUNKJUNKJUNKJUNKJUNKJUNK", "numbers", 5)
    w.queue.send(unknown)
    receipt = w.queue.receive("normal")

    with pytest.raises(TaskNotFound):
        process_message(unknown, receipt, w.worker)

    assert w.queue.redelivered == [(receipt, 11)]


def test_when_the_last_delivery_fails_too_the_task_ends_failed() -> None:
    w = service_world()
    task = put(w)
    update = w.tasks.update

    def claims_refused(before: Task, after: Task) -> None:
        if after.status is TaskStatus.RUNNING:
            raise ExportsError("update task: AccessDeniedException")
        update(before, after)

    w.tasks.update = claims_refused  # type: ignore[method-assign]
    last = Receipt(NORMAL_QUEUE, "receipt-5", receive_count=5)

    with pytest.raises(ExportsError):
        process_message(message(task), last, w.worker)

    failed = w.tasks.get(task.task_id)
    assert (failed.status, failed.error.code) == (TaskStatus.FAILED, "PROCESSING_FAILED")
    assert w.queue.redelivered == []  # it goes to the DLQ
    assert w.tasks.active_count("alice") == 0 and w.counts(Metric.FAILED) == 1
