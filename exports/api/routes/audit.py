"""The audit routes: an audit admin reads their tenant's trail and usage (docs/audit.md).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

from datetime import date
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from exports.api import app as api
from exports.api.app import app, tracer
from exports.audit import service as audit
from exports.audit.api_models import AuditPage, UsageDay, UsageList
from exports.audit.ports import AuditNotKept
from exports.audit.service import AuditDependencies, TrailQuery
from exports.config.api import API_VERSION_PREFIX
from exports.config.audit import Audit
from exports.http.envelope import (
    caller_of,
    refuse_unknown_query,
)
from exports.http.openapi import (
    responses,
)


def _audit_reader() -> tuple[str, AuditDependencies]:
    """The audit trail and the tenant the caller may read it for (an admin's own)."""
    deps = api.dependencies().audit
    if deps is None:
        raise AuditNotKept("this deployment keeps no audit trail")
    return audit.admin_tenant(caller_of(app.current_event), deps.tenancy), deps


_AUDIT_RESPONSES = responses(
    {200: {"description": "A page of the tenant's audit records, by day then number."}},
    (403, "The caller is not in the audit admin group, or has no tenant (code NOT_AUDIT_ADMIN)."),
    (404, "This deployment keeps no audit trail."),
    422,
)
_USAGE_RESPONSES = responses(
    {200: {"description": "The tenant's usage per day."}},
    (403, "The caller is not in the audit admin group, or has no tenant (code NOT_AUDIT_ADMIN)."),
    (404, "This deployment keeps no audit trail."),
    422,
)
_AUDIT_QUERY = frozenset({"from", "to", "action", "actor", "subject", "limit", "next_token"})
_USAGE_QUERY = frozenset({"from", "to"})


def _days(day_from: date | None, day_to: date | None) -> tuple[date, date]:
    today = api.dependencies().clock().date()
    return day_from or day_to or today, day_to or today


@app.get(
    f"{API_VERSION_PREFIX}/audit",
    summary="Read your tenant's audit trail",
    description="For the deployment's audit admin group only: the records of the caller's tenant (exports, links,"
    " downloads, deliveries, schedule changes) of the days `from` to `to` (UTC, default today, at most 31 days),"
    " by day then number, as stored, with their hashes; `action`, `actor` and `subject` filter. Another tenant's"
    " records are never shown.",
    tags=["audit"],
    responses=_AUDIT_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def read_audit(
    day_from: Annotated[date | None, Query(alias="from", description="First day (UTC), YYYY-MM-DD.")] = None,
    day_to: Annotated[date | None, Query(alias="to", description="Last day (UTC), YYYY-MM-DD.")] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Only this action (`export.completed`, ...).")
    ] = None,
    actor: Annotated[str | None, Query(max_length=256, description="Only this user's (or `system`).")] = None,
    subject: Annotated[str | None, Query(max_length=64, description="Only this task's or schedule's.")] = None,
    limit: Annotated[int, Query(ge=1, le=Audit.PAGE_MAX)] = Audit.PAGE_DEFAULT,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
) -> AuditPage:
    """A page of the admin's tenant's records."""
    refuse_unknown_query(app.current_event, _AUDIT_QUERY)
    tenant, deps = _audit_reader()
    first, last = _days(day_from, day_to)
    query = TrailQuery(first, last, action=action, actor=actor, subject=subject)
    page = audit.read_trail(tenant, query, limit, next_token, deps)
    return AuditPage(items=page.records, next_token=page.cursor)


@app.get(
    f"{API_VERSION_PREFIX}/audit/usage",
    summary="Your tenant's usage per day",
    description="For the deployment's audit admin group only: exports ended, rows, bytes and CPU-seconds-equivalent"
    " of the caller's tenant on each day from `from` to `to` (UTC, default today, at most 31 days).",
    tags=["audit"],
    responses=_USAGE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def read_usage(
    day_from: Annotated[date | None, Query(alias="from", description="First day (UTC), YYYY-MM-DD.")] = None,
    day_to: Annotated[date | None, Query(alias="to", description="Last day (UTC), YYYY-MM-DD.")] = None,
) -> UsageList:
    """The admin's tenant's usage per day."""
    refuse_unknown_query(app.current_event, _USAGE_QUERY)
    tenant, deps = _audit_reader()
    first, last = _days(day_from, day_to)
    days = audit.usage_by_day(tenant, TrailQuery(first, last), deps)
    items = [
        UsageDay(day=day, exports=u.exports, rows=u.rows, bytes=u.bytes, cpu_seconds=u.cpu_seconds) for day, u in days
    ]
    return UsageList(tenant=tenant, items=items)
