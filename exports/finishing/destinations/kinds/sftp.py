"""The ``sftp`` kind: the customer's SFTP server, its host key pinned at creation (given, or
fetched and shown to confirm: never trusted on first use silently), logged in to with a key
pair the service generates per destination or a password.

Everything of the kind is here: what is stored, what a request gives and what an answer shows,
the customer's sentences for what can fail, and the adapter (asyncssh): fetch a host key,
probe (write and remove a small file), and put a file and its ``.sha256`` sidecar, each under
a temporary dot name in the target directory then renamed over the final name (the POSIX
rename extension where the server has it), so a reader never sees a half file and a retry
leaves one file, not two. Every connection passes the SSRF guard at connect time. asyncssh's
errors become :class:`DestinationProblem` here, and only here. asyncssh is imported where a
connection is made: the resource's models (and every route that reads them) never load it.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import secrets
from collections.abc import Awaitable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from exports.core.config.destinations import Destinations
from exports.core.deliveries import SHA256_SUFFIX, sha256_line
from exports.core.errors import InvalidRequest
from exports.core.public_address import Resolver
from exports.finishing.destinations import keys
from exports.finishing.destinations.addresses import checked_address
from exports.finishing.destinations.kind import (
    Fingerprint,
    HostKeyMismatch,
    Kind,
    KindContext,
    Made,
    SpecBase,
    TargetBase,
    is_ip,
    no_control,
    no_parent_segment,
)
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.secrets import DestinationSecrets, SftpPassword

if TYPE_CHECKING:
    import asyncssh

NAME: Final = "sftp"
T = TypeVar("T")
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
# The temporary name's mark: a dot file (hidden from most listings) no reader should pick up.
PARTIAL_SUFFIX = ".part"


class SftpAuth(StrEnum):
    """How the service logs in: a key pair it generated for this destination, or a password."""

    KEY = "key"
    PASSWORD = "password"


def valid_host(host: str) -> str:
    """``host`` if it is a DNS name (RFC 1123) or an IP address literal; ``ValueError`` otherwise.
    Only its form: whether it may be reached is the SSRF guard's, at every connection."""
    if is_ip(host):
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
        no_control(username, "username")
        if any(character.isspace() for character in username):
            raise ValueError("username must not contain spaces")
        return username

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        return no_parent_segment(no_control(path, "path"), "path")


class SftpTargetSpec(SpecBase, SftpServer):
    """An SFTP destination's server; ``host_key_fingerprint`` pins the host key at once (without
    it the service fetches the key and shows it to confirm); ``password`` with password auth."""

    kind: Literal["sftp"]
    host_key_fingerprint: Fingerprint | None = None
    password: SftpPassword | None = None

    @model_validator(mode="after")
    def _password(self) -> SftpTargetSpec:
        if (self.auth is SftpAuth.PASSWORD) != (self.password is not None):
            raise ValueError("password is required with auth password, and only then")
        return self


class SftpTarget(TargetBase, SftpServer):
    """The server with the host key pinned for it and the service's public key.

    ``host_key_fingerprint`` is the pinned key (SHA-256, as ``ssh-keygen -lf`` prints it);
    ``offered_host_key_fingerprint`` is a key the service fetched that waits for the manager's
    confirmation. A connection to a server that shows any other key is refused."""

    kind: Literal["sftp"] = NAME
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

    @property
    def keeps_login(self) -> bool:
        """Always: its private key or its password."""
        return True

    @property
    def awaiting_confirmation(self) -> bool:
        """While no host key is pinned (one fetched waits for its manager)."""
        return self.host_key_fingerprint is None

    def confirmed(self, fingerprint: str) -> Self:
        """Pinned, only when ``fingerprint`` is the one shown (a key that changed between fetch
        and confirm is never pinned)."""
        if self.offered_host_key_fingerprint is None:
            raise HostKeyMismatch("this destination has no fetched host key waiting for confirmation")
        if fingerprint != self.offered_host_key_fingerprint:
            raise HostKeyMismatch("the fingerprint is not the one shown; fetch the host key again")
        return self.model_copy(update={"host_key_fingerprint": fingerprint, "offered_host_key_fingerprint": None})

    def remote_path(self, relative_path: str) -> str:
        """The file's path: the directory, then the rendered template."""
        return posixpath.join(self.path, relative_path)


