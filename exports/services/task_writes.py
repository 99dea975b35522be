"""Every write of a task's state, in one place: moves, endings, progress and the hand-over of a
long export to a new invocation."""

from __future__ import annotations

from exports.config import LongExports, Metric
from exports.domain.errors import ConditionFailed, LostOwnership
from exports.domain.task import Task, record_progress, suspend
from exports.ports import TaskMessage
from exports.services.dependencies import Dependencies


def continue_later(task: Task, rows: int, percent: int, deps: Dependencies) -> None:
    """Hand the RUNNING ``task`` to a new invocation: queue it (delayed a little), then make it
    PENDING again with its rows so far, spending no retry. :class:`LostOwnership` if the task
    changed meanwhile (then the queued message finds it not claimable and is dropped)."""
    deps.queue.send(
        TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority),
        delay_sec=LongExports.HANDOVER_DELAY_SEC,
    )
    now = deps.clock()
    current = record_progress(task, rows, percent, now, deps.settings.lease)
    try:
        deps.tasks.update(task, suspend(current))
    except ConditionFailed as error:
        raise LostOwnership(f"task {task.task_id} is no longer ours") from error
    deps.metrics.add(Metric.CONTINUED)
