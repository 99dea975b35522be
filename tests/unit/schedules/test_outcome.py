"""A run's end on its schedule: the last run, failures in a row, the pause at the limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from exports.core.task import ExportFormat, ExportResult, Task, cancel, claim, complete, fail, new_task
from exports.schedules.model import PauseCode, Schedule, ScheduleState, StoredCaller
from exports.schedules.outcome import paused_by, record_run

NOW = datetime(2026, 12, 7, 7, tzinfo=UTC)


def schedule(**changes: object) -> Schedule:
    base = Schedule(
        schedule_id="sch_1",
        user_id="alice",
        caller=StoredCaller(user_id="alice"),
        export_type="orders",
        cron="0 8 * * 1",
        created_at=NOW,
        updated_at=NOW,
        anchor_at=NOW,
    )
    return base.model_copy(update=changes)


def run(number: int, ok: bool | None) -> Task:
    task = new_task(
        task_id=f"exp_{number}",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=NOW,
        retention=timedelta(hours=24),
        schedule_id="sch_1",
        scheduled_for=NOW + timedelta(days=7 * number),
    )
    running = claim(task, NOW, timedelta(minutes=2))
    if ok is None:
        return cancel(running, NOW, timedelta(hours=24))
    if ok:
        result = ExportResult(key="k", bytes=1, rows=3, sha256="0" * 64, content_type="text/csv", file_name="f.csv")
        return complete(running, result, NOW, timedelta(hours=24))
    return fail(running, "BOOM", "it failed", NOW, timedelta(hours=24))


def test_failures_count_up_a_completed_run_resets_them_a_cancelled_one_does_neither():
    after_one = record_run(schedule(), run(1, False), NOW, 5)
    assert after_one is not None
    after_two = record_run(after_one, run(2, False), NOW, 5)
    assert after_two is not None and after_two.consecutive_failures == 2

    cancelled = record_run(after_two, run(3, None), NOW, 5)
    assert cancelled is not None and cancelled.consecutive_failures == 2
    assert cancelled.last_run is not None and cancelled.last_run.status == "CANCELLED"

    completed = record_run(cancelled, run(4, True), NOW, 5)
    assert completed is not None and completed.consecutive_failures == 0
    assert completed.last_run is not None and completed.last_run.task_id == "exp_4"
    assert completed.last_run.scheduled_for == NOW + timedelta(days=28)


def test_the_limit_pauses_the_schedule_naming_the_run_that_did():
    current = schedule()
    for number in range(1, 4):
        recorded = record_run(current, run(number, False), NOW, 3)
        assert recorded is not None
        current = recorded

    assert current.state is ScheduleState.PAUSED
    assert current.paused_reason is not None and current.paused_reason.code is PauseCode.TOO_MANY_FAILURES
    assert paused_by(current, run(3, False)) == current.paused_reason
    assert paused_by(current, run(2, False)) is None


def test_a_run_seen_again_is_not_counted_twice():
    once = record_run(schedule(), run(1, False), NOW, 5)

    assert once is not None and record_run(once, run(1, False), NOW, 5) is None


def test_a_scheduled_run_always_has_work_for_the_callback_function_at_its_end():
    plain = new_task(
        task_id="exp_9",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=NOW,
        retention=timedelta(hours=24),
    )

    assert not plain.notifies_at_end
    assert plain.model_copy(update={"schedule_id": "sch_1"}).notifies_at_end
    assert new_task(
        task_id="exp_8",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=NOW,
        retention=timedelta(hours=24),
        callback_url="https://example.com/hook",
    ).notifies_at_end