class SftpTargetView(SftpServer):
    """An SFTP destination's server, its pinned host key (or the one to confirm) and the
    fingerprint of the service's public key (the key itself is shown once, at creation)."""

    kind: Literal["sftp"] = NAME
    host_key_fingerprint: Fingerprint | None = None
    offered_host_key_fingerprint: Fingerprint | None = None
    public_key_fingerprint: Fingerprint | None = None


def sftp_problem(step: ProblemStep, host: str, port: int, username: str, path: str) -> DestinationProblem:
    """The customer's sentence for an SFTP destination's ``step``."""
    messages = {
        ProblemStep.DNS: f"{host} does not resolve: check the host name, and that its DNS record is public.",
        ProblemStep.TCP: f"nothing accepted a connection on {host} port {port}: check that the server is up"
        " and that its firewall lets our addresses in.",
        ProblemStep.HOST_KEY: f"{host} showed a host key other than the pinned one: if the server's key changed"
        " on purpose, set the new host_key_fingerprint; if not, someone may be in between.",
        ProblemStep.AUTH: f"{host} refused our login as {username}: install the destination's public key in that"
        " user's authorized_keys, or set the right password.",
        ProblemStep.PERMISSION: f"{username} may not create and remove files in {path} on {host}: grant write"
        " access to that directory.",
        ProblemStep.PATH: f"the directory {path} does not exist on {host}: create it, or change the path.",
    }
    return DestinationProblem(step, messages[step])


def problem_of(step: ProblemStep, target: SftpServer) -> DestinationProblem:
    """The sentence for ``target``'s ``step``."""
    return sftp_problem(step, target.host, target.port, target.username, target.path)


class HostKeys(Protocol):
    """Fetches an SFTP server's host key (the first step of pinning it)."""

    def fetch(self, host: str, port: int) -> str:
        """The SHA-256 fingerprint of the host key ``host`` shows on ``port`` (the host passes the
        SSRF guard first); :class:`DestinationProblem` otherwise."""


