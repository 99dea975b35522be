"""What the destination routes answer: a destination as its tenant sees it (never a secret; the
service's public key once, at creation; an S3 destination's trust and permissions policies to
paste), a page of them, and a verification's report."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from exports.finishing.destinations import keys
from exports.finishing.destinations.model import (
    Destination,
    DestinationKind,
    DestinationState,
    Encryption,
    Fingerprint,
    S3Target,
    SftpServer,
    SftpTarget,
    UseRule,
)
from exports.finishing.destinations.policies import permissions_policy, trust_policy
from exports.finishing.destinations.problems import ProblemStep
from exports.finishing.destinations.service import Verification


class SftpTargetView(SftpServer):
    """An SFTP destination's server, its pinned host key (or the one to confirm) and the
    fingerprint of the service's public key (the key itself is shown once, at creation)."""

    kind: Literal[DestinationKind.SFTP] = DestinationKind.SFTP
    host_key_fingerprint: Fingerprint | None = None
    offered_host_key_fingerprint: Fingerprint | None = None
    public_key_fingerprint: Fingerprint | None = None


class DestinationView(BaseModel):
    """One destination."""

    model_config = ConfigDict(frozen=True)

    destination_id: str
    name: str
    kind: DestinationKind
    state: DestinationState
    target: Annotated[S3Target | SftpTargetView, Field(discriminator="kind")]
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
        target = destination.target
        policies: dict[str, Any] = {}
        shown: S3Target | SftpTargetView
        if isinstance(target, SftpTarget):
            values = target.model_dump(exclude={"public_key"})
            fingerprint = keys.fingerprint(target.public_key) if target.public_key else None
            shown = SftpTargetView(**values, public_key_fingerprint=fingerprint)
        else:
            shown = target
            if principal_arn:
                policies = {"trust_policy": trust_policy(target, principal_arn)}
            policies["permissions_policy"] = permissions_policy(target)
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
            **policies,
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
