"""The ports each function's service calls work with, gathered once per function instance.

Each function has its own bag with exactly what its services use (built by its composition
root, :mod:`exports.composition`). The service helpers several functions share (the task writes,
the download link) take a :class:`typing.Protocol` naming only what they read, which every bag
that reaches them satisfies.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from exports.config.settings import ApiSettings, CallbackSettings, LifecycleSettings, WorkerSettings
from exports.ports import (
    BusinessMetrics,
    CapacityPools,
    FanOutStarter,
    HotKeyLimiter,
    Lifecycle,
    LifecycleEvents,
    ResultStore,
    SourceSlotLeases,
    TaskQueue,
    TaskRepository,
    ThroughputStats,
    WebhookSender,
)
from exports.webhooks.destination import Resolver, system_resolver

if TYPE_CHECKING:
    # Annotations only: the lifecycle function, which has neither, does not import them.
    from exports.audit.service import AuditDependencies
    from exports.export_types.registry import ExportTypeRegistry
    from exports.schedules.run_end import RunEndDependencies


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


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
        """The capacity pools (exports.domain.capacity)."""
        ...


class DownloadLinkSettings(Protocol):
    """The setting a download link reads."""

    @property
    def download_url_ttl_sec(self) -> int:
        """How long a presigned link works."""
        ...


class DownloadLinks(Protocol):
    """What signing a download link reads (the API's reads, the callback's payload)."""

    @property
    def settings(self) -> DownloadLinkSettings:
        """The link's lifetime."""
        ...

    @property
    def results(self) -> ResultStore:
        """The result files."""
        ...

    @property
    def clock(self) -> Callable[[], datetime]:
        """The current time."""
        ...


@dataclass(frozen=True)
class ApiDependencies:
    """The API function's: submit (admission, queues, estimates, the lifecycle workflow), read,
    cancel and retry tasks, sign download links, list the export types."""

    settings: ApiSettings
    tasks: TaskRepository
    queue: TaskQueue
    results: ResultStore
    # Built on first use (ExportTypeRegistry.on_first_use): reads of tasks never need it.
    registry: ExportTypeRegistry
    metrics: BusinessMetrics
    lifecycle: Lifecycle
    throughput: ThroughputStats
    # Admission by deadline: the work queued per lane and limited source.
    capacity: CapacityPools
    # The audit trail (docs/audit.md): None where the deployment names no audit table.
    audit: AuditDependencies | None = None
    resolve: Resolver = system_resolver
    clock: Callable[[], datetime] = utc_now
    random: Callable[[], float] = field(default=random.random)
    # Lifecycle events (docs/events.md); None: the deployment publishes none.
    events: LifecycleEvents | None = None


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


@dataclass(frozen=True)
class CallbackDependencies:
    """The callback function's: read the ended task, sign its payload (with a fresh download
    link), post it, record the attempt. No registry, no queue, no limiter."""

    settings: CallbackSettings
    tasks: TaskRepository
    results: ResultStore
    metrics: BusinessMetrics
    webhooks: WebhookSender
    # The signing secret, read (from Secrets Manager on AWS) on first use.
    webhook_secret: Callable[[], str]
    # A scheduled run's end: its schedule's outcome and mail (None: not recorded, as in tests).
    run_end: RunEndDependencies | None = None
    resolve: Resolver = system_resolver
    clock: Callable[[], datetime] = utc_now
    events: LifecycleEvents | None = None


@dataclass(frozen=True)
class LifecycleDependencies:
    """The lifecycle function's: store the workflow's token on a task, time the task out."""

    settings: LifecycleSettings
    tasks: TaskRepository
    lifecycle: Lifecycle
    metrics: BusinessMetrics
    # A task timed out before it started gives its queue place back.
    capacity: CapacityPools
    clock: Callable[[], datetime] = utc_now
