"""The body of a callback, in the Standard Webhooks shape: ``type`` (``export.completed``, ...),
``timestamp`` and ``data``, the task as ``GET /v1/exports/{id}`` shows it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from exports.api_models import TaskView
from exports.domain.status import TaskStatus
from exports.domain.task import Task

# Standard Webhooks event types, by the status the task ended in.
EVENT_TYPES = {
    TaskStatus.COMPLETED: "export.completed",
    TaskStatus.FAILED: "export.failed",
    TaskStatus.TIMEOUT: "export.timed_out",
    TaskStatus.CANCELLED: "export.cancelled",
}


def event_payload(
    task: Task, now: datetime, download_url: str | None = None, download_expires_at: datetime | None = None
) -> dict[str, Any]:
    """The JSON body of the ended ``task``'s event (timestamped at its end, else ``now``), with
    its download link and the link's expiry when it has one."""
    view = TaskView.of(task, download_url, download_expires_at)
    return {
        "type": EVENT_TYPES[task.status],
        "timestamp": (task.finished_at or now).isoformat(),
        "data": view.model_dump(mode="json"),
    }
