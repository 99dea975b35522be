"""The audit trail and usage per tenant (docs/audit.md): the audit table's keys, retention,
the stream mapping of its function, and the usage metrics."""

from __future__ import annotations

from typing import Final


class AuditTable:
    """Key schema of the audit table: under ``<tenant>#<day>`` the day's chained records
    (``r#<seq>``), its usage counters (``usage``) and one marker per recorded event
    (``e#<event id>``, so an event delivered twice is recorded once)."""

    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"
    RECORD_PREFIX: Final = "r#"
    EVENT_PREFIX: Final = "e#"
    USAGE_SORT_KEY: Final = "usage"
    # The tenant's running counts (active tasks, schedules): ``<tenant>#counts`` / ``counts``.
    COUNTS_SUFFIX: Final = "#counts"
    COUNTS_SORT_KEY: Final = "counts"
    # The record as its canonical JSON text: exactly what its hash covers.
    RECORD_ATTRIBUTE: Final = "record"


class Audit:
    """Retention, reading and writing of the audit trail."""

    # How long a day's records are kept after the day ends, unless the deployment's [tenants]
    # declaration says otherwise (for every tenant, or for one).
    RETENTION_DAYS_DEFAULT: Final = 400
    RETENTION_DAYS_MIN: Final = 1
    RETENTION_DAYS_MAX: Final = 3650
    # The claim whose value is the caller's tenant, and the group whose members read their
    # tenant's audit trail (GET /v1/audit), unless the declaration names others.
    TENANT_CLAIM_DEFAULT: Final = "custom:tenant_id"
    ADMIN_GROUP_DEFAULT: Final = "admin"
    # The tenant of a caller whose token carries no tenant claim (a deployment without tenants).
    NO_TENANT: Final = "-"
    # GET /v1/audit: records per page, and the most days one request reads.
    PAGE_DEFAULT: Final = 100
    PAGE_MAX: Final = 1000
    DAYS_MAX: Final = 31
    # How often an append reads the chain's end again after another writer took its place.
    APPEND_ATTEMPTS: Final = 20
    # The audit function's stream mapping (its retries: exports.core.config.retry.AUDIT_BATCH_RETRY).
    BATCH_SIZE: Final = 100
    BATCHING_WINDOW_SEC: Final = 1
    FUNCTION_TIMEOUT_SEC: Final = 60
    # Lambda gives a function one vCPU per this many MB of memory: a worker second at M MB is
    # M / this many CPU-seconds-equivalent.
    MB_PER_VCPU: Final = 1769


class UsageMetric:
    """Usage per tenant (EMF, dimension :data:`TENANT_DIMENSION`), written as each export ends."""

    TENANT_DIMENSION: Final = "tenant"
    EXPORTS: Final = "TenantExports"
    ROWS: Final = "TenantRows"
    BYTES: Final = "TenantBytes"
    CPU_SECONDS: Final = "TenantCpuSeconds"
    # An audit record could not be written (the alarm pages: a gap in the trail).
    AUDIT_WRITE_FAILED: Final = "AuditWriteFailed"
