"""Retrying the AWS calls that must not be lost to a transient fault (throttling, a timeout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from exports.config import Transient
from exports.domain.errors import ConditionFailed, RetryableError
from exports.domain.task import Task
from exports.services.dependencies import Dependencies

T = TypeVar("T")


def retry_transient(action: Callable[[], T]) -> T:
    """``action()``, tried again on :class:`RetryableError` with jittered exponential backoff,
    :attr:`Transient.ATTEMPTS` times in all; the last error propagates."""
    retrying = Retrying(
        retry=retry_if_exception_type(RetryableError),
        stop=stop_after_attempt(Transient.ATTEMPTS),
        wait=wait_random_exponential(multiplier=Transient.BASE_DELAY_SEC, max=Transient.MAX_DELAY_SEC),
        reraise=True,
    )
    return retrying(action)


def write_task(before: Task, after: Task, deps: Dependencies) -> None:
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
