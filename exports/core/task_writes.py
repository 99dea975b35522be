"""Every write of a task's state, in one place: moves between states (again on transient faults,
a move that already landed counting as done), endings, the hand-over of a long export to a new
invocation, progress and callback delivery states."""

from __future__ import annotations

import logging
from typing import Protocol

from exports.core.aws.retries import retry_transient
from exports.core.capacity import give_back_queue_places
from exports.core.errors import ConditionFailed, ExportsError, LostOwnership
from exports.core.ports import CapacityPools, Lifecycle, TaskRepository
from exports.core.task import Task

logger = logging.getLogger(__name__)


def move_task(before: Task, after: Task, deps: TaskStore) -> None:
    """Replace ``before`` with ``after`` (conditionally, as every state write), again on a
    transient fault.

    A try whose answer was lost may have been written all the same; the next try then fails its
    condition against ``after`` itself, which counts as success (so writing the same change
    twice is harmless). :class:`ConditionFailed` if someone else changed the task,
    :class:`RetryableError` once the tries are spent.
    """

    def write() -> None:
        try:
            deps.tasks.update(before, after)
        except ConditionFailed as conflict:
            if not _is_written(conflict.current, after):
                raise

    retry_transient(write)


def _is_written(current: dict[str, object] | None, after: Task) -> bool:
    """Whether the stored item is ``after``'s state change. Two writers starting from the same
    state reach the same status, sequence number and attempt; the times each one set (claim,
    lease, end) tell them apart."""
    if not current:
        return False
    return _change(Task.model_validate(current)) == _change(after)


def _change(task: Task) -> tuple[object, ...]:
    return (task.status, task.status_seq, task.attempt, task.started_at, task.lease_expires_at, task.finished_at)


def end_task(before: Task, after: Task, deps: TaskEnding) -> Task:
    """Write the terminal ``after`` (conditionally on ``before``, again on transient faults),
    give back the queue place of a task that never started, then tell the workflow.

    Raises :class:`ConditionFailed` if someone else changed the task first, and
    :class:`RetryableError` if the write kept failing. If telling the workflow fails the task
    stays ended: the workflow picks the outcome up at the deadline.
    """
    move_task(before, after, deps)
    give_back_queue_places(before, deps)
    try:
        deps.tasks.release_dedup(after)
    except ExportsError:
        # Harmless: a marker whose holder has ended is taken over by the next identical submit.
        logger.warning("could not release the dedup key", exc_info=True)
    # From here on the task has ended whatever happens: nothing may raise, or a caller would
    # take the ended task for one that still needs ending (and e.g. retry a finished export).
    try:
        ended = _as_stored(after, deps)
        token = after.lifecycle_token or ended.lifecycle_token
        if token:
            deps.lifecycle.report_end(token, ended)
    except ExportsError:
        logger.warning("could not report the task's end; the deadline will", exc_info=True)
    return after


def _as_stored(after: Task, deps: TaskEnding) -> Task:
    """The ended task as stored now, not as its ender held it: an identical request merged in
    while it ran (or between the worker's read and its claim) added a subscriber the ender never
    saw, and the workflow delivers callbacks only if the outcome names one. No merge can follow
    the end (a merge needs the status it read), so this read is final; it also finds a token
    the workflow stored after the ender read the task. Read again on transient faults; if it
    still fails, ``after`` is reported (right unless a merge raced the end) rather than nothing,
    which would leave the outcome to the deadline."""
    try:
        stored = retry_transient(lambda: deps.tasks.get(after.task_id))
    except ExportsError:
        logger.warning("could not read the ended task; reporting it as the ender held it", exc_info=True)
        return after
    return stored if stored is not None and stored.status is after.status else after


def write_progress(task: Task, deps: TaskStore) -> None:
    """Store the RUNNING ``task``'s progress and renewed lease; :class:`LostOwnership` if it is no
    longer this attempt's (cancelled, timed out, taken over)."""
    try:
        deps.tasks.record_progress(task)
    except ConditionFailed as error:
        raise LostOwnership(f"task {task.task_id} is no longer ours") from error


def write_partition_progress(before: Task, after: Task, deps: TaskStore) -> bool:
    """Store a split export's progress (per-partition counts) if those counts are still
    ``before``'s; False when another partition wrote first (read the task again and retry)."""
    try:
        deps.tasks.update_partitions(before, after)
    except ConditionFailed:
        return False
    return True


def write_callbacks(task: Task, deps: TaskStore) -> None:
    """Store the ended ``task``'s callback delivery states. A terminal task's status and attempt
    never change, so a conflict means the record is gone (expired): nothing left to record."""
    try:
        deps.tasks.record_callbacks(task)
    except ConditionFailed:
        return


class TaskStore(Protocol):
    """What a write of a task's state reads: the task records."""

    @property
    def tasks(self) -> TaskRepository:
        """The task records."""
        ...


class TaskEnding(TaskStore, Protocol):
    """What ending a task reads: the task records, the workflow told of the end, and the
    capacity pools a task that never started gives its place back to."""

    @property
    def lifecycle(self) -> Lifecycle:
        """The task's lifecycle workflow."""
        ...

    @property
    def capacity(self) -> CapacityPools:
        """The capacity pools (exports.core.capacity_rules)."""
        ...
