"""A tenant's delivery destination: where finished files go (the customer's S3 bucket or SFTP
server), how they are encrypted on the way, and who may use it.

Validation lives on the models, so a destination that exists is a valid one: the API's 422 names
the field pydantic names. Secrets (an SFTP private key or password, a ZIP password) are never
here: they are in :mod:`exports.finishing.destinations.secrets`, kept in Secrets Manager, and the
destination only holds where (``secret_ref``).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from exports.core.caller import AccessRule, Caller
from exports.core.config.destinations import Destinations
from exports.core.deliveries import DESTINATION_ID_PATTERN

DESTINATION_ID_PREFIX = "dst_"
# An OpenSSH SHA-256 fingerprint: "SHA256:" and 43 unpadded base64 characters (32 bytes).
FINGERPRINT_PATTERN = r"^SHA256:[A-Za-z0-9+/]{43}$"
# S3's rules for bucket names (general purpose buckets), less the forms S3 reserves.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_REGION = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$"
# An IAM role ARN in one of the commercial, China or GovCloud partitions (a path is allowed).
_ROLE_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/[\w+=,.@/-]{1,576}$")
_KMS_KEY_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):kms:([a-z0-9-]+):(\d{12}):(key|alias)/[\w/+=,.@-]{1,256}$")
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PGP_PUBLIC_HEADER = "-----BEGIN PGP PUBLIC KEY BLOCK-----"

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=Destinations.NAME_MAX_LENGTH)]
Fingerprint = Annotated[str, StringConstraints(pattern=FINGERPRINT_PATTERN)]


class DestinationKind(StrEnum):
    """Where files go."""

    S3 = "s3"
    SFTP = "sftp"


class EncryptionKind(StrEnum):
    """What a file becomes on its way: as it is, OpenPGP to the customer's key, or an AES-256 ZIP."""

    NONE = "none"
    PGP = "pgp"
    ZIP = "zip"


class SftpAuth(StrEnum):
    """How the service logs in: a key pair it generated for this destination, or a password."""

    KEY = "key"
    PASSWORD = "password"


class DestinationState(StrEnum):
    """ACTIVE destinations take files; an SFTP destination whose host key the service fetched
    waits in HOST_KEY_UNCONFIRMED until its manager confirms the fingerprint shown."""

    ACTIVE = "ACTIVE"
    HOST_KEY_UNCONFIRMED = "HOST_KEY_UNCONFIRMED"


class ServerSideEncryption(StrEnum):
    """How S3 encrypts the object at rest, as the customer's bucket requires."""

    SSE_S3 = "AES256"
    SSE_KMS = "aws:kms"


def _no_control(value: str, what: str) -> str:
    if _CONTROL.search(value):
        raise ValueError(f"{what} must not contain control characters")
    return value


def _no_parent_segment(value: str, what: str) -> str:
    if any(part == ".." for part in value.split("/")):
        raise ValueError(f"{what} must not contain a '..' segment")
    return value


class S3Location(BaseModel):
    """The customer's bucket, prefix and region, the role in their account, and the bucket's own
    encryption: what a request gives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bucket: str
    prefix: str = Field(default="", max_length=Destinations.S3_PREFIX_MAX_LENGTH)
    region: str = Field(pattern=_REGION)
    role_arn: str
    server_side_encryption: ServerSideEncryption = ServerSideEncryption.SSE_S3
    # The customer's KMS key for SSE-KMS (in the bucket's region); None with SSE-S3.
    kms_key_arn: str | None = None

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str) -> str:
        if not _BUCKET.fullmatch(bucket) or ".." in bucket:
            raise ValueError("bucket must be an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens")
        if bucket.startswith(_RESERVED_BUCKET_PREFIXES) or bucket.endswith(_RESERVED_BUCKET_SUFFIXES):
            raise ValueError("bucket uses a prefix or suffix S3 reserves")
        if _is_ip(bucket):
            raise ValueError("bucket must not be formatted as an IP address")
        return bucket

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        _no_control(prefix, "prefix")
        if prefix.startswith("/") or "//" in prefix:
            raise ValueError("prefix must not start with '/' or hold an empty segment ('//')")
        return _no_parent_segment(prefix, "prefix")

    @field_validator("role_arn")
    @classmethod
    def _role_arn(cls, role_arn: str) -> str:
        if not _ROLE_ARN.fullmatch(role_arn):
            raise ValueError("role_arn must be an IAM role ARN (arn:aws:iam::123456789012:role/name)")
        return role_arn

    @model_validator(mode="after")
    def _kms(self) -> S3Location:
        if self.server_side_encryption is ServerSideEncryption.SSE_S3:
            if self.kms_key_arn is not None:
                raise ValueError("kms_key_arn is for server_side_encryption aws:kms only")
            return self
        match = _KMS_KEY_ARN.fullmatch(self.kms_key_arn or "")
        if match is None:
            raise ValueError("kms_key_arn must be a KMS key ARN when server_side_encryption is aws:kms")
        if match.group(2) != self.region:
            raise ValueError("kms_key_arn must be in the bucket's region")
        return self

    @property
    def account_id(self) -> str:
        """The customer's AWS account (the role's)."""
        match = _ROLE_ARN.fullmatch(self.role_arn)
        assert match is not None  # validated
        return match.group(2)


class S3Target(S3Location):
    """The location, reached through the role with ``external_id``: generated by the service,
    never chosen by the caller (the confused-deputy guidance)."""

    kind: Literal[DestinationKind.S3] = DestinationKind.S3
    external_id: str = Field(pattern=r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def valid_host(host: str) -> str:
    """``host`` if it is a DNS name (RFC 1123) or an IP address literal; ``ValueError`` otherwise.
    Only its form: whether it may be reached is the SSRF guard's, at every connection."""
    if _is_ip(host):
        return host
    name = host[:-1] if host.endswith(".") else host
    if not name or len(name) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError("host must be a DNS name or an IP address")
    return host.lower()


