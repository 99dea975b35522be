"""The socket a native driver opened to its server, found from outside the driver.

The ADBC PostgreSQL driver bundles its own libpq and exposes no socket (no ``PQsocket``), so the
"server does not answer" grace of the tuple reader's watchdog (postgres_session.Watchdog, which
shuts down the socket psycopg names) has nothing to hold. This finds it the way ``lsof`` would:
the descriptors the process opened while the driver connected, narrowed to the stream whose
peer is the server's port. What it returns is a duplicate of that descriptor: shutting it down
wakes the driver's blocked read with an error (a shutdown acts on the connection, not on one
descriptor), and a descriptor number the driver closes and the process reuses meanwhile can
never be hit, since the duplicate keeps the same connection.

Linux only (``/proc/self/fd``, which Lambda has); elsewhere nothing is found and the caller goes
without the grace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Final

logger = logging.getLogger(__name__)

_FD_DIR: Final = "/proc/self/fd"


def open_descriptors() -> frozenset[tuple[int, str]]:
    """The process's open file descriptors now, each with what it is (``socket:[<inode>]``, a
    path): a number closed and reused meanwhile (the listing's own descriptor, for one) is
    another entry. Empty where ``/proc`` has none."""
    try:
        names = os.listdir(_FD_DIR)
    except OSError:
        return frozenset()
    found = set()
    for name in names:
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            found.add((int(name), os.readlink(f"{_FD_DIR}/{name}")))
    return frozenset(found)


def connection_socket(before: frozenset[tuple[int, str]], port: int) -> socket.socket | None:
    """A duplicate of the one stream socket opened since ``before`` whose peer is at ``port``
    (TCP, or a PostgreSQL Unix socket ``.s.PGSQL.<port>``); None unless there is exactly one
    (another thread connecting to the same port meanwhile makes it ambiguous: no guess)."""
    found: list[socket.socket] = []
    for descriptor, what in sorted(open_descriptors() - before):
        if not what.startswith("socket:"):
            continue
        candidate = _socket_of(descriptor)
        if candidate is None:
            continue
        if candidate.type == socket.SOCK_STREAM and _peer_port(candidate) == port:
            found.append(candidate)
        else:
            candidate.close()
    if len(found) == 1:
        return found[0]
    for candidate in found:
        candidate.close()
    return None


def _socket_of(descriptor: int) -> socket.socket | None:
    """A socket on a duplicate of ``descriptor``; None when it is no socket (or closed meanwhile)."""
    try:
        duplicate = os.dup(descriptor)
    except OSError:
        return None
    try:
        return socket.socket(fileno=duplicate)
    except OSError:  # not a socket: a file, a pipe, an eventfd
        os.close(duplicate)
        return None


def _peer_port(sock: socket.socket) -> int | None:
    try:
        peer = sock.getpeername()
    except OSError:  # not connected
        return None
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        return int(peer[1])
    if sock.family == socket.AF_UNIX and isinstance(peer, str) and ".s.PGSQL." in peer:
        suffix = peer.rsplit(".", 1)[-1]
        return int(suffix) if suffix.isdigit() else None
    return None


def sever(sock: socket.socket) -> bool:
    """Shut the connection down under its driver, which wakes a read blocked on it with an
    error; False when it was closed already."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        logger.warning("could not shut the connection down", exc_info=True)
        return False
    return True


def release(sock: socket.socket | None) -> None:
    """Close the duplicate (the driver's own descriptor closes the connection)."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()
