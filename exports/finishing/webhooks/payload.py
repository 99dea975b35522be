"""The body of a callback, in the Standard Webhooks shape: ``type`` (``export.completed``, ...),
``timestamp`` and ``data``, the task as ``GET /v1/exports/{id}`` shows it. The push channel's
events (docs/push.md) are the same body with a ``seq``, for every status and progress step."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.core.task_view import TaskView

# Standard Webhooks event types, by the status the task ended in.
EVENT_TYPES = {
    TaskStatus.COMPLETED: "export.completed",
    TaskStatus.FAILED: "export.failed",
    TaskStatus.TIMEOUT: "export.timed_out",
    TaskStatus.CANCELLED: "export.cancelled",
}
# The push channel's types of the statuses a task has not ended in, and of a progress step.
PUSH_EVENT_TYPES = {**EVENT_TYPES, TaskStatus.PENDING: "export.pending", TaskStatus.RUNNING: "export.running"}
PROGRESS_EVENT = "export.progress"


def event_body(
    event_type: str,
    task: Task,
    timestamp: datetime,
    download_url: str | None = None,
    download_expires_at: datetime | None = None,
) -> dict[str, Any]:
    """A Standard Webhooks body of ``event_type`` about ``task`` (the GET's view as ``data``)."""
    view = TaskView.of(task, download_url, download_expires_at)
    return {"type": event_type, "timestamp": timestamp.isoformat(), "data": view.model_dump(mode="json")}


def event_payload(
    task: Task, now: datetime, download_url: str | None = None, download_expires_at: datetime | None = None
) -> dict[str, Any]:
    """The JSON body of the ended ``task``'s event (timestamped at its end, else ``now``), with
    its download link and the link's expiry when it has one."""
    return event_body(EVENT_TYPES[task.status], task, task.finished_at or now, download_url, download_expires_at)
