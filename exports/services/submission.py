"""Accepting an export request: validate, persist PENDING, enqueue."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from exports.api_models import ExportRequest
from exports.config import Metric
from exports.domain.errors import ExportsError, InvalidRequest, ServiceUnavailable
from exports.domain.ids import new_task_id
from exports.domain.task import Task, TaskSource, fail, new_task
from exports.ports import TaskMessage
from exports.services.dependencies import Dependencies
from exports.services.endings import end_task
from exports.services.validation import invalid_request
from exports.webhooks.destination import check_destination

ENQUEUE_FAILED = "ENQUEUE_FAILED"
SCHEDULE_FAILED = "SCHEDULE_FAILED"


def submit_export(
    request: ExportRequest,
    user_id: str,
    deps: Dependencies,
    source: TaskSource = TaskSource.API,
    retry_of: str | None = None,
) -> tuple[Task, int]:
    """Create the task, start its lifecycle and queue it; returns the task and its estimated run
    time in seconds.

    Nothing is stored unless the whole request is valid (the callback URL included: it must pass
    the SSRF guard). If the workflow or the queue refuses, the task is marked FAILED at once
    (``SCHEDULE_FAILED`` / ``ENQUEUE_FAILED``) rather than left PENDING, and the caller gets
    :class:`ServiceUnavailable` to retry.
    """
    export_type = deps.registry.get(request.export_type)
    if request.format not in export_type.formats:
        raise InvalidRequest(f"export type {export_type.name} does not produce {request.format.value}", field="format")
    try:
        filters = export_type.parse_filters(request.filters)
    except ValidationError as error:
        raise invalid_request(error, prefix="filters") from None

    callback_url = str(request.callback_url) if request.callback_url else None
    if callback_url:
        check_destination(callback_url, deps.resolve, deps.settings.allow_local_callbacks)

    now = deps.clock()
    task = new_task(
        task_id=new_task_id(now),
        user_id=user_id,
        export_type=export_type.name,
        format=request.format,
        filters=filters.model_dump(mode="json", exclude_none=True),
        csv_bom=request.csv_bom,
        priority=request.priority,
        timeout_sec=request.timeout_sec,
        callback_url=callback_url,
        now=now,
        retention=deps.settings.retention,
        source=source,
        retry_of=retry_of,
    )
    deps.tasks.create(task)
    _dispatch(task, SCHEDULE_FAILED, lambda: deps.lifecycle.start(task), deps)
    message = TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority)
    _dispatch(task, ENQUEUE_FAILED, lambda: deps.queue.send(message), deps)
    deps.metrics.add(Metric.SUBMITTED)
    return task, export_type.estimate_sec(filters)


def _dispatch(task: Task, code: str, send: Callable[[], None], deps: Dependencies) -> None:
    """Run ``send``; if it fails, end the stored task as FAILED with ``code`` and tell the caller."""
    try:
        send()
    except ExportsError as error:
        now = deps.clock()
        end_task(task, fail(task, code, "the task could not be scheduled", now, deps.settings.retention), deps)
        deps.metrics.add(Metric.ENQUEUE_FAILED)
        raise ServiceUnavailable("the export service is busy; try again shortly") from error
