"""Progress reports of a running export, which also prove the worker still owns its task."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from exports.core.errors import ExportsError
from exports.core.task import Task, record_progress
from exports.core.task_writes import write_progress
from exports.running.dependencies import WorkerDependencies
from exports.running.ports import SOURCE_SLOT_LEASE_SEC, SlotLease

logger = logging.getLogger(__name__)


class ProgressReporter:
    """Writes progress at most every ``progress_interval_sec``; each write is conditional on the
    task still being RUNNING under this worker's attempt, so a cancel or timeout stops the export
    at the next write with :class:`LostOwnership`. ``on_write`` runs after each write (the worker
    renews its source slot there). Writes may come from a source's watchdog thread too (a long
    query keeps the lease alive): they are serialised."""

    def __init__(
        self, task: Task, deps: WorkerDependencies, on_write: Callable[[datetime], None] | None = None
    ) -> None:
        self.task = task
        self._deps = deps
        self._rows = 0
        self._fraction = 0.0
        self._last_write = deps.clock()
        self._on_write = on_write
        self._lock = threading.Lock()

    def on_fraction(self, fraction: float) -> None:
        """The export type says how much of the work is done (0..1)."""
        self._fraction = fraction

    def on_row(self, rows_written: int) -> None:
        """A row was written; report if the interval has passed."""
        self._rows = rows_written
        self.flush_if_due()

    def flush_if_due(self) -> None:
        """Write progress if the interval has passed since the last write."""
        elapsed = (self._deps.clock() - self._last_write).total_seconds()
        if elapsed >= self._deps.settings.progress_interval_sec:
            self.flush()

    def flush(self) -> None:
        """Write progress now and renew the lease."""
        with self._lock:
            now = self._deps.clock()
            self.task = self._write(self._rows, now)
            self._last_write = now
        if self._on_write is not None:
            self._on_write(now)

    def _write(self, rows: int, now: datetime) -> Task:
        """Record ``rows`` (and the fraction) on the task; the task as written."""
        updated = record_progress(self.task, rows, int(self._fraction * 100), now, self._deps.settings.lease)
        write_progress(updated, self._deps)
        return updated


def slot_keeper(lease: SlotLease | None, deps: WorkerDependencies) -> Callable[[datetime], None] | None:
    """Renew the source slot with the task's own progress writes, every third of its lease."""
    if lease is None:
        return None
    slots = deps.slots
    renewed = [deps.clock()]

    def renew(now: datetime) -> None:
        if (now - renewed[0]).total_seconds() >= SOURCE_SLOT_LEASE_SEC / 3:
            try:
                slots.renew(lease, now)
                renewed[0] = now
            except ExportsError:
                logger.warning("could not renew the source slot", exc_info=True)

    return renew
