"""What the audit trail records of a task's writes and of the API's actions. Pure: the task
before and after a write (the tasks table's stream) or the action's facts in, events out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from exports.audit.model import AuditAction, AuditEvent, TenantCount, Usage
from exports.core.config.audit import Audit
from exports.core.deliveries import Delivery, DeliveryStatus
from exports.core.status import TaskStatus
from exports.core.task import CallbackStatus, Task

# The actor of what the service did on its own (a timeout, a worker's failure).
SYSTEM: Final = "system"
# The actor of a download through a schedule's permalink: whoever holds its key (no user, no
# token; the record says from which address and client).
PERMALINK: Final = "permalink"

_ENDINGS: Final = {
    TaskStatus.COMPLETED: AuditAction.EXPORT_COMPLETED,
    TaskStatus.FAILED: AuditAction.EXPORT_FAILED,
    TaskStatus.CANCELLED: AuditAction.EXPORT_CANCELLED,
    TaskStatus.TIMEOUT: AuditAction.EXPORT_TIMED_OUT,
}


def tenant_of(task: Task) -> str:
    """The task's tenant (:data:`Audit.NO_TENANT` for a task recorded without one)."""
    return task.tenant or Audit.NO_TENANT


def export_facts(task: Task) -> dict[str, Any]:
    """What was asked: type, format, filters as resolved (the selected columns among them),
    why the task exists, and its schedule."""
    facts: dict[str, Any] = {
        "export_type": task.export_type,
        "format": task.format.value,
        "filters": task.filters,
        "source": task.source.value,
        "timezone": task.timezone,
    }
    if task.retry_of:
        facts["retry_of"] = task.retry_of
    if task.schedule_id:
        facts["schedule_id"] = task.schedule_id
    return facts


def cpu_seconds(task: Task, worker_memory_mb: int) -> float:
    """The worker time the task took, in CPU-seconds-equivalent: seconds from its first claim
    to its end, times the vCPU share Lambda gives the worker's memory (0 if it never ran)."""
    if task.started_at is None or task.finished_at is None:
        return 0.0
    seconds = max(0.0, (task.finished_at - task.started_at).total_seconds())
    return round(seconds * worker_memory_mb / Audit.MB_PER_VCPU, 3)


def task_events(task: Task, before: Task | None, worker_memory_mb: int) -> list[AuditEvent]:
    """The events of one write of ``task`` (``before``: as it was, None for a new task): its
    submission, its end, and each callback delivered or given up."""
    tenant = tenant_of(task)
    if before is None:
        return [
            AuditEvent(
                event_id=f"{task.task_id}#submitted",
                tenant=tenant,
                action=AuditAction.EXPORT_SUBMITTED,
                at=task.created_at,
                actor=task.user_id,
                subject=task.task_id,
                claims=task.caller,
                detail={**export_facts(task), "priority": task.priority},
                counts={TenantCount.ACTIVE_TASKS: 1},
            )
        ]
    events: list[AuditEvent] = []
    if before.status is not task.status and task.status in _ENDINGS:
        events.append(_ending(task, tenant, worker_memory_mb))
    for index, subscriber in enumerate(task.subscribers):
        was = before.subscribers[index].state.status if index < len(before.subscribers) else CallbackStatus.PENDING
        now = subscriber.state.status
        if was is CallbackStatus.PENDING and now is not CallbackStatus.PENDING:
            delivered = now is CallbackStatus.DELIVERED
            events.append(
                AuditEvent(
                    event_id=f"{task.task_id}#callback#{index}",
                    tenant=tenant,
                    action=AuditAction.DELIVERY_MADE if delivered else AuditAction.DELIVERY_FAILED,
                    at=task.finished_at or task.created_at,
                    actor=SYSTEM,
                    subject=task.task_id,
                    claims=task.caller,
                    detail={
                        "channel": "callback",
                        "destination": subscriber.url,
                        "attempts": subscriber.state.attempts,
                        "error": subscriber.state.last_error,
                    },
                )
            )
    return events


