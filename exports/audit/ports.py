"""The audit store as the audit service sees it, and the errors of the trail."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Protocol

from exports.audit.model import AuditRecord, Usage
from exports.core.errors import ConditionFailed, ExportsError, Overloaded


class AlreadyRecorded(ExportsError):
    """The event is in the trail already (delivered twice): nothing was written."""

    code = "ALREADY_RECORDED"


class ChainMoved(ConditionFailed):
    """Another writer appended to the day's chain first: read its end again and retry."""


class NotAuditAdmin(ExportsError):
    """The caller is not in the deployment's audit admin group, or has no tenant (403)."""

    code = "NOT_AUDIT_ADMIN"


class AuditNotKept(ExportsError):
    """The deployment names no audit table (404)."""

    code = "NOT_FOUND"


class TenantQuotaExceeded(Overloaded):
    """The caller's tenant has used a quota (429, ``TENANT_QUOTA_EXCEEDED``); ``retry_after``
    says when to try again (the day's end, for rows per day)."""

    def __init__(self, message: str, quota: str, retry_after: int) -> None:
        super().__init__(message, code="TENANT_QUOTA_EXCEEDED", retry_after=retry_after)
        self.details["quota"] = quota


@dataclass(frozen=True)
class StoredRecord:
    """One stored record as read back: its number in the chain and its JSON values, whatever
    they now say (a record changed in the table reads as changed, for :func:`verify` to see)."""

    seq: int
    values: dict[str, Any]


class AuditLog(Protocol):
    """The durable audit trail: each tenant's chained records and usage per day."""

    def tip(self, tenant: str, day: date) -> AuditRecord | None:
        """The last record of the tenant's day (read strongly consistent), or None."""

    def add(self, record: AuditRecord, usage: Usage | None, counts: Mapping[str, int], expires_at: datetime) -> None:
        """Append ``record`` (count ``usage`` into its day, ``counts`` into the tenant's running
        counts) in one conditional write: :class:`AlreadyRecorded` if its event is in the trail,
        :class:`ChainMoved` if its number is taken."""

    def records(self, tenant: str, day: date, after_seq: int, limit: int) -> list[StoredRecord]:
        """Up to ``limit`` records of the tenant's day after number ``after_seq``, in order."""

    def usage(self, tenant: str, day: date) -> Usage:
        """The tenant's usage of ``day`` so far."""

    def counts(self, tenant: str) -> dict[str, int]:
        """The tenant's running counts (active tasks, schedules), as recorded so far."""
