"""What the audit trail records of a destination: its creation, changes, deletion and
verifications, by the user who made them (never a secret: a destination holds none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exports.audit.events import destination_event
from exports.audit.model import AuditAction
from exports.audit.service import AuditDependencies, record
from exports.core.caller import Caller
from exports.finishing.destinations.model import Destination


def record_destination(
    action: AuditAction,
    destination: Destination,
    caller: Caller,
    request_id: str,
    deps: AuditDependencies,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """A destination created, changed, deleted or verified by ``caller``: where files go (never a
    secret: a destination holds none) and, for a verification, what it found (``extra``)."""
    detail = {**destination.model_dump(mode="json"), **(extra or {})}
    event = destination_event(
        action, destination.destination_id, destination.tenant, request_id, caller.user_id, deps.clock(), detail
    )
    record(event, deps)
