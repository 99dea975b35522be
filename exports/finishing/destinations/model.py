"""A tenant's delivery destination: where finished files go (the customer's S3 bucket or SFTP
server), how they are encrypted on the way, and who may use it.

Validation lives on the models, so a destination that exists is a valid one: the API's 422 names
the field pydantic names. Secrets (an SFTP private key or password, a ZIP password) are never
here: they are in :mod:`exports.finishing.destinations.secrets`, kept in Secrets Manager, and the
destination only holds where (``secret_ref``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from exports.core.caller import AccessRule, Caller
from exports.core.config.destinations import Destinations
from exports.core.deliveries import DESTINATION_ID_PATTERN
from exports.finishing.destinations import registry
from exports.finishing.destinations.kind import TargetBase

DESTINATION_ID_PREFIX = "dst_"
_PGP_PUBLIC_HEADER = "-----BEGIN PGP PUBLIC KEY BLOCK-----"

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=Destinations.NAME_MAX_LENGTH)]

if TYPE_CHECKING:
    # The type checker sees any kind's target as the base every kind's extends.
    DestinationKind = str
    Target = TargetBase
else:
    # Where files go: one of the registered kinds (exports.finishing.destinations.registry).
    DestinationKind = registry.kind_enum()
    Target = registry.one_of(kind.target for kind in registry.KINDS.values())


class EncryptionKind(StrEnum):
    """What a file becomes on its way: as it is, OpenPGP to the customer's key, or an AES-256 ZIP."""

    NONE = "none"
    PGP = "pgp"
    ZIP = "zip"


class DestinationState(StrEnum):
    """ACTIVE destinations take files; an SFTP destination whose host key the service fetched
    waits in HOST_KEY_UNCONFIRMED until its manager confirms the fingerprint shown."""

    ACTIVE = "ACTIVE"
    HOST_KEY_UNCONFIRMED = "HOST_KEY_UNCONFIRMED"


class Encryption(BaseModel):
    """What a file becomes before delivery. ``pgp`` needs the customer's armoured public key
    (not a secret); ``zip``'s password is a secret, kept apart."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EncryptionKind = EncryptionKind.NONE
    pgp_public_key: str | None = Field(default=None, max_length=Destinations.PGP_PUBLIC_KEY_MAX_BYTES)

    @model_validator(mode="after")
    def _key(self) -> Encryption:
        if self.kind is EncryptionKind.PGP:
            if not (self.pgp_public_key or "").lstrip().startswith(_PGP_PUBLIC_HEADER):
                raise ValueError(f"pgp encryption needs pgp_public_key, an armoured key ({_PGP_PUBLIC_HEADER})")
        elif self.pgp_public_key is not None:
            raise ValueError("pgp_public_key is for pgp encryption only")
        return self


class UseRule(BaseModel):
    """Who of the tenant may name the destination on an export: the access-rule vocabulary of
    export types (``allow``): a group of the caller's in ``groups``, a scope in ``scopes``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: tuple[Annotated[str, StringConstraints(min_length=1, max_length=128)], ...] = ()
    scopes: tuple[Annotated[str, StringConstraints(min_length=1, max_length=256)], ...] = ()

    def rule(self, groups_claim: str) -> AccessRule:
        """As an :class:`AccessRule` reading the caller's groups from ``groups_claim``."""
        return AccessRule(groups=self.groups, scopes=self.scopes, groups_claim=groups_claim)


class Destination(BaseModel):
    """One destination of one tenant."""

    model_config = ConfigDict(frozen=True)

    destination_id: str = Field(pattern=DESTINATION_ID_PATTERN)
    tenant: str = Field(min_length=1)
    name: Name
    target: Target
    encryption: Encryption = Encryption()
    # Narrows who may use it, within the deployment's rule for using destinations (None: that rule).
    use: UseRule | None = None
    state: DestinationState = DestinationState.ACTIVE
    # Where its secrets are (a Secrets Manager ARN); None when it has none (S3 without ZIP).
    secret_ref: str | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime
    # Bumped by every write: writes are conditional on the version they read.
    version: int = 0

    @property
    def kind(self) -> str:
        """The name of its kind (``s3``, ``sftp``, ...)."""
        return self.target.kind

    @property
    def needs_secret(self) -> bool:
        """Whether it keeps a secret: a login of its kind's (SFTP), or a ZIP password."""
        return self.target.keeps_login or self.encryption.kind is EncryptionKind.ZIP

    @model_validator(mode="after")
    def _state(self) -> Destination:
        if self.target.awaiting_confirmation != (self.state is DestinationState.HOST_KEY_UNCONFIRMED):
            raise ValueError("a destination waits for confirmation exactly while its host key is not pinned")
        return self


class DestinationAccess(BaseModel):
    """The deployment's rules: who of a tenant manages its destinations (creates, changes,
    verifies, deletes) and who uses them (names them on exports and schedules)."""

    model_config = ConfigDict(frozen=True)

    manage: AccessRule
    use: AccessRule
    groups_claim: str = "cognito:groups"

    def may_manage(self, caller: Caller) -> bool:
        """Whether ``caller`` manages their tenant's destinations."""
        return self.manage.allows(caller)

    def may_use(self, caller: Caller, destination: Destination) -> bool:
        """Whether ``caller`` may deliver to ``destination``: the deployment's rule and the
        destination's own; a manager may always (they could change the rule anyway)."""
        if self.may_manage(caller):
            return True
        own = destination.use.rule(self.groups_claim) if destination.use else AccessRule()
        return self.use.allows(caller) and own.allows(caller)


def confirm_host_key(destination: Destination, fingerprint: str, now: datetime) -> Destination:
    """The destination with the fetched host key pinned, ACTIVE: only when ``fingerprint`` is the
    one shown (:class:`exports.finishing.destinations.kind.HostKeyMismatch` otherwise)."""
    pinned = destination.target.confirmed(fingerprint)
    return destination.model_copy(update={"target": pinned, "state": DestinationState.ACTIVE, "updated_at": now})
