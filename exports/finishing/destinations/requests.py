"""What a caller gives to create or change a destination (the bodies of POST and PATCH
/v1/destinations): the domain's own fields and validators, plus the secrets, which only pass
through on their way to Secrets Manager. What the service generates (the ExternalId, the key
pair, a fetched host key) is never taken from a request: an unknown field is refused."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from exports.finishing.destinations.model import (
    DestinationKind,
    Encryption,
    EncryptionKind,
    Fingerprint,
    Name,
    S3Location,
    SftpAuth,
    SftpServer,
    UseRule,
)
from exports.finishing.destinations.secrets import SftpPassword, ZipPassword


class S3TargetSpec(S3Location):
    """An S3 destination's bucket and role (its ExternalId is generated)."""

    kind: Literal[DestinationKind.S3]


class SftpTargetSpec(SftpServer):
    """An SFTP destination's server; ``host_key_fingerprint`` pins the host key at once (without
    it the service fetches the key and shows it to confirm); ``password`` with password auth."""

    kind: Literal[DestinationKind.SFTP]
    host_key_fingerprint: Fingerprint | None = None
    password: SftpPassword | None = None

    @model_validator(mode="after")
    def _password(self) -> SftpTargetSpec:
        if (self.auth is SftpAuth.PASSWORD) != (self.password is not None):
            raise ValueError("password is required with auth password, and only then")
        return self


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
    target: Annotated[S3TargetSpec | SftpTargetSpec, Field(discriminator="kind")]
    encryption: EncryptionSpec = EncryptionSpec()
    use: UseRule | None = None


class DestinationPatch(BaseModel):
    """PATCH /v1/destinations/{id}: the fields given change. Where a file goes (kind, host, port,
    user, bucket, region, role) does not: that is another destination, verified afresh."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Name | None = None
    use: UseRule | None = None
    encryption: EncryptionSpec | None = None
    # S3 only.
    prefix: str | None = None
    # SFTP only: the directory, the password (auth password), a new pinned host key (the server's
    # key was rotated on purpose).
    path: str | None = None
    password: SftpPassword | None = None
    host_key_fingerprint: Fingerprint | None = None


class HostKeyConfirmation(BaseModel):
    """POST /v1/destinations/{id}/confirm: the fingerprint the service showed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host_key_fingerprint: Fingerprint
