"""What a run talks to besides the task records: the fan-out workflow, and a source's slots of
concurrent exports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from exports.core.config.worker import Worker


class FanOutStarter(Protocol):
    """The workflow that writes one export's partitions at once and assembles its file."""

    def start(self, task_id: str, attempt: int, partitions: int) -> None:
        """Start writing the ``partitions`` partitions planned for the task's ``attempt``."""


# A slot whose holder stops renewing it (a crashed worker) is free again after this long;
# progress writes renew it (Worker.PROGRESS_INTERVAL_SEC), like the task's lease.
SOURCE_SLOT_LEASE_SEC: Final = Worker.LEASE_SEC


@dataclass(frozen=True)
class SlotLease:
    """One slot of a source's limit of concurrent exports, held by a task."""

    source: str
    index: int
    holder: str


class SourceSlotLeases(Protocol):
    """The per-source limit of concurrent exports, shared by all workers."""

    def acquire(self, source: str, limit: int, holder: str, now: datetime) -> SlotLease | None:
        """One of ``limit`` slots of ``source`` for ``holder`` (a task id); None if all are busy."""

    def renew(self, lease: SlotLease, now: datetime) -> bool:
        """Extend the lease; False if the slot is no longer ``holder``'s."""

    def release(self, lease: SlotLease) -> None:
        """Give the slot back (nothing if it is no longer ``holder``'s)."""
