"""What the worker's services work with, gathered once per function instance by
:mod:`exports.running.composition`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from exports.accepting.ports import HotKeyLimiter, ThroughputStats
from exports.core.clock import utc_now
from exports.core.config.settings import WorkerSettings
from exports.core.ports import (
    BusinessMetrics,
    CapacityPools,
    Lifecycle,
    LifecycleEvents,
    ResultStore,
    TaskQueue,
    TaskRepository,
)
from exports.running.ports import FanOutStarter, SourceSlotLeases

if TYPE_CHECKING:
    # Annotations only: the worker's composition root imports the registry where it builds it.
    from exports.export_types.registry import ExportTypeRegistry


@dataclass(frozen=True)
class WorkerDependencies:
    """The worker's: claim, run and end tasks, write their files, re-queue them, split large
    exports, the hot-key limit and the per-source limit."""

    settings: WorkerSettings
    tasks: TaskRepository
    queue: TaskQueue
    results: ResultStore
    registry: ExportTypeRegistry
    metrics: BusinessMetrics
    lifecycle: Lifecycle
    limiter: HotKeyLimiter
    throughput: ThroughputStats
    # The per-source limit of concurrent exports.
    slots: SourceSlotLeases
    # The fan-out workflow.
    fan_out: FanOutStarter
    # The work queued per lane and limited source: a first start takes its place.
    capacity: CapacityPools
    # Lifecycle events (docs/events.md): completed and failed exports.
    events: LifecycleEvents
    clock: Callable[[], datetime] = utc_now
    random: Callable[[], float] = field(default=random.random)
