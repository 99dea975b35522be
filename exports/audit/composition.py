"""The audit trail's composition: its table and the declaration's tenants."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from exports.core.aws.clients import aws_client
from exports.core.clock import utc_now

if TYPE_CHECKING:
    from exports.audit.service import AuditDependencies
    from exports.core.ports import BusinessMetrics


def compose_audit(metrics: BusinessMetrics, table: str, exports_config: str | None) -> AuditDependencies:
    """The audit trail on its table, with the declaration's ``[tenants]`` (docs/audit.md)."""
    from exports.audit.dynamodb_audit import DynamoAuditLog
    from exports.audit.service import AuditDependencies
    from exports.audit.tenancy import load_tenancy

    return AuditDependencies(
        log=DynamoAuditLog(aws_client("dynamodb"), table),
        tenancy=load_tenancy(exports_config),
        metrics=metrics,
        clock=utc_now,
    )


def compose_audit_function(
    metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ
) -> tuple[AuditDependencies, int]:
    """The audit function's trail, and the worker's memory its usage is measured by."""
    from exports.core.config.settings import AuditSettings

    settings = AuditSettings.from_env(environ)
    return compose_audit(metrics, settings.audit_table, settings.exports_config), settings.worker_memory_mb
