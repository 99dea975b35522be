"""Lifecycle events (docs/events.md): what an operator's EventBridge rule receives when a task
is created, completes, fails or has its callback delivered, and when a schedule pauses itself.

Pure: built from a task or schedule and the time; the publisher (:mod:`exports.core.event_publishing`)
sends them. A ``detail`` names who and what (user, type, format, outcome, rows, bytes, sha256,
error code), never filters, claims, callback URLs or download links.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from exports.core.config.events import Events
from exports.core.task import Task


@dataclass(frozen=True)
class LifecycleEvent:
    """One event: its ``detail-type`` (:class:`exports.core.config.events.Events`) and ``detail``."""

    detail_type: str
    detail: dict[str, Any]


def _instant(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _export(task: Task, occurred_at: datetime) -> dict[str, Any]:
    return {
        "version": Events.DETAIL_VERSION,
        "task_id": task.task_id,
        "user_id": task.user_id,
        "export_type": task.export_type,
        "format": task.format.value,
        "status": task.status.value,
        "source": task.source.value,
        "schedule_id": task.schedule_id,
        "created_at": _instant(task.created_at),
        "occurred_at": _instant(occurred_at),
    }


def export_created(task: Task, now: datetime) -> LifecycleEvent:
    """The task was accepted and queued (``202``)."""
    return LifecycleEvent(Events.EXPORT_CREATED, {**_export(task, now), "priority": task.priority})


def export_completed(task: Task, now: datetime) -> LifecycleEvent:
    """The task's file is complete: its rows, bytes and sha256."""
    result = task.result
    details = {"rows": result.rows, "bytes": result.bytes, "sha256": result.sha256} if result else {}
    return LifecycleEvent(Events.EXPORT_COMPLETED, {**_export(task, now), **details, "status": "COMPLETED"})


def export_failed(task: Task, code: str, now: datetime) -> LifecycleEvent:
    """The task ended FAILED with the error ``code``."""
    return LifecycleEvent(Events.EXPORT_FAILED, {**_export(task, now), "status": "FAILED", "error_code": code})


def export_delivered(task: Task, subscriber: int, now: datetime) -> LifecycleEvent:
    """The task's callback to its subscriber number ``subscriber`` was delivered."""
    return LifecycleEvent(Events.EXPORT_DELIVERED, {**_export(task, now), "subscriber": subscriber})


def schedule_paused(
    schedule_id: str, user_id: str, export_type: str, code: str, message: str, now: datetime
) -> LifecycleEvent:
    """The schedule paused itself (or was paused): why, in ``code`` and ``message``."""
    return LifecycleEvent(
        Events.SCHEDULE_PAUSED,
        {
            "version": Events.DETAIL_VERSION,
            "schedule_id": schedule_id,
            "user_id": user_id,
            "export_type": export_type,
            "reason": {"code": code, "message": message},
            "occurred_at": _instant(now),
        },
    )
