"""What the destination routes answer: a destination as its tenant sees it (never a secret; the
service's public key once, at creation; an S3 destination's trust and permissions policies to
paste), a page of them, and a verification's report."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from exports.finishing.destinations import registry
from exports.finishing.destinations.model import Destination, DestinationKind, DestinationState, Encryption, UseRule
from exports.finishing.destinations.problems import ProblemStep
from exports.finishing.destinations.service import Verification

if TYPE_CHECKING:
    TargetView = BaseModel
else:
    # Any registered kind's view of its target, by its ``kind``.
    TargetView = registry.one_of(kind.view for kind in registry.KINDS.values())


class DestinationView(BaseModel):
    """One destination."""

    model_config = ConfigDict(frozen=True)

    destination_id: str
    name: str
    kind: DestinationKind
    state: DestinationState
    target: TargetView
    encryption: Encryption
    use: UseRule | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime
    # S3: the trust policy of the customer's role (our principal, this destination's ExternalId)
    # and the permissions it needs.
    trust_policy: dict[str, Any] | None = None
    permissions_policy: dict[str, Any] | None = None
    # SFTP with key authentication: the line to add to the user's authorized_keys; in the answer
    # of the creation only.
    public_key: str | None = None

    @classmethod
    def of(cls, destination: Destination, principal_arn: str | None, public_key: str | None = None) -> DestinationView:
        """The view of ``destination`` (with ``public_key`` when just created)."""
        shown, extras = registry.KINDS[destination.kind].shown(destination.target, principal_arn)
        return cls(
            destination_id=destination.destination_id,
            name=destination.name,
            kind=destination.kind,
            state=destination.state,
            target=shown,
            encryption=destination.encryption,
            use=destination.use,
            created_by=destination.created_by,
            created_at=destination.created_at,
            updated_at=destination.updated_at,
            public_key=public_key,
            **extras,
        )


class DestinationList(BaseModel):
    """A page of the tenant's destinations, newest first."""

    items: list[DestinationView]
    next_token: str | None = None


class VerificationView(BaseModel):
    """A verification: ``ok``, or the step that failed and what to do (``message``)."""

    ok: bool
    checked_at: datetime
    failed_step: ProblemStep | None = None
    message: str | None = None

    @classmethod
    def of(cls, verification: Verification) -> VerificationView:
        """The report of ``verification``."""
        return cls(
            ok=verification.ok,
            checked_at=verification.checked_at,
            failed_step=verification.step,
            message=verification.message,
        )
