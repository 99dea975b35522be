"""A task as callers see it: in the API's answers, in webhooks and on the push channel."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.deliveries import Delivery
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, Task
from exports.core.zones import UTC_ZONE


class ErrorView(BaseModel):
    """Why a task failed."""

    code: str
    message: str


class CallbackView(BaseModel):
    """How a callback went: PENDING until delivered or given up."""

    status: str
    attempts: int
    last_error: str | None = None


class SubscriberView(CallbackView):
    """One submitter's callback (the task's own, or of an identical request merged into it)."""

    url: str


class TaskView(BaseModel):
    """A task as its owner sees it."""

    task_id: str
    export_type: str
    format: ExportFormat
    filters: dict[str, Any]
    timezone: str = Field(default=UTC_ZONE, description="The IANA zone the file's date-times are written in.")
    csv_dialect: CsvDialect = Field(default=DEFAULT_DIALECT, description="How a CSV file is spelled.")
    locale: str | None = Field(
        default=None, description="The language of the file's labels (none: recorded before locales)."
    )
    priority: int
    status: TaskStatus
    progress: int
    rows_written: int
    partitions: int | None = Field(
        default=None, description="Into how many partitions the export was split (written at once); none: one worker."
    )
    attempt: int
    retry_count: int
    max_retries: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime
    deadline: datetime
    error: ErrorView | None = None
    file_name: str | None = None
    size_bytes: int | None = None
    rows: int | None = None
    sha256: str | None = None
    download_url: str | None = None
    download_expires_at: datetime | None = None
    retry_of: str | None = None
    schedule_id: str | None = Field(default=None, description="The schedule this task is a run of (none: not a run).")
    scheduled_for: datetime | None = Field(default=None, description="The firing time the run is for (UTC).")
    callback: CallbackView | None = Field(default=None, description="The first callback (callbacks[0]).")
    callbacks: list[SubscriberView] = Field(
        default_factory=list, description="Every callback, one per submitter who asked for one, in order."
    )
    callback_seq: int = Field(
        default=0, description="Grows with every status change; a receiver keeps the event with the highest."
    )
    deliveries: list[Delivery] = Field(
        default_factory=list,
        description="The file's delivery to each destination named at submit, once COMPLETED (docs/destinations.md).",
    )

    @classmethod
    def of(cls, task: Task, download_url: str | None = None, download_expires_at: datetime | None = None) -> TaskView:
        """The view of ``task``, with a fresh download link when it has one."""
        result = task.result
        file = result if result is not None and not task.empty_skipped else None
        return cls(
            task_id=task.task_id,
            export_type=task.export_type,
            format=task.format,
            filters=task.filters,
            timezone=task.timezone,
            csv_dialect=task.csv_dialect,
            locale=task.locale,
            priority=task.priority,
            status=task.status,
            progress=task.progress,
            rows_written=task.rows_written,
            partitions=len(task.partition_rows) if task.partition_rows else None,
            attempt=task.attempt,
            retry_count=task.retry_count,
            max_retries=task.max_retries,
            created_at=task.created_at,
            started_at=task.started_at,
            finished_at=task.finished_at,
            expires_at=task.expires_at,
            deadline=task.deadline,
            error=ErrorView(code=task.error.code, message=task.error.message) if task.error else None,
            file_name=file.file_name if file else None,
            size_bytes=file.bytes if file else None,
            rows=result.rows if result else None,
            sha256=file.sha256 if file else None,
            download_url=download_url,
            download_expires_at=download_expires_at,
            retry_of=task.retry_of,
            schedule_id=task.schedule_id,
            scheduled_for=task.scheduled_for,
            callback=CallbackView(**task.callback.model_dump()) if task.callback else None,
            callbacks=[SubscriberView(url=s.url, **s.state.model_dump()) for s in task.subscribers],
            callback_seq=task.status_seq,
            deliveries=list(task.deliveries),
        )
