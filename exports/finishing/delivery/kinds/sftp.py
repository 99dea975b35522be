"""Delivery to a customer's SFTP server: logged in with the pinned host key, the file and its
``.sha256`` sidecar are each written under a temporary dot name in the target directory and then
renamed over the final name (the POSIX rename extension where the server has it), so a reader
never sees a half file and a retry leaves one file, not two."""

from __future__ import annotations

import posixpath
from pathlib import Path

import asyncssh

from exports.core.config.destinations import Destinations
from exports.core.deliveries import SHA256_SUFFIX, sha256_line
from exports.core.public_address import Resolver
from exports.finishing.destinations.addresses import checked_address
from exports.finishing.destinations.model import Destination, SftpTarget
from exports.finishing.destinations.problems import ProblemStep
from exports.finishing.destinations.secrets import DestinationSecrets
from exports.finishing.destinations.sftp_destination import PATH_CODES, connect, problem_of, run_bounded

# The temporary name's mark: a dot file (hidden from most listings) no reader should pick up.
PARTIAL_SUFFIX = ".part"


class SftpDeliverer:
    """The SFTP :class:`exports.finishing.delivery.kinds.FileDeliverer`."""

    def __init__(self, resolve: Resolver, allow_local: bool = False) -> None:
        self._resolve = resolve
        self._allow_local = allow_local

    def remote_path(self, destination: Destination, relative_path: str) -> str:
        """The file's path: the destination's directory, then the rendered template."""
        target = destination.target
        assert isinstance(target, SftpTarget)
        return posixpath.join(target.path, relative_path)

    def put(
        self, destination: Destination, secrets: DestinationSecrets | None, local: Path, remote: str, sha256: str
    ) -> None:
        """Connect to the checked address (the SSRF guard at connect time), then write both files."""
        target = destination.target
        if not isinstance(target, SftpTarget) or target.host_key_fingerprint is None or secrets is None:
            raise ValueError("an SFTP destination with its host key pinned and its login")
        address = checked_address(target.host, target.port, self._resolve, self._allow_local)
        run_bounded(
            self._put(target, address, secrets, local, remote, sha256), Destinations.DELIVERY_TIMEOUT_SEC, target
        )

    async def _put(
        self, target: SftpTarget, address: str, secrets: DestinationSecrets, local: Path, remote: str, sha256: str
    ) -> None:
        async with await connect(target, address, secrets) as connection, connection.start_sftp_client() as sftp:
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
                step = ProblemStep.PATH if error.code in PATH_CODES else ProblemStep.PERMISSION
                raise problem_of(step, target) from None


async def _replace(sftp: asyncssh.SFTPClient, remote: str, content: Path | bytes) -> None:
    """Write ``content`` at a temporary name beside ``remote``, then rename it over ``remote``."""
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
