"""Writing and reading the audit trail (docs/audit.md): append an event to its tenant's daily
chain, read a tenant's records a page at a time, its usage per day, and its rows-per-day quota."""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from exports.audit.events import delivery_retry_event, file_delivery_event, link_event, mail_event
from exports.audit.model import AuditEvent, AuditRecord, TenantCount, Usage, after
from exports.audit.ports import AlreadyRecorded, AuditLog, ChainMoved, NotAuditAdmin, TenantQuotaExceeded
from exports.audit.tenancy import Tenancy
from exports.core.caller import Caller
from exports.core.config.audit import Audit, UsageMetric
from exports.core.config.limits import Admission
from exports.core.deliveries import Delivery
from exports.core.errors import InvalidRequest, ServiceUnavailable
from exports.core.ports import BusinessMetrics
from exports.core.task import Task

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuditDependencies:
    """What the trail's writers and readers use: the store, the tenants' declaration, metrics."""

    log: AuditLog
    tenancy: Tenancy
    metrics: BusinessMetrics
    clock: Callable[[], datetime]


def record(event: AuditEvent, deps: AuditDependencies) -> AuditRecord | None:
    """Append ``event`` to its tenant's chain of its day; None if it was recorded before. An
    export's end counts its usage into the day and into the tenant's usage metrics."""
    expires_at = deps.tenancy.expires_at(event.tenant, event.day)
    for _ in range(Audit.APPEND_ATTEMPTS):
        chained = after(deps.log.tip(event.tenant, event.day), event)
        try:
            deps.log.add(chained, event.usage, event.counts, expires_at)
        except AlreadyRecorded:
            return None
        except ChainMoved:
            continue  # another writer took this number: chain after theirs
        if event.usage is not None:
            _count(event.tenant, event.usage, deps.metrics)
        return chained
    raise ServiceUnavailable(f"the audit chain of {event.tenant} {event.day} is too busy; try again")


def _count(tenant: str, usage: Usage, metrics: BusinessMetrics) -> None:
    dimensions = {UsageMetric.TENANT_DIMENSION: tenant}
    metrics.add(UsageMetric.EXPORTS, usage.exports, dimensions=dimensions)
    metrics.add(UsageMetric.ROWS, usage.rows, dimensions=dimensions)
    metrics.add(UsageMetric.BYTES, usage.bytes, unit="Bytes", dimensions=dimensions)
    metrics.add(UsageMetric.CPU_SECONDS, usage.cpu_seconds, unit="Seconds", dimensions=dimensions)


def admin_tenant(caller: Caller, tenancy: Tenancy) -> str:
    """The tenant whose trail ``caller`` may read: their own, if they are in the admin group;
    :class:`NotAuditAdmin` otherwise."""
    if not tenancy.is_admin(caller):
        raise NotAuditAdmin(f"reading the audit trail needs the {tenancy.tenants.admin_group!r} group and a tenant")
    return tenancy.tenant_of(caller)


@dataclass(frozen=True)
class TrailQuery:
    """Which records to list: the days ``day_from`` to ``day_to``, and optionally only one
    action, actor or subject (a task, a schedule)."""

    day_from: date
    day_to: date
    action: str | None = None
    actor: str | None = None
    subject: str | None = None

    def check(self) -> None:
        """:class:`InvalidRequest` for a range backwards or longer than :data:`Audit.DAYS_MAX`."""
        if self.day_to < self.day_from:
            raise InvalidRequest("to is before from", field="to")
        if (self.day_to - self.day_from).days + 1 > Audit.DAYS_MAX:
            raise InvalidRequest(f"at most {Audit.DAYS_MAX} days at once", field="to")

    def matches(self, values: dict[str, Any]) -> bool:
        """Whether a record passes the filters given."""
        wanted = {"action": self.action, "actor": self.actor, "subject": self.subject}
        return all(values.get(name) == value for name, value in wanted.items() if value is not None)


@dataclass(frozen=True)
class TrailPage:
    """A page of records, by day then number; ``cursor`` reads on (None: the last page)."""

    records: list[dict[str, Any]]
    cursor: str | None


def read_trail(tenant: str, query: TrailQuery, limit: int, cursor: str | None, deps: AuditDependencies) -> TrailPage:
    """The tenant's records of the query's days, ``limit`` at most, from ``cursor`` on. Records
    are given as stored (a changed record reads as changed), so the caller can verify them."""
    query.check()
    day, after_seq = _position(cursor, query)
    found: list[dict[str, Any]] = []
    while day <= query.day_to:
        wanted = limit - len(found)
        stored = deps.log.records(tenant, day, after_seq, wanted)
        for item in stored:
            after_seq = item.seq
            if query.matches(item.values):
                found.append(item.values)
        if len(found) >= limit:
            return TrailPage(found, _cursor(day, after_seq))
        if len(stored) < wanted:  # the day is read to its end
            day, after_seq = day + timedelta(days=1), 0
    return TrailPage(found, None)


