"""The audit trail's records and their chain (docs/audit.md). Pure: no I/O, no clock.

Each tenant's records of one UTC day form a chain: record ``seq`` (1, 2, ...) carries the hash
of record ``seq - 1`` (:data:`GENESIS` for the first), and its own hash is the SHA-256 of its
canonical JSON (every field but ``hash``, keys sorted, no spaces). Changing, removing or
reordering one record breaks the chain at that record (or, if its hash was recomputed too, at
the next one): :func:`verify` names the first record that does not hold.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any, Final

# The previous hash of a day's first record.
GENESIS: Final = "0" * 64
# The fields a record's hash covers, in no particular order (the canonical form sorts them).
HASHED_FIELDS: Final = (
    "tenant",
    "day",
    "seq",
    "event_id",
    "action",
    "at",
    "actor",
    "subject",
    "claims",
    "detail",
    "prev_hash",
)


class AuditAction(StrEnum):
    """What a record records."""

    EXPORT_SUBMITTED = "export.submitted"
    EXPORT_COMPLETED = "export.completed"
    EXPORT_FAILED = "export.failed"
    EXPORT_CANCELLED = "export.cancelled"
    EXPORT_TIMED_OUT = "export.timed_out"
    # A presigned link to a file handed out (GET /v1/exports/{id}), and a download through
    # GET /v1/exports/{id}/download (a link handed out as a redirect).
    LINK_MINTED = "link.minted"
    DOWNLOAD = "download"
    # A callback delivered (or given up) with the file's link in it.
    DELIVERY_MADE = "delivery.made"
    DELIVERY_FAILED = "delivery.failed"
    # A FAILED file delivery its owner asked to be tried again (docs/destinations.md).
    DELIVERY_RETRIED = "delivery.retried"
    SCHEDULE_CREATED = "schedule.created"
    SCHEDULE_CHANGED = "schedule.changed"
    SCHEDULE_DELETED = "schedule.deleted"
    # A tenant's delivery destination (docs/destinations.md) created, changed (a host key
    # confirmed too), deleted, or verified (with what the probe found).
    DESTINATION_CREATED = "destination.created"
    DESTINATION_CHANGED = "destination.changed"
    DESTINATION_DELETED = "destination.deleted"
    DESTINATION_VERIFIED = "destination.verified"


@dataclass(frozen=True)
class Usage:
    """What one export cost a tenant: counted into the tenant's day as the export ends."""

    exports: int = 0
    rows: int = 0
    bytes: int = 0
    cpu_seconds: float = 0.0

    def plus(self, other: Usage) -> Usage:
        """Both together."""
        return Usage(
            exports=self.exports + other.exports,
            rows=self.rows + other.rows,
            bytes=self.bytes + other.bytes,
            cpu_seconds=self.cpu_seconds + other.cpu_seconds,
        )


class TenantCount(StrEnum):
    """What the tenant's running counts count (its quotas ``max_active_tasks``, ``max_schedules``)."""

    ACTIVE_TASKS = "active_tasks"
    SCHEDULES = "schedules"


@dataclass(frozen=True)
class AuditEvent:
    """Something to record, not yet placed in a chain. ``event_id`` is the same however often
    the event is delivered (a task's status change, a request's id): it is recorded once."""

    event_id: str
    tenant: str
    action: AuditAction
    at: datetime
    # Who: the user, or ``system`` for what the service did on its own (a timeout).
    actor: str
    # What: the task or schedule.
    subject: str
    # The claims the action used (what the export type bound from the token).
    claims: Mapping[str, Any] = field(default_factory=dict)
    # Type, format, filters, columns, rows, bytes, sha256, outcome, destination, ...
    detail: Mapping[str, Any] = field(default_factory=dict)
    # Counted into the tenant's usage of the day (an export's end).
    usage: Usage | None = None
    # Added to the tenant's running counts (:class:`TenantCount`): +1 active task at a submission,
    # -1 at its end; +1 schedule at a create, -1 at a delete.
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def day(self) -> date:
        """The UTC day whose chain the event joins (``at`` is aware UTC)."""
        return self.at.date()