class SftpDestinations:
    """The kind's adapter, and :class:`HostKeys` (unless another is given, as tests do)."""

    def __init__(self, resolve: Resolver, allow_local: bool = False, host_keys: HostKeys | None = None) -> None:
        self._resolve = resolve
        self._allow_local = allow_local
        self._host_keys = host_keys or self

    def fetch(self, host: str, port: int) -> str:
        """The fingerprint of the host key the server shows."""
        import asyncssh

        address = checked_address(host, port, self._resolve, self._allow_local)
        problem = sftp_problem(ProblemStep.TCP, host, port, "", "")
        try:
            key = run_bounded(asyncssh.get_server_host_key(address, port), Destinations.CONNECT_TIMEOUT_SEC)
        except (OSError, TimeoutError, asyncssh.Error):
            raise problem from None
        if key is None:
            raise problem
        return str(key.get_fingerprint("sha256"))

    def make(self, spec: SpecBase, destination_id: str, secrets_: DestinationSecrets) -> Made:
        """The target with its host key (given, or fetched to confirm), a fresh key pair (key
        authentication: its public half shown once, its private half a secret) or the password."""
        assert isinstance(spec, SftpTargetSpec)
        offered = None
        if spec.host_key_fingerprint is None:
            try:
                offered = self._host_keys.fetch(spec.host, spec.port)
            except DestinationProblem as problem:
                # A request the server cannot answer yet is the caller's to fix: 422 on the host.
                raise InvalidRequest(
                    f"we could not fetch the host key to show you: {problem.message}",
                    field="target.host",
                    code=DestinationProblem.code,
                ) from None
        public_key = None
        if spec.auth is SftpAuth.KEY:
            pair = keys.new_key_pair(destination_id)
            public_key = pair.public_key
            secrets_ = secrets_.model_copy(update={"private_key": SecretStr(pair.private_key)})
        else:
            secrets_ = secrets_.model_copy(update={"password": spec.password})
        target = SftpTarget(
            **spec.model_dump(exclude={"kind", "password"}),
            offered_host_key_fingerprint=offered,
            public_key=public_key,
        )
        return Made(target, secrets_, public_key)

    def probe(self, destination_id: str, target: TargetBase, secrets_: DestinationSecrets | None) -> None:
        """Log in, write a probe file in the destination's directory, remove it."""
        pinned, address, login = self._reach(target, secrets_)
        run_bounded(self._probe(pinned, address, login), Destinations.PROBE_TIMEOUT_SEC, pinned)

    def put(
        self,
        destination_id: str,
        target: TargetBase,
        secrets_: DestinationSecrets | None,
        local: Path,
        remote: str,
        sha256: str,
    ) -> None:
        """Connect to the checked address (the SSRF guard at connect time), then write both files."""
        pinned, address, login = self._reach(target, secrets_)
        run_bounded(self._put(pinned, address, login, local, remote, sha256), Destinations.DELIVERY_TIMEOUT_SEC, pinned)

    def _reach(
        self, target: TargetBase, secrets_: DestinationSecrets | None
    ) -> tuple[SftpTarget, str, DestinationSecrets]:
        if not isinstance(target, SftpTarget) or target.host_key_fingerprint is None or secrets_ is None:
            raise ValueError("an SFTP destination with its host key pinned and its login")
        return target, checked_address(target.host, target.port, self._resolve, self._allow_local), secrets_

    async def _probe(self, target: SftpTarget, address: str, secrets_: DestinationSecrets) -> None:
        import asyncssh

        async with await connect(target, address, secrets_) as connection, connection.start_sftp_client() as sftp:
            name = posixpath.join(target.path, Destinations.PROBE_FILE_PREFIX + secrets.token_hex(8))
            try:
                async with sftp.open(name, "wb") as probe:
                    await probe.write(b"exports delivery probe: safe to delete\n")
                await sftp.remove(name)
            except asyncssh.SFTPError as error:
                step = ProblemStep.PATH if error.code in _path_codes() else ProblemStep.PERMISSION
                raise problem_of(step, target) from None

    async def _put(
        self, target: SftpTarget, address: str, secrets_: DestinationSecrets, local: Path, remote: str, sha256: str
    ) -> None:
        import asyncssh

        async with await connect(target, address, secrets_) as connection, connection.start_sftp_client() as sftp:
            try:
                directory = posixpath.dirname(remote)
                if directory != target.path.rstrip("/"):
                    # The template's own directories, under the destination's (which must exist).
                    if not await sftp.isdir(target.path):
                        raise problem_of(ProblemStep.PATH, target)
                    await sftp.makedirs(directory, exist_ok=True)
                await _replace(sftp, remote + SHA256_SUFFIX, sha256_line(sha256, remote))
                await _replace(sftp, remote, local)
            except asyncssh.SFTPError as error:
                step = ProblemStep.PATH if error.code in _path_codes() else ProblemStep.PERMISSION
                raise problem_of(step, target) from None


async def connect(target: SftpTarget, address: str, secrets_: DestinationSecrets) -> asyncssh.SSHClientConnection:
    """A connection to the checked address, the host key pinned, logged in with the
    destination's key or password (and nothing of this machine's: no agent, no ~/.ssh)."""
    import asyncssh

    assert target.host_key_fingerprint is not None
    fingerprint = target.host_key_fingerprint

    class PinnedHostKey(asyncssh.SSHClient):
        """Accepts the server only when its host key has the pinned fingerprint."""

        def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
            return bool(key.get_fingerprint("sha256") == fingerprint)

    login: dict[str, object] = (
        {"client_keys": [asyncssh.import_private_key(secrets_.private_key.get_secret_value())], "password": None}
        if secrets_.private_key is not None
        else {"client_keys": None, "password": secrets_.password.get_secret_value() if secrets_.password else None}
    )
    try:
        return await asyncssh.connect(
            address,
            target.port,
            username=target.username,
            known_hosts=([], [], []),
            client_factory=PinnedHostKey,
            agent_path=None,
            config=None,
            connect_timeout=Destinations.CONNECT_TIMEOUT_SEC,
            **login,
        )
    except asyncssh.HostKeyNotVerifiable:
        raise problem_of(ProblemStep.HOST_KEY, target) from None
    except asyncssh.PermissionDenied:
        raise problem_of(ProblemStep.AUTH, target) from None
    except (OSError, TimeoutError, asyncssh.Error):
        raise problem_of(ProblemStep.TCP, target) from None


