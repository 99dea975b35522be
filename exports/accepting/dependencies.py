"""What the API and schedule functions' submit path works with (admission, queues, estimates, the
lifecycle workflow, the audit trail), gathered once per function instance by
:mod:`exports.api.composition`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from exports.accepting.ports import ThroughputStats
from exports.core.clock import utc_now
from exports.core.config.settings import ApiSettings
from exports.core.ports import (
    BusinessMetrics,
    CapacityPools,
    Lifecycle,
    LifecycleEvents,
    ResultStore,
    TaskQueue,
    TaskRepository,
)
from exports.core.public_address import Resolver, system_resolver

if TYPE_CHECKING:
    # Annotations only: the API and schedule functions build these where they use them.
    from exports.audit.service import AuditDependencies
    from exports.export_types.registry import ExportTypeRegistry


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
