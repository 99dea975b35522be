"""Task states, and the one transition table that every status change goes through."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from exports.core.errors import InvalidTransition


class TaskStatus(StrEnum):
    """The states an export task moves through."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"


# A task never leaves these states.
TERMINAL: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED})
# A task in these states has not ended yet.
ACTIVE: Final = frozenset({TaskStatus.PENDING, TaskStatus.RUNNING})
# A task in these states ended without a file. Its owner may ask for a new task with the same
# parameters.
RETRYABLE: Final = frozenset({TaskStatus.FAILED, TaskStatus.TIMEOUT, TaskStatus.CANCELLED})

# Every allowed change of status. RUNNING -> RUNNING means a new worker reclaims a task whose
# lease ran out. RUNNING -> PENDING sends a task back to the queue for a retry.
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
    """Whether the table allows a move from ``current`` to ``target``."""
    return target in TRANSITIONS[current]


def check_transition(current: TaskStatus, target: TaskStatus) -> None:
    """Raises :class:`InvalidTransition` unless the table allows a move from ``current`` to
    ``target``."""
    if not can_transition(current, target):
        raise InvalidTransition(current=current.value, target=target.value)
