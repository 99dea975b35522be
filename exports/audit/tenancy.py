"""Tenants as the deployment declares them (``[tenants]`` of the declaration file): a caller's
tenant, who reads a tenant's audit trail, and each tenant's quotas and audit retention.

Read on its own from the declaration file (:func:`load_tenancy`), without building the export
types: the audit function and the API's audit routes need this section only.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from exports.core.caller import Caller
from exports.core.config.audit import Audit
from exports.core.config.declarations import default_declaration_path
from exports.declared.model import AccessDecl, TenantPolicyDecl, TenantsDecl


@dataclass(frozen=True)
class TenantPolicy:
    """One tenant's quotas (None: no limit) and how long its audit records are kept."""

    audit_retention_days: int
    max_active_tasks: int | None
    max_rows_per_day: int | None
    max_schedules: int | None


@dataclass(frozen=True)
class Tenancy:
    """The ``[tenants]`` declaration, with the claim that lists a caller's groups (``[access]``)."""

    tenants: TenantsDecl
    groups_claim: str

    def tenant_of(self, caller: Caller) -> str:
        """The caller's tenant, from their token only; :data:`Audit.NO_TENANT` without the claim."""
        return caller.text(self.tenants.claim) or Audit.NO_TENANT

    def is_admin(self, caller: Caller) -> bool:
        """Whether the caller may read their tenant's audit trail (and a tenant to read)."""
        groups = caller.values(self.groups_claim) or []
        return self.tenants.admin_group in groups and self.tenant_of(caller) != Audit.NO_TENANT

    def policy(self, tenant: str) -> TenantPolicy:
        """The tenant's quotas and retention: its override's keys over the defaults'."""
        default = self.tenants.defaults
        own = self.tenants.overrides.get(tenant, TenantPolicyDecl())

        def pick(name: str) -> int | None:
            value: int | None = getattr(own, name)
            fallback: int | None = getattr(default, name)
            return value if value is not None else fallback

        return TenantPolicy(
            audit_retention_days=pick("audit_retention_days") or Audit.RETENTION_DAYS_DEFAULT,
            max_active_tasks=pick("max_active_tasks"),
            max_rows_per_day=pick("max_rows_per_day"),
            max_schedules=pick("max_schedules"),
        )

    def expires_at(self, tenant: str, day: date) -> datetime:
        """When the tenant's records of ``day`` expire: all at once, ``audit_retention_days``
        after the day ends, so a day's chain is never cut at its start."""
        end = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)
        return end + timedelta(days=self.policy(tenant).audit_retention_days)


def load_tenancy(path: Path | str | None) -> Tenancy:
    """The ``[tenants]`` and ``[access]`` sections of the declaration file at ``path`` (None:
    the one the repository ships); the declaration loader checks the whole file, this reads
    these two only."""
    raw = tomllib.loads(Path(path or default_declaration_path()).read_text(encoding="utf-8"))
    return Tenancy(
        tenants=TenantsDecl.model_validate(raw.get("tenants", {})),
        groups_claim=AccessDecl.model_validate(raw.get("access", {})).groups_claim,
    )
