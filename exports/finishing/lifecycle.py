"""What the lifecycle workflow asks of the service: watch a task, and expire it at its deadline.

The lifecycle function calls these two functions. The workflow itself is defined in
:mod:`exports.core.workflows`.
"""

from __future__ import annotations

from exports.core.config.metrics import Metric
from exports.core.errors import ConditionFailed, TaskNotFound
from exports.core.task import Task, time_out
from exports.core.task_writes import end_task
from exports.finishing.dependencies import LifecycleDependencies


def watch(task_id: str, token: str, deps: LifecycleDependencies) -> None:
    """Stores the workflow's task token on the task, so that whoever ends the task can report the
    end with it. If the task has already ended, reports the end at once."""
    task = deps.tasks.set_lifecycle_token(task_id, token)
    if task.is_terminal:
        deps.lifecycle.report_end(token, task)


def expire(task_id: str, deps: LifecycleDependencies) -> Task:
    """Times the task out at its deadline, unless the task ended first. Returns the ended task."""
    for _ in range(3):
        task = deps.tasks.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        if task.is_terminal:
            return task
        timed_out = time_out(task, deps.clock(), deps.settings.retention)
        try:
            end_task(task, timed_out, deps)
        except ConditionFailed:
            continue  # the task moved (PENDING -> RUNNING, say, or it ended): look again
        deps.metrics.add(Metric.TIMED_OUT)
        return timed_out
    raise ConditionFailed(f"task {task_id} kept changing while it timed out")
