"""Delivering a task's callback: one signed attempt per call; the workflow owns the retries."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any

from exports.config import Metric
from exports.domain.errors import ConditionFailed, InvalidRequest, RetryableError
from exports.domain.policies import callback_delivered, callback_retryable
from exports.domain.status import TaskStatus
from exports.domain.task import CallbackStatus, Task, give_up_callback, record_callback
from exports.services.dependencies import Dependencies
from exports.services.queries import download_link
from exports.webhooks.destination import check_destination
from exports.webhooks.signing import signed_headers

USER_AGENT = "exports-callback/1"


class CallbackRetryable(RetryableError):
    """This attempt failed in a way worth retrying; the workflow's Retry matches this name."""

    code = "CALLBACK_RETRYABLE"


class DeliveryOutcome(StrEnum):
    """What one delivery call achieved."""

    DELIVERED = "delivered"
    FAILED = "failed"
    NOTHING_TO_DO = "nothing_to_do"


def message_id(task: Task) -> str:
    """The ``webhook-id``: the same for every attempt of the same event."""
    return f"msg_{task.task_id}_{task.status_seq}"


def callback_payload(task: Task, deps: Dependencies) -> dict[str, Any]:
    """The JSON body: the outcome, a fresh link for COMPLETED, and what expires when."""
    download_url: str | None = None
    expire_at: datetime = task.expires_at
    if task.status is TaskStatus.COMPLETED:
        download_url, expire_at = download_link(task, deps)
    return {
        "task_id": task.task_id,
        "status": task.status.value,
        "download_url": download_url,
        "expire_at": expire_at.isoformat(),
        "error": task.error.model_dump() if task.error else None,
        "callback_seq": task.status_seq,
        "occurred_at": (task.finished_at or deps.clock()).isoformat(),
    }


def deliver(task_id: str, deps: Dependencies) -> DeliveryOutcome:
    """Send the callback once. Raises :class:`CallbackRetryable` when another attempt may work."""
    task = deps.tasks.get(task_id)
    if task is None or not task.is_terminal or not task.callback_url:
        return DeliveryOutcome.NOTHING_TO_DO
    if task.callback and task.callback.status is not CallbackStatus.PENDING:
        return DeliveryOutcome.NOTHING_TO_DO
    body = json.dumps(callback_payload(task, deps), separators=(",", ":"), ensure_ascii=False).encode()
    timestamp = int(deps.clock().timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(deps.webhook_secret(), message_id(task), timestamp, body),
    }
    try:
        destination = check_destination(task.callback_url, deps.resolve, deps.settings.allow_local_callbacks)
    except InvalidRequest as refused:
        return _finish(task, delivered=False, error=refused.message, deps=deps)
    response = deps.webhooks.post(destination, body, headers)
    if callback_delivered(response.status):
        return _finish(task, delivered=True, error=None, deps=deps)
    error = response.error or f"HTTP {response.status}"
    if not callback_retryable(response.status):
        return _finish(task, delivered=False, error=error, deps=deps)
    _record(task, record_callback(task, delivered=False, error=error, final=False), deps)
    raise CallbackRetryable(f"callback attempt failed: {error}")


def give_up(task_id: str, error: str | None, deps: Dependencies) -> None:
    """Retries are spent: record the callback as failed and count it."""
    task = deps.tasks.get(task_id)
    if task is None or (task.callback and task.callback.status is not CallbackStatus.PENDING):
        return
    _record(task, give_up_callback(task, error), deps)
    deps.metrics.add(Metric.CALLBACK_FAILED)


def _finish(task: Task, delivered: bool, error: str | None, deps: Dependencies) -> DeliveryOutcome:
    _record(task, record_callback(task, delivered=delivered, error=error, final=True), deps)
    deps.metrics.add(Metric.CALLBACK_DELIVERED if delivered else Metric.CALLBACK_FAILED)
    return DeliveryOutcome.DELIVERED if delivered else DeliveryOutcome.FAILED


def _record(before: Task, after: Task, deps: Dependencies) -> None:
    # Conditional like every write; a terminal task's status and attempt never change, so a
    # conflict means the record is gone (expired) and there is nothing left to record.
    try:
        deps.tasks.update(before, after)
    except ConditionFailed:
        return
