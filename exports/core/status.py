"""Task states and the one transition table that owns every status change."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from exports.core.errors import InvalidTransition


class TaskStatus(StrEnum):
    """Lifecycle states of an export task."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"


TERMINAL: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED})
ACTIVE: Final = frozenset({TaskStatus.PENDING, TaskStatus.RUNNING})
# Ended without a file: the owner may ask for a new task with the same parameters.
RETRYABLE: Final = frozenset({TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED})

# Every allowed change of status. RUNNING -> RUNNING is a new worker reclaiming a task whose
# lease ran out; RUNNING -> PENDING sends a task back to the queue for a retry.
TRANSITIONS: Final[dict[TaskStatus, frozenset[TaskStatus]]] = {
    TaskStatus.PENDING: frozenset({TaskStatus.RUNNING, TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED}),
    TaskStatus.RUNNING: frozenset(
        {
            TaskStatus.RUNNING,
            TaskStatus.PENDING,
            TaskStatus.COMPLETED,
            TaskStatus.FAILED,
            TaskStatus.TIMEOUT,
            TaskStatus.CANCELLED,
        }
    ),
    **{terminal: frozenset() for terminal in TERMINAL},
}


def can_transition(current: TaskStatus, target: TaskStatus) -> bool:
    """Whether the table allows ``current`` -> ``target``."""
    return target in TRANSITIONS[current]


def check_transition(current: TaskStatus, target: TaskStatus) -> None:
    """Raise :class:`InvalidTransition` unless the table allows ``current`` -> ``target``."""
    if not can_transition(current, target):
        raise InvalidTransition(current=current.value, target=target.value)
