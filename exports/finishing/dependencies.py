"""What the callback and lifecycle functions' services work with, gathered once per function
instance by :mod:`exports.finishing.composition`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from exports.core.clock import utc_now
from exports.core.config.settings import CallbackSettings, LifecycleSettings
from exports.core.ports import BusinessMetrics, CapacityPools, Lifecycle, LifecycleEvents, ResultStore, TaskRepository
from exports.core.public_address import Resolver, system_resolver
from exports.finishing.ports import WebhookSender

if TYPE_CHECKING:
    # Annotations only: the lifecycle function, which ends no scheduled run, does not import it.
    from exports.finishing.schedule_run_end import RunEndDependencies


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