class SftpServer(BaseModel):
    """The customer's SFTP server: where and as whom (what a request gives)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = Field(default=Destinations.SFTP_PORT_DEFAULT, ge=1, le=65535, strict=True)
    username: str = Field(min_length=1, max_length=Destinations.SFTP_USERNAME_MAX_LENGTH)
    path: str = Field(default=".", min_length=1, max_length=Destinations.SFTP_PATH_MAX_LENGTH)
    auth: SftpAuth = SftpAuth.KEY

    @field_validator("host")
    @classmethod
    def _host(cls, host: str) -> str:
        return valid_host(host)

    @field_validator("username")
    @classmethod
    def _username(cls, username: str) -> str:
        _no_control(username, "username")
        if any(character.isspace() for character in username):
            raise ValueError("username must not contain spaces")
        return username

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        return _no_parent_segment(_no_control(path, "path"), "path")


class SftpTarget(SftpServer):
    """The server with the host key pinned for it and the service's public key.

    ``host_key_fingerprint`` is the pinned key (SHA-256, as ``ssh-keygen -lf`` prints it);
    ``offered_host_key_fingerprint`` is a key the service fetched that waits for the manager's
    confirmation. A connection to a server that shows any other key is refused."""

    kind: Literal[DestinationKind.SFTP] = DestinationKind.SFTP
    host_key_fingerprint: Fingerprint | None = None
    offered_host_key_fingerprint: Fingerprint | None = None
    # The OpenSSH public key of the service's key pair (KEY auth), to install in authorized_keys.
    public_key: str | None = None

    @model_validator(mode="after")
    def _pinned(self) -> SftpTarget:
        if self.host_key_fingerprint is None and self.offered_host_key_fingerprint is None:
            raise ValueError("an SFTP destination needs its host key: host_key_fingerprint, or one fetched to confirm")
        if self.auth is SftpAuth.KEY and not self.public_key:
            raise ValueError("key authentication needs the service's public key")
        return self


Target = Annotated[S3Target | SftpTarget, Field(discriminator="kind")]


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
    def kind(self) -> DestinationKind:
        """S3 or SFTP."""
        return self.target.kind

    @property
    def needs_secret(self) -> bool:
        """Whether it keeps a secret: an SFTP login, or a ZIP password."""
        return self.kind is DestinationKind.SFTP or self.encryption.kind is EncryptionKind.ZIP

    @model_validator(mode="after")
    def _state(self) -> Destination:
        target = self.target
        unconfirmed = isinstance(target, SftpTarget) and target.host_key_fingerprint is None
        if unconfirmed != (self.state is DestinationState.HOST_KEY_UNCONFIRMED):
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


class HostKeyMismatch(ValueError):
    """The fingerprint confirmed is not the one the service fetched and showed."""


def confirm_host_key(destination: Destination, fingerprint: str, now: datetime) -> Destination:
    """The destination with the fetched host key pinned, ACTIVE: only when ``fingerprint`` is the
    one shown (a key that changed between fetch and confirm is never pinned)."""
    target = destination.target
    if not isinstance(target, SftpTarget) or target.offered_host_key_fingerprint is None:
        raise HostKeyMismatch("this destination has no fetched host key waiting for confirmation")
    if fingerprint != target.offered_host_key_fingerprint:
        raise HostKeyMismatch("the fingerprint is not the one shown; fetch the host key again")
    pinned = target.model_copy(update={"host_key_fingerprint": fingerprint, "offered_host_key_fingerprint": None})
    return destination.model_copy(update={"target": pinned, "state": DestinationState.ACTIVE, "updated_at": now})