@dataclass(frozen=True)
class AuditRecord:
    """One link of a tenant's daily chain, as stored and as GET /v1/audit shows it."""

    tenant: str
    day: str
    seq: int
    event_id: str
    action: str
    at: str
    actor: str
    subject: str
    claims: dict[str, Any]
    detail: dict[str, Any]
    prev_hash: str
    hash: str

    def as_json(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return {name: getattr(self, name) for name in (*HASHED_FIELDS, "hash")}

    def text(self) -> str:
        """The record as it is stored: its canonical JSON with the hash."""
        return canonical(self.as_json())

    @classmethod
    def parse(cls, text: str) -> AuditRecord:
        """A stored record (:meth:`text`); :class:`ValueError` if it is not one."""
        values = json.loads(text)
        if not isinstance(values, dict) or set(values) != {*HASHED_FIELDS, "hash"}:
            raise ValueError("not an audit record")
        return cls(**values)


def canonical(values: Mapping[str, Any]) -> str:
    """The one JSON text of ``values``: keys sorted, no spaces, non-ASCII kept as is."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(values: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of a record's canonical JSON without its ``hash``."""
    body = {name: values[name] for name in HASHED_FIELDS}
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


def chained(event: AuditEvent, seq: int, prev_hash: str) -> AuditRecord:
    """``event`` as record ``seq`` of its tenant's day, after the record whose hash is
    ``prev_hash`` (:data:`GENESIS` for the first)."""
    # Through JSON once: what is hashed is exactly what a reader parses back.
    values: dict[str, Any] = json.loads(
        canonical(
            {
                "tenant": event.tenant,
                "day": event.day.isoformat(),
                "seq": seq,
                "event_id": event.event_id,
                "action": event.action.value,
                "at": event.at.isoformat().replace("+00:00", "Z"),
                "actor": event.actor,
                "subject": event.subject,
                "claims": dict(event.claims),
                "detail": dict(event.detail),
                "prev_hash": prev_hash,
            }
        )
    )
    return AuditRecord(**values, hash=record_hash(values))


def after(tip: AuditRecord | None, event: AuditEvent) -> AuditRecord:
    """``event`` chained after ``tip``, the last record of its day (None: the day has none)."""
    if tip is None:
        return chained(event, 1, GENESIS)
    return chained(event, tip.seq + 1, tip.hash)


@dataclass(frozen=True)
class Broken:
    """The first record that does not hold, and why."""

    tenant: str
    day: str
    seq: int
    reason: str

    def __str__(self) -> str:
        return f"{self.tenant} {self.day} #{self.seq}: {self.reason}"


@dataclass(frozen=True)
class Verdict:
    """What :func:`verify` found: how many records and days it checked, and the first broken
    record (None: every chain holds)."""

    records: int
    days: int
    broken: Broken | None

    @property
    def ok(self) -> bool:
        """Whether every chain holds."""
        return self.broken is None


def verify(records: Iterable[Mapping[str, Any]]) -> Verdict:
    """Check the chains of ``records`` (as GET /v1/audit lists them: by tenant and day, each
    day's in order of ``seq``, every record of each day given): each day starts at 1 after
    :data:`GENESIS`, numbers follow one another, each record names its predecessor's hash and
    hashes to its own."""
    count = 0
    days: set[tuple[str, str]] = set()
    previous: Mapping[str, Any] | None = None
    for values in records:
        count += 1
        tenant, day, seq = str(values.get("tenant")), str(values.get("day")), values.get("seq")
        where = (tenant, day)
        number = seq if isinstance(seq, int) else -1
        first = where not in days
        days.add(where)
        if not set(HASHED_FIELDS) <= set(values) or "hash" not in values:
            return Verdict(count, len(days), Broken(tenant, day, number, "fields are missing"))
        expected_seq = 1 if first else int(previous["seq"]) + 1 if previous is not None else 1
        if number != expected_seq:
            reason = f"expected record #{expected_seq} here (a record is missing or out of place)"
            return Verdict(count, len(days), Broken(tenant, day, number, reason))
        expected_prev = GENESIS if first or previous is None else previous["hash"]
        if values["prev_hash"] != expected_prev:
            reason = "its prev_hash is not the previous record's hash (that record was changed or removed)"
            return Verdict(count, len(days), Broken(tenant, day, number, reason))
        if record_hash(values) != values["hash"]:
            return Verdict(count, len(days), Broken(tenant, day, number, "its content does not match its hash"))
        previous = values
    return Verdict(count, len(days), None)
