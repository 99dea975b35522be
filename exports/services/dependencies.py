"""The ports a service call works with, gathered once per function instance."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from exports.export_types.registry import ExportTypeRegistry
from exports.ports import (
    BusinessMetrics,
    FanOutStarter,
    HotKeyLimiter,
    Lifecycle,
    ResultStore,
    SourceSlots,
    TaskQueue,
    TaskRepository,
    ThroughputStats,
    WebhookSender,
)
from exports.settings import Settings
from exports.webhooks.destination import Resolver, system_resolver


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class Dependencies:
    """Everything a service function needs from outside."""

    settings: Settings
    tasks: TaskRepository
    queue: TaskQueue
    results: ResultStore
    registry: ExportTypeRegistry
    metrics: BusinessMetrics
    lifecycle: Lifecycle
    webhooks: WebhookSender
    webhook_secret: Callable[[], str]
    limiter: HotKeyLimiter
    throughput: ThroughputStats
    # The per-source limit of concurrent exports; None: no source is limited (tests, benchmarks).
    slots: SourceSlots | None = None
    # The fan-out workflow; None: exports are never split.
    fan_out: FanOutStarter | None = None
    resolve: Resolver = system_resolver
    clock: Callable[[], datetime] = utc_now
    random: Callable[[], float] = field(default=random.random)
