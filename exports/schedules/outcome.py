"""A run's end on its schedule: the last run, the consecutive failures, and the pause after
too many (pure: the caller stores the result)."""

from __future__ import annotations

from datetime import datetime

from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.schedules.feed import end_feed_run, record_latest
from exports.schedules.model import LastRun, PauseCode, PauseReason, Schedule, pause

# Ends that count as a failed run; CANCELLED (the owner's own act) neither counts nor resets.
FAILED_ENDS = frozenset({TaskStatus.FAILED, TaskStatus.TIMEOUT})


def record_run(schedule: Schedule, task: Task, now: datetime, max_failures: int) -> Schedule | None:
    """``schedule`` after its run ``task`` ended: the last run, the failures in a row (reset by
    a COMPLETED run), and PAUSED (``TOO_MANY_FAILURES``, naming the run) at ``max_failures``;
    a feed's watermark (exports.schedules.feed) and the latest file. None when this run is
    recorded already (the end is observed again on a retried delivery)."""
    if schedule.last_run is not None and schedule.last_run.task_id == task.task_id:
        return None
    failures = schedule.consecutive_failures
    if task.status is TaskStatus.COMPLETED:
        failures = 0
    elif task.status in FAILED_ENDS:
        failures += 1
    last_run = LastRun(
        task_id=task.task_id,
        scheduled_for=task.scheduled_for or task.created_at,
        status=task.status.value,
        finished_at=task.finished_at,
    )
    updated = schedule.model_copy(update={"last_run": last_run, "consecutive_failures": failures, "updated_at": now})
    updated = record_latest(end_feed_run(updated, task), task)
    if schedule.is_active and task.status in FAILED_ENDS and failures >= max_failures:
        reason = PauseReason(
            code=PauseCode.TOO_MANY_FAILURES,
            message=f"paused after {failures} failed runs in a row; resume it once the cause is fixed",
            task_id=task.task_id,
        )
        updated = pause(updated, reason, now)
    return updated


def paused_by(schedule: Schedule, task: Task) -> PauseReason | None:
    """The pause ``task``'s end caused, if it did (its callback says so)."""
    reason = schedule.paused_reason
    return reason if reason is not None and reason.task_id == task.task_id else None
