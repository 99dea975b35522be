"""Checking an audit trail's chains (docs/audit.md) on the client's side: the records as
``GET /v1/audit`` gives them, hashed again here, so a verdict does not rest on the service's word.

Each tenant's records of one day are numbered from 1; record ``n`` carries ``prev_hash``, the hash
of record ``n - 1`` (64 zeros for the first), and ``hash``, the SHA-256 of its canonical JSON
without ``hash`` (keys sorted, no spaces, UTF-8).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

GENESIS: Final = "0" * 64
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


def record_hash(record: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of the record's canonical JSON without its ``hash``."""
    body = {name: record[name] for name in HASHED_FIELDS}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    """How many records and days were checked, each day's last record (``seq``, ``hash``: keep
    them elsewhere to notice a day cut short later), and the first broken record (None: every
    chain holds)."""

    records: int
    broken: Broken | None
    ends: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every chain holds."""
        return self.broken is None


def verify(records: Iterable[Mapping[str, Any]]) -> Verdict:
    """Check the chains of ``records`` (every record of each day, by day then number)."""
    count = 0
    ends: dict[tuple[str, str], tuple[int, str]] = {}
    for record in records:
        count += 1
        tenant, day, seq = str(record.get("tenant")), str(record.get("day")), record.get("seq")
        number = seq if isinstance(seq, int) else -1
        previous = ends.get((tenant, day))
        if not set(HASHED_FIELDS) <= set(record) or "hash" not in record:
            return Verdict(count, Broken(tenant, day, number, "fields are missing"), ends)
        expected = previous[0] + 1 if previous else 1
        if number != expected:
            reason = f"expected record #{expected} here (a record is missing or out of place)"
            return Verdict(count, Broken(tenant, day, number, reason), ends)
        if record["prev_hash"] != (previous[1] if previous else GENESIS):
            reason = "its prev_hash is not the previous record's hash (that record was changed or removed)"
            return Verdict(count, Broken(tenant, day, number, reason), ends)
        if record_hash(record) != record["hash"]:
            return Verdict(count, Broken(tenant, day, number, "its content does not match its hash"), ends)
        ends[(tenant, day)] = (number, str(record["hash"]))
    return Verdict(count, None, ends)
