"""Accepting an export request: validate, persist PENDING, enqueue."""

from __future__ import annotations

from pydantic import ValidationError

from exports.api_models import ExportRequest
from exports.config import Metric
from exports.domain.errors import ExportsError, InvalidRequest, ServiceUnavailable
from exports.domain.ids import new_task_id
from exports.domain.task import Task, fail, new_task
from exports.ports import TaskMessage
from exports.services.dependencies import Dependencies
from exports.services.validation import invalid_request

ENQUEUE_FAILED = "ENQUEUE_FAILED"


def submit_export(request: ExportRequest, user_id: str, deps: Dependencies) -> tuple[Task, int]:
    """Create the task and queue it; returns the task and its estimated run time in seconds.

    Nothing is stored unless the whole request is valid. If the queue refuses the message the
    task is marked FAILED (``ENQUEUE_FAILED``) at once rather than left PENDING, and the caller
    gets :class:`ServiceUnavailable` to retry.
    """
    export_type = deps.registry.get(request.export_type)
    if request.format not in export_type.formats:
        raise InvalidRequest(f"export type {export_type.name} does not produce {request.format.value}", field="format")
    try:
        filters = export_type.parse_filters(request.filters)
    except ValidationError as error:
        raise invalid_request(error, prefix="filters") from None

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
        callback_url=str(request.callback_url) if request.callback_url else None,
        now=now,
        retention=deps.settings.retention,
    )
    deps.tasks.create(task)
    try:
        deps.queue.send(TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority))
    except ExportsError as error:
        deps.tasks.update(
            task, fail(task, ENQUEUE_FAILED, "the task could not be queued", now, deps.settings.retention)
        )
        deps.metrics.add(Metric.ENQUEUE_FAILED)
        raise ServiceUnavailable("the export queue is unavailable; try again shortly") from error
    deps.metrics.add(Metric.SUBMITTED)
    return task, export_type.estimate_sec(filters)
