"""Adapters that several functions' composition roots build the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.core.aws.clients import aws_client
from exports.core.config.limits import Admission

if TYPE_CHECKING:
    from exports.core.ports import CapacityPools, LifecycleEvents


def lifecycle_events(bus: str | None) -> LifecycleEvents | None:
    """The lifecycle events' publisher on ``bus`` (None: the deployment names no bus)."""
    if not bus:
        return None
    from exports.core.aws.eventbridge_events import EventBridgeEvents

    return EventBridgeEvents(aws_client("events"), bus)


def capacity_pools(tasks_table: str) -> CapacityPools:
    """The capacity pools (admission by deadline) in the tasks table, their drain cached as
    long as :attr:`Admission.DRAIN_CACHE_SEC` allows."""
    from exports.core.aws.dynamodb_capacity import DynamoCapacityPools

    return DynamoCapacityPools(
        aws_client("dynamodb"), tasks_table, Admission.DRAIN_SMOOTHING, Admission.DRAIN_CACHE_SEC
    )