def _ending(task: Task, tenant: str, worker_memory_mb: int) -> AuditEvent:
    result = task.result
    detail: dict[str, Any] = {**export_facts(task), "outcome": task.status.value, "rows": task.rows_written}
    if result is not None:
        detail.update(
            rows=result.rows, bytes=result.bytes, sha256=result.sha256, file=result.key, file_name=result.file_name
        )
    if task.error is not None:
        detail["error"] = {"code": task.error.code, "message": task.error.message}
    usage = Usage(
        exports=1,
        rows=result.rows if result is not None else 0,
        bytes=result.bytes if result is not None else 0,
        cpu_seconds=cpu_seconds(task, worker_memory_mb),
    )
    detail["cpu_seconds"] = usage.cpu_seconds
    return AuditEvent(
        event_id=f"{task.task_id}#{task.status_seq}",
        tenant=tenant,
        action=_ENDINGS[task.status],
        at=task.finished_at or task.created_at,
        # A cancel is the owner's; every other end is the service's.
        actor=task.user_id if task.status is TaskStatus.CANCELLED else SYSTEM,
        subject=task.task_id,
        claims=task.caller,
        detail=detail,
        usage=usage,
        counts={TenantCount.ACTIVE_TASKS: -1},
    )


def link_event(
    task: Task,
    request_id: str,
    user_id: str,
    at: datetime,
    expires_at: datetime,
    through_download: bool,
    via: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """A presigned link to ``task``'s file handed to ``user_id``: in the task's answer, or as a
    redirect (``through_download``: GET /download, a schedule's latest file or its permalink, which
    ``via`` names with what else the record keeps of the request)."""
    result = task.result
    return AuditEvent(
        event_id=f"{task.task_id}#link#{request_id}",
        tenant=tenant_of(task),
        action=AuditAction.DOWNLOAD if through_download else AuditAction.LINK_MINTED,
        at=at,
        actor=user_id,
        subject=task.task_id,
        claims=task.caller,
        detail={
            "export_type": task.export_type,
            "format": task.format.value,
            "file": result.key if result else None,
            "sha256": result.sha256 if result else None,
            "bytes": result.bytes if result else None,
            "link_expires_at": expires_at.isoformat().replace("+00:00", "Z"),
            **(via or {}),
        },
    )


def destination_event(
    action: AuditAction,
    destination_id: str,
    tenant: str,
    request_id: str,
    user_id: str,
    at: datetime,
    detail: Mapping[str, Any],
) -> AuditEvent:
    """A destination created, changed, deleted or verified by ``user_id`` (no count of its own)."""
    return AuditEvent(
        event_id=f"{destination_id}#{action.value}#{request_id}",
        tenant=tenant,
        action=action,
        at=at,
        actor=user_id,
        subject=destination_id,
        detail=detail,
    )


def schedule_event(
    action: AuditAction,
    schedule_id: str,
    tenant: str,
    request_id: str,
    user_id: str,
    at: datetime,
    detail: Mapping[str, Any],
) -> AuditEvent:
    """A schedule created, changed or deleted by ``user_id``."""
    return AuditEvent(
        event_id=f"{schedule_id}#{action.value}#{request_id}",
        tenant=tenant,
        action=action,
        at=at,
        actor=user_id,
        subject=schedule_id,
        detail=detail,
        counts={
            TenantCount.SCHEDULES: {AuditAction.SCHEDULE_CREATED: 1, AuditAction.SCHEDULE_DELETED: -1}.get(action, 0)
        },
    )


def mail_event(
    task: Task,
    sent_to: Sequence[str],
    refused: Sequence[str],
    at: datetime,
    link_expires_at: datetime | None,
    error: str | None,
    attached: bool = False,
) -> AuditEvent:
    """A scheduled run's mail (exports.finishing.schedule_run_end): ``delivery.made`` to ``sent_to``, or
    ``delivery.failed`` when SES refused it (``error``) or no recipient is allowed any more. Where
    the file went: the addresses, the file, whether the mail carried it (``attached``) or when its
    mailed link stops working; ``refused``: the schedule's addresses the deployment no longer
    allows, which were not mailed."""
    delivered = bool(sent_to) and error is None
    result = task.result if task.has_file else None
    return AuditEvent(
        # One record per run and outcome: a retried delivery that mails it again records nothing
        # twice, and a mail SES refused, then sent on a retry, leaves both.
        event_id=f"{task.task_id}#mail#{'made' if delivered else 'failed'}",
        tenant=tenant_of(task),
        action=AuditAction.DELIVERY_MADE if delivered else AuditAction.DELIVERY_FAILED,
        at=at,
        actor=SYSTEM,
        subject=task.task_id,
        claims=task.caller,
        detail={
            "channel": "mail",
            "destination": list(sent_to),
            "refused": list(refused),
            "schedule_id": task.schedule_id,
            "export_type": task.export_type,
            "format": task.format.value,
            "outcome": task.status.value,
            "file": result.key if result else None,
            "sha256": result.sha256 if result else None,
            "bytes": result.bytes if result else None,
            "attached": attached,
            "link_expires_at": link_expires_at.isoformat().replace("+00:00", "Z") if link_expires_at else None,
            "error": error or (None if sent_to else "no recipient is allowed by the deployment"),
        },
    )


def file_delivery_event(task: Task, delivery: Delivery, kind: str | None, at: datetime) -> AuditEvent:
    """A file delivery that ended (exports.finishing.delivery): ``delivery.made`` where it
    DELIVERED, ``delivery.failed`` where it FAILED. Where the file went: the destination, its
    kind (None: deleted before the record), the remote path, the delivered file's own sha256 and
    size as the destination holds it (the encrypted file's when the destination encrypts; None
    when it failed), the export's file and its sha256, the attempts, and the customer-safe error
    (never our internals)."""
    delivered = delivery.status is DeliveryStatus.DELIVERED
    result = task.result if task.has_file else None
    outcome = "made" if delivered else "failed"
    return AuditEvent(
        # One record per delivery, outcome and attempt count: a repeated step records nothing
        # twice, and a delivery retried on request that ends again is a record of its own.
        event_id=f"{task.task_id}#delivery#{delivery.destination_id}#{outcome}#{delivery.attempts}",
        tenant=tenant_of(task),
        action=AuditAction.DELIVERY_MADE if delivered else AuditAction.DELIVERY_FAILED,
        at=at,
        actor=SYSTEM,
        subject=task.task_id,
        claims=task.caller,
        detail={
            "channel": "destination",
            "destination_id": delivery.destination_id,
            "kind": kind,
            "remote_path": delivery.remote_path,
            "schedule_id": task.schedule_id,
            "export_type": task.export_type,
            "file": result.key if result else None,
            "export_sha256": result.sha256 if result else None,
            "sha256": delivery.sha256 if delivered else None,
            "bytes": delivery.size_bytes if delivered else None,
            "attempts": delivery.attempts,
            "delivered_at": delivery.delivered_at.isoformat().replace("+00:00", "Z") if delivery.delivered_at else None,
            "error": None if delivered or delivery.error is None else delivery.error.model_dump(exclude_none=True),
        },
    )


def delivery_retry_event(task: Task, delivery: Delivery, request_id: str, user_id: str, at: datetime) -> AuditEvent:
    """``user_id`` asked for ``task``'s FAILED delivery to be tried again (POST
    /v1/exports/{id}/deliveries/{destination}/retry): the round it started and the error it was
    FAILED with. Its end is a ``delivery.made`` or ``delivery.failed`` of its own."""
    return AuditEvent(
        event_id=f"{task.task_id}#delivery#{delivery.destination_id}#retried#{delivery.requested_retries}",
        tenant=tenant_of(task),
        action=AuditAction.DELIVERY_RETRIED,
        at=at,
        actor=user_id,
        subject=task.task_id,
        claims=task.caller,
        detail={
            "channel": "destination",
            "destination_id": delivery.destination_id,
            "requested_retries": delivery.requested_retries,
            "attempts": delivery.attempts,
            "request_id": request_id,
            "error": delivery.error.model_dump(exclude_none=True) if delivery.error else None,
        },
    )
