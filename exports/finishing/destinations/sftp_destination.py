"""SFTP destinations through asyncssh: fetch a server's host key, and probe a destination (log
in with the pinned host key, write and remove a small file). asyncssh's errors become the
customer's sentences of :mod:`exports.finishing.destinations.problems` here, and only here."""

from __future__ import annotations

import asyncio
import posixpath
import secrets
from collections.abc import Awaitable
from typing import TypeVar

import asyncssh

from exports.core.config.destinations import Destinations
from exports.core.public_address import Resolver
from exports.finishing.destinations.addresses import checked_address
from exports.finishing.destinations.model import Destination, SftpTarget
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep, sftp_problem
from exports.finishing.destinations.secrets import DestinationSecrets

T = TypeVar("T")
PATH_CODES = frozenset({asyncssh.FX_NO_SUCH_FILE, asyncssh.FX_NO_SUCH_PATH, asyncssh.FX_NOT_A_DIRECTORY})


class _PinnedHostKey(asyncssh.SSHClient):
    """Accepts the server only when its host key has the pinned fingerprint."""

    def __init__(self, fingerprint: str) -> None:
        self._fingerprint = fingerprint

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return bool(key.get_fingerprint("sha256") == self._fingerprint)


class SftpConnector:
    """:class:`exports.finishing.destinations.ports.HostKeys` and the SFTP
    :class:`exports.finishing.destinations.ports.DestinationProbe`."""

    def __init__(self, resolve: Resolver, allow_local: bool = False) -> None:
        self._resolve = resolve
        self._allow_local = allow_local

    def fetch(self, host: str, port: int) -> str:
        """The fingerprint of the host key the server shows."""
        address = checked_address(host, port, self._resolve, self._allow_local)
        problem = sftp_problem(ProblemStep.TCP, host, port, "", "")
        try:
            key = run_bounded(asyncssh.get_server_host_key(address, port), Destinations.CONNECT_TIMEOUT_SEC)
        except (OSError, TimeoutError, asyncssh.Error):
            raise problem from None
        if key is None:
            raise problem
        return str(key.get_fingerprint("sha256"))

    def probe(self, destination: Destination, secrets_: DestinationSecrets | None) -> None:
        """Log in, write a probe file in the destination's directory, remove it."""
        target = destination.target
        if not isinstance(target, SftpTarget) or target.host_key_fingerprint is None or secrets_ is None:
            raise ValueError("an SFTP destination with its host key pinned and its login")
        address = checked_address(target.host, target.port, self._resolve, self._allow_local)
        run_bounded(self._probe(target, address, secrets_), Destinations.PROBE_TIMEOUT_SEC, target)

    async def _probe(self, target: SftpTarget, address: str, secrets_: DestinationSecrets) -> None:
        async with await connect(target, address, secrets_) as connection, connection.start_sftp_client() as sftp:
            name = posixpath.join(target.path, Destinations.PROBE_FILE_PREFIX + secrets.token_hex(8))
            try:
                async with sftp.open(name, "wb") as probe:
                    await probe.write(b"exports delivery probe: safe to delete\n")
                await sftp.remove(name)
            except asyncssh.SFTPError as error:
                step = ProblemStep.PATH if error.code in PATH_CODES else ProblemStep.PERMISSION
                raise problem_of(step, target) from None


async def connect(target: SftpTarget, address: str, secrets_: DestinationSecrets) -> asyncssh.SSHClientConnection:
    """A connection to the checked address, the host key pinned, logged in with the
    destination's key or password (and nothing of this machine's: no agent, no ~/.ssh)."""
    assert target.host_key_fingerprint is not None
    fingerprint = target.host_key_fingerprint
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
            client_factory=lambda: _PinnedHostKey(fingerprint),
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


def problem_of(step: ProblemStep, target: SftpTarget) -> DestinationProblem:
    return sftp_problem(step, target.host, target.port, target.username, target.path)


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
