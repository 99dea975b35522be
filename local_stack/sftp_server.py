"""A real SFTP server on 127.0.0.1 (asyncssh's), for make run and the tests: the customer's
server of an SFTP destination. Files land under ``root`` (each user chrooted to it); a user logs
in with one of their authorized keys or their password. It runs on its own thread and event loop,
and can be stopped and started again on the same port (a server down for a while)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh


@dataclass
class SftpUser:
    """Who may log in: their ``authorized_keys`` lines, or a password."""

    authorized_keys: list[str] = field(default_factory=list)
    password: str | None = None
    # Logs in, lists and reads, but may write nothing (a customer's misconfigured account).
    read_only: bool = False


class _ReadOnlySftp(asyncssh.SFTPServer):
    """Refuses every write."""

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> object:
        if pflags & (asyncssh.FXF_WRITE | asyncssh.FXF_CREAT | asyncssh.FXF_APPEND):
            raise asyncssh.SFTPPermissionDenied("this account may not write")
        return super().open(path, pflags, attrs)


class _Server(asyncssh.SSHServer):
    def __init__(self, users: dict[str, SftpUser]) -> None:
        self._users = users

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        user = self._users.get(username)
        if user is None:
            return False
        allowed = {asyncssh.import_public_key(line).public_data for line in user.authorized_keys}
        return key.public_data in allowed

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        user = self._users.get(username)
        return user is not None and user.password is not None and password == user.password


class LocalSftpServer:
    """The server: ``start()`` listens on ``port`` (0: a free one, kept for later starts)."""

    def __init__(self, root: Path, port: int = 0, host_key: asyncssh.SSHKey | None = None) -> None:
        self.root = root
        self.port = port
        self.users: dict[str, SftpUser] = {}
        self.host_key = host_key or asyncssh.generate_private_key("ssh-ed25519")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sftp-server", daemon=True)
        self._thread.start()
        self._acceptor: asyncssh.SSHAcceptor | None = None

    @property
    def fingerprint(self) -> str:
        """The SHA-256 fingerprint of its host key, as ``ssh-keygen -lf`` prints it."""
        return str(self.host_key.get_fingerprint("sha256"))

    def start(self) -> None:
        """Listen (again) on 127.0.0.1."""
        self._acceptor = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)
        self.port = self._acceptor.get_port()

    async def _listen(self) -> asyncssh.SSHAcceptor:
        return await asyncssh.create_server(
            lambda: _Server(self.users),
            "127.0.0.1",
            self.port,
            server_host_keys=[self.host_key],
            sftp_factory=self._sftp,
            allow_scp=False,
        )

    def _sftp(self, channel: asyncssh.SSHServerChannel[bytes]) -> asyncssh.SFTPServer:
        user = self.users.get(channel.get_extra_info("username"))
        kind = _ReadOnlySftp if user is not None and user.read_only else asyncssh.SFTPServer
        return kind(channel, chroot=str(self.root).encode())

    def stop(self) -> None:
        """Stop listening and drop every connection (a server down)."""
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:

            async def close() -> None:
                acceptor.close()
                await acceptor.wait_closed()

            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)

    def shutdown(self) -> None:
        """Stop, and end its thread."""
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