def _cursor(day: date, seq: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"day": day.isoformat(), "seq": seq}).encode()).decode()


def _position(cursor: str | None, query: TrailQuery) -> tuple[date, int]:
    if cursor is None:
        return query.day_from, 0
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        day, seq = date.fromisoformat(values["day"]), int(values["seq"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise InvalidRequest("next_token is not one this API gave", field="next_token") from None
    if not query.day_from <= day <= query.day_to:
        raise InvalidRequest("next_token belongs to another range of days", field="next_token")
    return day, seq


def usage_by_day(tenant: str, query: TrailQuery, deps: AuditDependencies) -> list[tuple[date, Usage]]:
    """The tenant's usage on each day of the query's range."""
    query.check()
    days = (query.day_from + timedelta(days=offset) for offset in range((query.day_to - query.day_from).days + 1))
    return [(day, deps.log.usage(tenant, day)) for day in days]


def check_submit_quotas(tenant: str, deps: AuditDependencies) -> None:
    """:class:`TenantQuotaExceeded` while the tenant has its ``max_active_tasks`` running (as
    the trail counted them: submissions and ends recorded so far, a second or so behind), or
    once its exports of today hold its ``max_rows_per_day``."""
    policy = deps.tenancy.policy(tenant)
    if policy.max_active_tasks is not None:
        active = deps.log.counts(tenant).get(TenantCount.ACTIVE_TASKS, 0)
        if active >= policy.max_active_tasks:
            raise TenantQuotaExceeded(
                f"your tenant has {active} exports active, its quota is {policy.max_active_tasks}",
                quota="max_active_tasks",
                retry_after=Admission.RETRY_AFTER_QUOTA_SEC,
            )
    limit = policy.max_rows_per_day
    if limit is None:
        return
    now = deps.clock()
    used = deps.log.usage(tenant, now.date()).rows
    if used >= limit:
        midnight = datetime.combine(now.date() + timedelta(days=1), time(), tzinfo=now.tzinfo)
        raise TenantQuotaExceeded(
            f"your tenant exported {used} rows today, its quota is {limit}; it resets at 00:00 UTC",
            quota="max_rows_per_day",
            retry_after=max(1, int((midnight - now).total_seconds())),
        )


def check_schedule_quota(tenant: str, deps: AuditDependencies) -> None:
    """:class:`TenantQuotaExceeded` while the tenant has its ``max_schedules``."""
    limit = deps.tenancy.policy(tenant).max_schedules
    if limit is None:
        return
    schedules = deps.log.counts(tenant).get(TenantCount.SCHEDULES, 0)
    if schedules >= limit:
        raise TenantQuotaExceeded(
            f"your tenant has {schedules} schedules, its quota is {limit}; delete one first",
            quota="max_schedules",
            retry_after=Admission.RETRY_AFTER_QUOTA_SEC,
        )


def record_link(
    task: Task,
    user_id: str,
    request_id: str,
    expires_at: datetime,
    through_download: bool,
    deps: AuditDependencies,
    via: Mapping[str, Any] | None = None,
) -> None:
    """A presigned link to ``task``'s file handed to ``user_id`` (as the task's ``download_url``,
    or as the redirect of GET /download, of a schedule's latest file or of its permalink, which
    ``via`` names): recorded before it is handed out."""
    record(link_event(task, request_id, user_id, deps.clock(), expires_at, through_download, via), deps)


def record_mail(
    task: Task,
    sent_to: Sequence[str],
    refused: Sequence[str],
    link_expires_at: datetime | None,
    error: str | None,
    deps: AuditDependencies,
    attached: bool = False,
) -> None:
    """A scheduled run's mail, sent (or not: ``error``) to ``sent_to``, in the run's tenant;
    ``attached``: it carried the file (no link)."""
    record(mail_event(task, sent_to, refused, deps.clock(), link_expires_at, error, attached), deps)


def record_delivery_retry(
    task: Task, delivery: Delivery, request_id: str, user_id: str, deps: AuditDependencies
) -> None:
    """A FAILED delivery that ``user_id`` asked to be tried again, in the task's tenant."""
    record(delivery_retry_event(task, delivery, request_id, user_id, deps.clock()), deps)


def record_file_delivery(task: Task, delivery: Delivery, kind: str | None, deps: AuditDependencies) -> None:
    """A file delivery to a destination that ended (delivered or failed), in the task's tenant."""
    record(file_delivery_event(task, delivery, kind, deps.clock()), deps)
