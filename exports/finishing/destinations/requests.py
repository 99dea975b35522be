"""What a caller gives to create or change a destination (the bodies of POST and PATCH
/v1/destinations): the domain's own fields and validators, plus the secrets, which only pass
through on their way to Secrets Manager. What the service generates (the ExternalId, the key
pair, a fetched host key) is never taken from a request: an unknown field is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from exports.finishing.destinations import registry
from exports.finishing.destinations.kind import Fingerprint, SpecBase
from exports.finishing.destinations.model import Encryption, EncryptionKind, Name, UseRule
from exports.finishing.destinations.secrets import ZipPassword

if TYPE_CHECKING:
    TargetSpec = SpecBase
else:
    # Any registered kind's spec, by its ``kind`` (exports.finishing.destinations.registry).
    TargetSpec = registry.one_of(kind.spec for kind in registry.KINDS.values())


class EncryptionSpec(Encryption):
    """Encryption at delivery; ``zip_password`` with ``zip``, and only then."""

    zip_password: ZipPassword | None = None

    @model_validator(mode="after")
    def _zip(self) -> EncryptionSpec:
        if (self.kind is EncryptionKind.ZIP) != (self.zip_password is not None):
            raise ValueError("zip_password is required with zip encryption, and only then")
        return self

    def encryption(self) -> Encryption:
        """The destination's (public) part."""
        return Encryption(kind=self.kind, pgp_public_key=self.pgp_public_key)


class DestinationRequest(BaseModel):
    """POST /v1/destinations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Name
    target: TargetSpec
    encryption: EncryptionSpec = EncryptionSpec()
    use: UseRule | None = None


class PatchBase(BaseModel):
    """The fields of every destination a PATCH may change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Name | None = None
    use: UseRule | None = None
    encryption: EncryptionSpec | None = None


def _kind_fields() -> dict[str, Any]:
    return {name: (annotation, None) for name, annotation in registry.patch_fields().items()}


if TYPE_CHECKING:
    DestinationPatch = PatchBase
else:
    # The common fields and each registered kind's own (a field of another kind than the
    # destination's is refused, naming it).
    DestinationPatch = create_model(
        "DestinationPatch",
        __base__=PatchBase,
        __doc__="""PATCH /v1/destinations/{id}: the fields given change. Where a file goes (kind, host, port,
        user, bucket, region, role) does not: that is another destination, verified afresh.""",
        __module__=__name__,
        **_kind_fields(),
    )


class HostKeyConfirmation(BaseModel):
    """POST /v1/destinations/{id}/confirm: the fingerprint the service showed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host_key_fingerprint: Fingerprint
