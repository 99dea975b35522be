"""The capacity pools a task waits for (exports.core.capacity_rules), shared by submit (which
reserves its place), the worker (whose start takes it) and every ending (which gives it back)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from exports.core.capacity_rules import Drain, Pool, lane_pool, source_pool
from exports.core.config.queues import lane_for
from exports.core.errors import ExportsError
from exports.core.export_type import AnyExportType
from exports.core.ports import CapacityPools
from exports.core.task import Task

logger = logging.getLogger(__name__)


class CapacityUser(Protocol):
    """What reads or changes the capacity pools."""

    @property
    def capacity(self) -> CapacityPools:
        """The capacity pools."""
        ...


def pools_of(export_type: AnyExportType, priority: int, deps: CapacityUser) -> list[Pool]:
    """The capacity pools a task of ``export_type`` at ``priority`` waits for: its lane's
    workers, and its data source's slots when the source limits its concurrent exports."""
    lane = lane_for(priority)
    pools = [Pool(lane_pool(lane.name), lane.max_concurrency, _drain(lane_pool(lane.name), deps))]
    limit = export_type.source_limit()
    if limit is not None:
        name = source_pool(limit.source)
        pools.append(Pool(name, limit.max_concurrent, _drain(name, deps)))
    return pools


def _drain(pool: str, deps: CapacityUser) -> Drain | None:
    """The pool's measured drain; None before one or if it cannot be read (the estimates then
    take the pool's cautious unmeasured pace, :func:`exports.core.capacity_rules.drain_rate`)."""
    try:
        return deps.capacity.drain(pool)
    except ExportsError:
        logger.warning("could not read the capacity drain", exc_info=True)
        return None


def give_back_queue_places(task: Task, deps: CapacityUser) -> None:
    """Take the task's queued work out of the pools that still count it: it will never start
    from there (merged, refused, cancelled, timed out, never queued). A failure leaves the work
    counted: logged, never raised (the caller's outcome stands; the estimates only run
    pessimistic until the pool drains)."""
    for pool in task.queue_places:
        try:
            deps.capacity.release(pool, task.queued_work_sec or 0.0)
        except ExportsError:
            logger.warning("could not give a queue place back", extra={"pool": pool}, exc_info=True)


def take_queue_places(task: Task, now: datetime, deps: CapacityUser) -> None:
    """The task (as it was before its first claim) starts: its queued work leaves its pools,
    which measure their drain by it, in the same seconds as the work queued in them, when it
    was estimated from its type's measured runs (the defaults' guess measures nothing). Logged,
    never raised, as :func:`give_back_queue_places`."""
    work = task.queued_work_sec or 0.0
    for pool in task.queue_places:
        try:
            deps.capacity.start(pool, work, now, work if task.queued_work_measured else None)
        except ExportsError:
            logger.warning("could not take a queue place", extra={"pool": pool}, exc_info=True)
