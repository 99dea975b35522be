"""What destinations need from outside: their store (DynamoDB,
:mod:`exports.finishing.destinations.dynamodb_destinations`) and their secrets' vault (Secrets
Manager, :mod:`exports.finishing.destinations.secrets_manager`). What each kind needs is its
adapter's (:class:`exports.finishing.destinations.kind.KindAdapter`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from exports.core.errors import ExportsError
from exports.finishing.destinations.model import Destination
from exports.finishing.destinations.secrets import DestinationSecrets


class DestinationNotFound(ExportsError):
    """No such destination in the caller's tenant: another tenant's looks the same (404).
    ``field`` names where a request body named it (``destinations.<i>``)."""

    code = "DESTINATION_NOT_FOUND"

    def __init__(self, destination_id: str, field: str | None = None) -> None:
        super().__init__(f"destination {destination_id} not found", destination_id=destination_id)
        self.destination_id = destination_id
        self.field = field


class DestinationLimitReached(ExportsError):
    """The tenant has as many destinations as a tenant may have (429)."""

    code = "DESTINATION_LIMIT_REACHED"

    def __init__(self, limit: int) -> None:
        super().__init__(f"your tenant has {limit} destinations, the most it may have; delete one first", limit=limit)
        self.limit = limit


class SecretMissing(ExportsError):
    """A destination's secret is not in the vault (deleted outside the service)."""

    code = "DESTINATION_SECRET_MISSING"


@dataclass(frozen=True)
class DestinationPage:
    """A page of a tenant's destinations, newest first."""

    destinations: Sequence[Destination]
    cursor: str | None = None


class DestinationStore(Protocol):
    """A tenant's destinations; every write is conditional."""

    def create(self, destination: Destination, max_per_tenant: int) -> None:
        """Store a new destination, counting it against its tenant's cap
        (:class:`DestinationLimitReached`; an existing id: :class:`ConditionFailed`)."""

    def get(self, tenant: str, destination_id: str) -> Destination | None:
        """The tenant's destination, or None (also for another tenant's id)."""

    def list_for_tenant(self, tenant: str, limit: int, cursor: str | None) -> DestinationPage:
        """The tenant's destinations, newest first (a query of its partition, never a scan)."""

    def replace(self, before: Destination, after: Destination) -> Destination:
        """Write ``after`` (its version one above ``before``'s) if the stored destination is still
        ``before``'s version; :class:`exports.core.errors.ConditionFailed` otherwise."""

    def delete(self, destination: Destination) -> None:
        """Remove it and give its place in the tenant's cap back (nothing to do if it is gone)."""


class SecretVault(Protocol):
    """One secret per destination."""

    def put(self, destination_id: str, secrets: DestinationSecrets) -> str:
        """Store the destination's secrets (creating or replacing them); their reference."""

    def get(self, secret_ref: str) -> DestinationSecrets:
        """The secrets at ``secret_ref`` (:class:`SecretMissing` when they are gone)."""

    def delete(self, secret_ref: str) -> None:
        """Schedule the secret's deletion (recoverable a few days; nothing to do if it is gone)."""
