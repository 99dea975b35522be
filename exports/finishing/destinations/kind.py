"""What a destination kind is: the contract each module of :mod:`exports.finishing.destinations.kinds`
fulfils, so that the resource (create, show, change, confirm, verify) and the delivery never
name a kind. A kind brings its models (what is stored, what a request gives, what an answer
shows), the fields a change may carry, and an adapter that makes a target from a request,
probes it and puts a file there; :mod:`exports.finishing.destinations.registry` lists the kinds.
"""

from __future__ import annotations

import ipaddress
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol, Self

from pydantic import BaseModel, ConfigDict, StringConstraints

from exports.core.public_address import Resolver
from exports.finishing.destinations.secrets import DestinationSecrets

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# An OpenSSH SHA-256 fingerprint: "SHA256:" and 43 unpadded base64 characters (32 bytes): what a
# manager confirms of a key the service fetched (POST /v1/destinations/{id}/confirm).
FINGERPRINT_PATTERN = r"^SHA256:[A-Za-z0-9+/]{43}$"
Fingerprint = Annotated[str, StringConstraints(pattern=FINGERPRINT_PATTERN)]


def no_control(value: str, what: str) -> str:
    """``value``, refused (``ValueError``) when it holds a control character."""
    if _CONTROL.search(value):
        raise ValueError(f"{what} must not contain control characters")
    return value


def no_parent_segment(value: str, what: str) -> str:
    """``value``, refused when one of its ``/`` segments is ``..``."""
    if any(part == ".." for part in value.split("/")):
        raise ValueError(f"{what} must not contain a '..' segment")
    return value


def is_ip(value: str) -> bool:
    """Whether ``value`` is an IP address literal."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


class HostKeyMismatch(ValueError):
    """The fingerprint confirmed is not the one the service fetched and showed."""


class TargetBase(BaseModel):
    """Where a destination's files go, as stored: each kind's target extends this with its
    ``kind`` (a ``Literal`` of its name) and its fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str

    @property
    def keeps_login(self) -> bool:
        """Whether reaching it takes a secret of its own (an SFTP login)."""
        return False

    @property
    def awaiting_confirmation(self) -> bool:
        """Whether it waits for its manager to confirm something the service fetched (a host key)."""
        return False

    def confirmed(self, fingerprint: str) -> Self:
        """The target with the fetched ``fingerprint`` pinned; :class:`HostKeyMismatch` when it
        has nothing waiting or the fingerprint is not the one shown."""
        raise HostKeyMismatch("this destination has no fetched host key waiting for confirmation")

    def remote_path(self, relative_path: str) -> str:
        """Where ``relative_path`` (the rendered path template) lands."""
        raise NotImplementedError


class SpecBase(BaseModel):
    """What a request gives for a target: each kind's extends this with its ``kind`` and fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str


@dataclass(frozen=True)
class Made:
    """A new target, the destination's secrets with what the kind added (a login), and the
    public key to show once (SFTP key authentication)."""

    target: TargetBase
    secrets: DestinationSecrets
    public_key: str | None = None


class KindAdapter(Protocol):
    """A kind's connection to the outside: built once per function by its composition root."""

    def make(self, spec: SpecBase, destination_id: str, secrets: DestinationSecrets) -> Made:
        """The target of a new destination from ``spec``, with what the service generates for
        it (an ExternalId, a key pair, a fetched host key); ``InvalidRequest`` naming the field
        when the deployment or the server refuses it."""

    def probe(self, destination_id: str, target: TargetBase, secrets: DestinationSecrets | None) -> None:
        """Write and remove a small file there (``verify``); a
        :class:`exports.finishing.destinations.problems.DestinationProblem` says what failed."""

    def put(
        self,
        destination_id: str,
        target: TargetBase,
        secrets: DestinationSecrets | None,
        local: Path,
        remote: str,
        sha256: str,
    ) -> None:
        """Put the file ``local`` at ``remote`` so that it appears whole or not at all, and a
        retry replaces it (never a second file, never a half one); its ``sha256`` beside it. A
        failure is a :class:`exports.finishing.destinations.problems.DestinationProblem`."""


@dataclass(frozen=True)
class KindContext:
    """What a kind's adapter may be built from: the SSRF guard's resolver (and whether local
    development lets loopback through), the AWS client factory with its assumed-role S3
    clients, and the role customers' roles trust (None: this deployment has none)."""

    resolve: Resolver
    allow_local: bool
    aws_client: Callable[[str], Any]
    assumed_s3: Callable[[str, Mapping[str, str]], Any]
    principal_arn: str | None


class Kind(ABC):
    """One kind of destination, registered once (:mod:`exports.finishing.destinations.registry`)."""

    # The name requests and stored destinations carry in ``kind``.
    name: ClassVar[str]
    target: ClassVar[type[TargetBase]]
    spec: ClassVar[type[SpecBase]]
    # How an answer shows the target (no secret; what the customer needs to set their side up).
    view: ClassVar[type[BaseModel]]
    # The fields of ``PATCH /v1/destinations/{id}`` this kind takes, with their types.
    patch_fields: ClassVar[Mapping[str, Any]] = {}

    def shown(self, target: TargetBase, principal_arn: str | None) -> tuple[BaseModel, dict[str, Any]]:
        """The target as an answer shows it, and the answer's other fields this kind fills (an
        S3 destination's policies to paste)."""
        return self.view.model_validate(target.model_dump()), {}

    def patched(self, target: TargetBase, changes: Mapping[str, Any]) -> TargetBase:
        """``target`` with the kind's fields of a PATCH applied (``changes``: only this kind's,
        as given); ``InvalidRequest`` naming the field a change does not fit."""
        values = {name: value for name, value in changes.items() if value is not None}
        return target.model_validate({**target.model_dump(), **values}) if values else target

    def patched_secrets(self, target: TargetBase, changes: Mapping[str, Any]) -> dict[str, Any]:
        """The secrets a PATCH replaces (a new password), by name."""
        return {}

    @abstractmethod
    def adapter(self, context: KindContext) -> KindAdapter:
        """The kind's adapter, built from ``context``."""
