"""The steps the fan-out workflow invokes (:func:`exports.core.workflows.fan_out_definition`, through
the worker function): write one partition, assemble the file, abandon a split attempt; and what
each ends the task with (through :mod:`exports.running.endings`).
"""

from __future__ import annotations

from exports.core.errors import ExportFailed, LostOwnership, SourceQueryTimeout
from exports.core.ports import RemainingMs
from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.core.workflows import PartitionStatus
from exports.running.attempt_files import AttemptFiles
from exports.running.dependencies import WorkerDependencies
from exports.running.endings import Outcome, Written, end_failed, end_timed_out, retry_or_fail, settle
from exports.running.fan_out.assemble import assemble_file
from exports.running.fan_out.partition import PartitionSourceBusy, write_partition
from exports.running.fan_out.plan import PLAN, FanOutPlan, clean_up

FAN_OUT_FAILED = "FAN_OUT_FAILED"


def partition_step(
    task_id: str, attempt: int, partition: int, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> str:
    """Write one partition of a split export; what came of it, as the fan-out workflow reads it
    (:class:`exports.core.workflows.PartitionStatus`). Waiting for a source slot and a task that
    stopped are results, not errors; a final error ends the task FAILED with its code (the
    other partitions then stop between parts); a transient one propagates, for the workflow to
    try the partition again."""
    try:
        write_partition(task_id, attempt, partition, deps, remaining_ms)
    except PartitionSourceBusy:
        return PartitionStatus.BUSY
    except LostOwnership:
        return PartitionStatus.STOPPED
    except ExportFailed as error:
        task = deps.tasks.get(task_id)
        if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
            return PartitionStatus.STOPPED
        if isinstance(error, SourceQueryTimeout) and deps.clock() >= task.deadline:
            return PartitionStatus.STOPPED  # the deadline: the assembler times the task out
        outcome = end_failed(task, error.code, f"partition {partition}: {error.message}", deps)
        return PartitionStatus.FAILED if outcome is Outcome.FAILED else PartitionStatus.STOPPED
    return PartitionStatus.WRITTEN


def finish_fan_out(task_id: str, attempt: int, deps: WorkerDependencies) -> Outcome:
    """Assemble a split export's file and end its task COMPLETED (the fan-out workflow's last
    step); the file is removed again if the task ended meanwhile. A task that stopped while
    its partitions ran (so some staged nothing) is cleaned up instead: it is no longer this
    attempt's (LOST_OWNERSHIP; FAILED when a partition's final error ended it), or it reached
    its deadline and times out now."""
    task = deps.tasks.get(task_id)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        discard_split_attempt(task_id, attempt, deps)
        failed = task is not None and task.status is TaskStatus.FAILED and task.attempt == attempt
        return Outcome.FAILED if failed else Outcome.LOST_OWNERSHIP  # FAILED: a partition failed it
    if deps.clock() >= task.deadline:
        discard_split_attempt(task_id, attempt, deps)
        return end_timed_out(task, deps)
    try:
        task, result = assemble_file(task_id, attempt, deps)
    except LostOwnership:  # cancelled or taken over while assembling: a stop, not a fault
        discard_split_attempt(task_id, attempt, deps)
        return Outcome.LOST_OWNERSHIP
    return settle(Written(result), task, deps)


def abandon_fan_out(task_id: str, attempt: int, error: str, deps: WorkerDependencies) -> Outcome:
    """A split export stopped (cancelled, timed out) or failed: no upload and no staging stay
    behind, and a task still running this attempt is retried whole or failed with ``error``."""
    task = discard_split_attempt(task_id, attempt, deps)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        return Outcome.LOST_OWNERSHIP
    if deps.clock() >= task.deadline:
        # The partitions stopped at the deadline before the lifecycle's timer ended the task.
        return end_timed_out(task, deps)
    return retry_or_fail(task, FAN_OUT_FAILED, f"a partition of the split export failed: {error}", deps)


def discard_split_attempt(task_id: str, attempt: int, deps: WorkerDependencies) -> Task | None:
    """Abort the attempt's upload and delete its staging (and a file completed just before a
    failure); the task as it is now, or None if it is gone."""
    task = deps.tasks.get(task_id)
    if task is None:
        return None
    files = AttemptFiles(task.model_copy(update={"attempt": attempt}), deps.results)
    blob = files.staged(PLAN)
    if blob is not None:
        clean_up(files, FanOutPlan.from_json(blob))
    return task
