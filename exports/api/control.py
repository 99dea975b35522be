"""The owner's commands on a task: cancel it, or try it again as a new task."""

from __future__ import annotations

from exports.accepting.dependencies import ApiDependencies
from exports.accepting.submission import Submission, submit_export
from exports.api.queries import owned_task
from exports.core.caller import Caller
from exports.core.config.metrics import Metric
from exports.core.errors import ConditionFailed, TaskNotCancellable, TaskNotRetryable
from exports.core.spec import ExportSpec
from exports.core.status import RETRYABLE
from exports.core.task import Task, TaskSource, cancel
from exports.core.task_writes import end_task


def cancel_export(task_id: str, user_id: str, deps: ApiDependencies) -> Task:
    """CANCELLED from PENDING or RUNNING. A running worker sees it at its next progress write or
    upload part, aborts its upload and leaves no file."""
    for _ in range(3):
        task = owned_task(task_id, user_id, deps)
        if task.is_terminal:
            raise TaskNotCancellable(f"export task {task_id} already ended as {task.status.value}")
        try:
            ended = end_task(task, cancel(task, deps.clock(), deps.settings.retention), deps)
        except ConditionFailed:
            continue  # a worker moved it meanwhile: look again
        deps.metrics.add(Metric.CANCELLED)
        return ended
    raise ConditionFailed(f"task {task_id} kept changing; try again")


def retry_export(task_id: str, caller: Caller, deps: ApiDependencies) -> Submission:
    """A new task with the same parameters, linked by ``retry_of``. It is a new submission by
    ``caller``: the type must still be theirs to use, and it binds their token's values now (a
    user moved to another tenant cannot re-run an export of the former one)."""
    original = owned_task(task_id, caller.user_id, deps)
    if original.status not in RETRYABLE:
        raise TaskNotRetryable(
            f"export task {task_id} is {original.status.value}; only ended, unsuccessful tasks retry"
        )
    request = ExportSpec.of_task(original)
    return submit_export(request, caller, deps, source=TaskSource.RETRY, retry_of=original.task_id)
