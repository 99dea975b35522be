"""The audit API's response bodies (OpenAPI is generated from these)."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, Field


class AuditPage(BaseModel):
    """A page of the tenant's audit records, by day then number. A record changed in the store
    is shown as it now reads (its fields may then not fit this shape: it is given as it is)."""

    items: list[dict[str, Any]] = Field(
        description="Records as stored: tenant, day, seq, event_id, action, at, actor, subject, claims, detail,"
        " prev_hash and hash, the SHA-256 of the record's canonical JSON without `hash` (keys sorted, no spaces;"
        " `prev_hash` is the day's previous record's hash, 64 zeros for the first). Check them with"
        " `exportctl audit verify` (docs/audit.md)."
    )
    next_token: str | None = None


class UsageDay(BaseModel):
    """The tenant's usage on one day: exports ended, rows and bytes of their files, and worker
    time in CPU-seconds-equivalent."""

    day: date
    exports: int
    rows: int
    bytes: int
    cpu_seconds: float


class UsageList(BaseModel):
    """The tenant's usage per day of the range, in day order."""

    tenant: str
    items: list[UsageDay]
