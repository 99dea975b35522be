"""What the audit trail records of a schedule: its changes by a user, and the pauses the service
makes on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.audit.events import SYSTEM, schedule_event
from exports.audit.model import AuditAction
from exports.audit.service import AuditDependencies, record
from exports.core.caller import Caller

if TYPE_CHECKING:
    from exports.schedules.model import Schedule


def record_schedule(
    action: AuditAction,
    schedule: Schedule,
    caller: Caller,
    request_id: str,
    deps: AuditDependencies,
    change: str | None = None,
) -> None:
    """A schedule created, changed or deleted by ``caller``: what it exports, when, and where
    its runs go (callback URL, mail recipients); ``change`` names a change that is no field's
    new value (a permalink minted or revoked: the key itself is never recorded)."""
    detail = schedule.model_dump(mode="json", exclude={"caller"})
    if change is not None:
        detail["change"] = change
    tenant = deps.tenancy.tenant_of(caller)
    record(schedule_event(action, schedule.schedule_id, tenant, request_id, caller.user_id, deps.clock(), detail), deps)


def record_pause(schedule: Schedule, caller: Caller, deps: AuditDependencies) -> None:
    """``schedule`` paused by the service on its own (at a firing: its export type gone, its
    access rule no longer admitting the stored claims; at a run's end: failures in a row): a
    change by ``system`` with the reason, in the tenant of its owner (``caller``, the claims stored
    with it). Recorded once however often the firing or the run's end that paused it is delivered:
    the event's id is the run that caused it, or else the pause's moment."""
    reason = schedule.paused_reason
    detail = {
        **schedule.model_dump(mode="json", exclude={"caller"}),
        "change": "paused",
        "reason": reason.model_dump(mode="json") if reason is not None else None,
    }
    caused_by = reason.task_id if reason is not None else None
    event_id = f"paused-after-{caused_by}" if caused_by else f"paused-{schedule.updated_at.isoformat()}"
    tenant = deps.tenancy.tenant_of(caller)
    event = schedule_event(
        AuditAction.SCHEDULE_CHANGED, schedule.schedule_id, tenant, event_id, SYSTEM, deps.clock(), detail
    )
    record(event, deps)
