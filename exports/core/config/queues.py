"""The task queues: SQS settings and the priority lanes."""

from __future__ import annotations

from typing import Final

from exports.core.config.names import Names
from exports.core.config.worker import Worker


class Queue:
    """SQS settings. A message is retried by our own retry policy first (re-enqueued with a
    delay), so redrive (:data:`exports.core.config.retry.MESSAGE_RETRY`) only catches messages that
    keep crashing the worker itself."""

    # AWS advice: at least six times the consumer's timeout.
    VISIBILITY_TIMEOUT_SEC: Final = 6 * Worker.FUNCTION_TIMEOUT_SEC
    RETENTION_SEC: Final = 4 * 24 * 3600
    DLQ_RETENTION_SEC: Final = 14 * 24 * 3600
    LONG_POLL_SEC: Final = 20


class Lane:
    """A priority lane: its own queue (and DLQ) and its own share of the workers, so a flood of
    low-priority work cannot starve high-priority tasks."""

    def __init__(self, name: str, highest: int, lowest: int, max_concurrency: int) -> None:
        self.name = name
        self.highest = highest
        self.lowest = lowest
        # SQS event source mappings accept 2..1000.
        self.max_concurrency = max_concurrency

    @property
    def queue_name(self) -> str:
        """The lane's queue."""
        return f"{Names.TASK_QUEUE}-{self.name}"

    @property
    def dlq_name(self) -> str:
        """The lane's dead-letter queue."""
        return f"{Names.TASK_QUEUE}-{self.name}-dlq"


LANES: Final = (Lane("high", 1, 3, 2), Lane("normal", 4, 7, 2), Lane("low", 8, 10, 2))


def lane_for(priority: int) -> Lane:
    """The lane that serves ``priority`` (1 highest .. 10 lowest)."""
    for lane in LANES:
        if lane.highest <= priority <= lane.lowest:
            return lane
    raise ValueError(f"no lane serves priority {priority}")
