"""Sending a task's callbacks when it ends.

A callback is a signed HTTP POST to a URL the submitter gave, saying how the task ended. Each
call of :func:`deliver` makes one attempt for each subscriber still pending. The lifecycle
workflow owns the retries (see :mod:`exports.core.workflows`).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from exports.core.config.metrics import Metric
from exports.core.download_links import download_link
from exports.core.errors import InvalidRequest, RetryableError
from exports.core.event_publishing import publish
from exports.core.events import export_delivered, schedule_paused
from exports.core.policies import callback_delivered, callback_retryable
from exports.core.public_address import check_destination
from exports.core.status import TaskStatus
from exports.core.task import Task, give_up_callback, record_callback
from exports.core.task_writes import write_callbacks
from exports.finishing.dependencies import CallbackDependencies
from exports.finishing.schedule_run_end import on_run_end
from exports.finishing.webhooks.payload import event_payload
from exports.finishing.webhooks.signing import signed_headers
from exports.schedules.model import PauseReason

logger = logging.getLogger(__name__)

USER_AGENT = "exports-callback/1"


class CallbackRetryable(RetryableError):
    """This attempt failed in a way worth retrying. The workflow's Retry rule matches this
    error's name."""

    code = "CALLBACK_RETRYABLE"


class DeliveryOutcome(StrEnum):
    """What one call of :func:`deliver` achieved."""

    DELIVERED = "delivered"
    FAILED = "failed"
    NOTHING_TO_DO = "nothing_to_do"


def message_id(task: Task, index: int = 0) -> str:
    """The ``webhook-id`` of subscriber ``index``'s message. It is the same for every attempt of
    the same event, and different for each subscriber."""
    base = f"msg_{task.task_id}_{task.status_seq}"
    return base if index == 0 else f"{base}_{index}"


def callback_payload(
    task: Task, deps: CallbackDependencies, schedule_paused: PauseReason | None = None
) -> dict[str, Any]:
    """The JSON body, in the Standard Webhooks shape.

    The body has a ``type`` (``export.completed``, ...), a ``timestamp``, and ``data``: the task
    as ``GET /v1/exports/{id}`` shows it. For a COMPLETED task with a file, ``data`` adds a fresh
    download link and its expiry.

    A scheduled run adds more. If its end paused its schedule, ``data.schedule_paused`` says so,
    with a ``code`` and a ``message``. If it COMPLETED, ``data.empty`` says whether it found no
    row, and ``data.skipped`` whether it was skipped for that (no file, no mail).
    """
    download_url: str | None = None
    download_expires_at: datetime | None = None
    if task.has_file:
        download_url, download_expires_at = download_link(task, deps)
    payload = event_payload(task, deps.clock(), download_url, download_expires_at)
    if task.schedule_id is not None and task.status is TaskStatus.COMPLETED and task.result is not None:
        payload["data"]["empty"] = task.result.rows == 0
        payload["data"]["skipped"] = task.empty_skipped
    if schedule_paused is not None:
        payload["data"]["schedule_paused"] = {"code": schedule_paused.code.value, "message": schedule_paused.message}
    return payload


def deliver(task_id: str, deps: CallbackDependencies) -> DeliveryOutcome:
    """Sends each pending subscriber's callback once.

    Each callback is signed with its own message id and recorded on its own. For a scheduled run,
    the run's end is first recorded on its schedule and its mail is sent. Raises
    :class:`CallbackRetryable` while any callback may still get through. The workflow then
    retries, and subscribers already delivered or failed for good are not sent again.
    """
    task = deps.tasks.get(task_id)
    if task is None or not task.is_terminal:
        return DeliveryOutcome.NOTHING_TO_DO
    # For a scheduled run, record its outcome on its schedule and send its mail first. A repeated
    # attempt does nothing the second time.
    try:
        paused = on_run_end(task, deps.run_end) if deps.run_end is not None else None
    except RetryableError as busy:
        # The audit trail or the schedules table refused for now. The workflow tries again.
        raise CallbackRetryable(f"the scheduled run's end was not recorded: {busy.message}") from busy
    if paused is not None and task.schedule_id is not None:
        deps.metrics.add(Metric.SCHEDULE_PAUSED)
        event = schedule_paused(
            task.schedule_id, task.user_id, task.export_type, paused.code.value, paused.message, deps.clock()
        )
        publish(deps.events, event)
    if not task.pending_callbacks:
        return DeliveryOutcome.NOTHING_TO_DO
    body = json.dumps(callback_payload(task, deps, paused), separators=(",", ":"), ensure_ascii=False).encode()
    timestamp = int(deps.clock().timestamp())
    retry: list[str] = []
    outcomes: list[bool] = []
    after = task
    for index in task.pending_callbacks:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **signed_headers(deps.webhook_secret(), message_id(task, index), timestamp, body),
        }
        delivered, error, final = _attempt(task.subscribers[index].url, body, headers, deps)
        after = record_callback(after, delivered=delivered, error=error, final=final, index=index)
        if final:
            outcomes.append(delivered)
            deps.metrics.add(Metric.CALLBACK_DELIVERED if delivered else Metric.CALLBACK_FAILED)
            if delivered:
                publish(deps.events, export_delivered(task, index, deps.clock()))
        else:
            retry.append(error or "failed")
    write_callbacks(after, deps)
    if retry:
        raise CallbackRetryable(f"callback attempt failed: {'; '.join(retry)}")
    return DeliveryOutcome.DELIVERED if all(outcomes) else DeliveryOutcome.FAILED


def _attempt(
    url: str, body: bytes, headers: dict[str, str], deps: CallbackDependencies
) -> tuple[bool, str | None, bool]:
    """Makes one attempt to one subscriber. Returns whether the callback was delivered, the
    error if any, and whether that outcome is final."""
    try:
        destination = check_destination(url, deps.resolve, deps.settings.allow_local_callbacks)
    except InvalidRequest as refused:
        return False, refused.message, True
    response = deps.webhooks.post(destination, body, headers)
    if callback_delivered(response.status):
        return True, None, True
    error = response.error or f"HTTP {response.status}"
    return False, error, not callback_retryable(response.status)


# What a callback that was given up without an error of its own shows. The workflow's caught
# error is a Lambda's message, which may name our resources, so it goes to the log only.
GIVEN_UP: Final = "the callback was not delivered before its retries ran out"


def give_up(task_id: str, error: str | None, deps: CallbackDependencies) -> None:
    """Records every callback still pending as failed, and counts each, because the retries are
    spent."""
    task = deps.tasks.get(task_id)
    if task is None or not task.pending_callbacks:
        return
    logger.warning("callbacks given up", extra={"task_id": task_id, "detail": error})
    write_callbacks(give_up_callback(task, GIVEN_UP), deps)
    for _ in task.pending_callbacks:
        deps.metrics.add(Metric.CALLBACK_FAILED)