def run_bounded(work: Awaitable[T], timeout_sec: float, target: SftpTarget | None = None) -> T:
    """``work`` on an event loop of its own (the functions are synchronous), within ``timeout_sec``."""

    async def bounded() -> T:
        return await asyncio.wait_for(work, timeout_sec)

    try:
        return asyncio.run(bounded())
    except TimeoutError:
        if target is None:
            raise
        raise problem_of(ProblemStep.TCP, target) from None


def _path_codes() -> frozenset[int]:
    """SFTP's answers for a directory that is not there."""
    import asyncssh

    return frozenset({asyncssh.FX_NO_SUCH_FILE, asyncssh.FX_NO_SUCH_PATH, asyncssh.FX_NOT_A_DIRECTORY})


async def _replace(sftp: asyncssh.SFTPClient, remote: str, content: Path | bytes) -> None:
    """Write ``content`` at a temporary name beside ``remote``, then rename it over ``remote``."""
    import asyncssh

    directory, name = posixpath.split(remote)
    partial = posixpath.join(directory, f".{name}{PARTIAL_SUFFIX}")
    if isinstance(content, Path):
        await sftp.put(str(content), partial)
    else:
        async with sftp.open(partial, "wb") as file:
            await file.write(content)
    try:
        await sftp.posix_rename(partial, remote)
    except asyncssh.SFTPOpUnsupported:
        # A server without the extension: SFTP's own rename refuses an existing target.
        if await sftp.exists(remote):
            await sftp.remove(remote)
        await sftp.rename(partial, remote)


class SftpKind(Kind):
    """The registration of the kind."""

    name: ClassVar[str] = NAME
    target = SftpTarget
    spec = SftpTargetSpec
    view = SftpTargetView
    # The directory, the password (auth password), a new pinned host key (the server's key was
    # rotated on purpose).
    patch_fields: ClassVar[Mapping[str, Any]] = {
        "path": str | None,
        "password": SftpPassword | None,
        "host_key_fingerprint": Fingerprint | None,
    }

    def shown(self, target: TargetBase, principal_arn: str | None) -> tuple[BaseModel, dict[str, Any]]:
        """The server and its keys' fingerprints; never the public key itself (shown once)."""
        assert isinstance(target, SftpTarget)
        fingerprint = keys.fingerprint(target.public_key) if target.public_key else None
        values = target.model_dump(exclude={"public_key"})
        return SftpTargetView(**values, public_key_fingerprint=fingerprint), {}

    def patched(self, target: TargetBase, changes: Mapping[str, Any]) -> TargetBase:
        """A new directory, or a new pinned host key (no longer waiting for confirmation)."""
        assert isinstance(target, SftpTarget)
        if "password" in changes and target.auth is SftpAuth.KEY:
            raise InvalidRequest("password applies to a destination with auth password only", field="password")
        values: dict[str, Any] = {}
        if changes.get("path") is not None:
            values["path"] = changes["path"]
        if changes.get("host_key_fingerprint") is not None:
            values["host_key_fingerprint"] = changes["host_key_fingerprint"]
            values["offered_host_key_fingerprint"] = None
        return super().patched(target, values)

    def patched_secrets(self, target: TargetBase, changes: Mapping[str, Any]) -> dict[str, Any]:
        """A new password replaces the old one."""
        return {"password": changes["password"]} if changes.get("password") is not None else {}

    def adapter(self, context: KindContext) -> SftpDestinations:
        """asyncssh behind the SSRF guard (``allow_local`` for local development)."""
        return SftpDestinations(context.resolve, allow_local=context.allow_local)
