"""The socket a native driver opened, found from outside it (exports/adapters/driver_socket.py):
the one stream to the server's port opened since a moment, never a guess between two, and
shutting it down wakes a read blocked on it. A PostgreSQL-style Unix socket stands in for the
server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from exports.sources.postgres import driver_socket

PORT = 6543


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    path = str(tmp_path / f".s.PGSQL.{PORT}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    yield path
    listener.close()


def connect(path: str) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    return client


def test_the_one_stream_to_the_port_opened_since_is_found(server: str) -> None:
    earlier = connect(server)
    before = driver_socket.open_descriptors()
    client = connect(server)
    unrelated = socket.socketpair()

    found = driver_socket.connection_socket(before, PORT)

    assert found is not None and found.getpeername() == server
    assert found.fileno() != client.fileno()  # a duplicate: the driver's own stays its own
    assert driver_socket.connection_socket(before, PORT + 1) is None
    for sock in (found, earlier, client, *unrelated):
        sock.close()


def test_two_new_streams_to_the_port_are_no_guess(server: str) -> None:
    before = driver_socket.open_descriptors()
    first, second = connect(server), connect(server)

    assert driver_socket.connection_socket(before, PORT) is None
    first.close()
    second.close()


def test_shutting_the_duplicate_down_wakes_a_read_blocked_on_the_drivers_descriptor(server: str) -> None:
    before = driver_socket.open_descriptors()
    client = connect(server)
    found = driver_socket.connection_socket(before, PORT)
    assert found is not None
    woke: list[bytes] = []
    reader = threading.Thread(target=lambda: woke.append(client.recv(1)), daemon=True)
    reader.start()
    time.sleep(0.2)
    assert reader.is_alive()  # the server says nothing: the read waits

    assert driver_socket.sever(found)
    reader.join(5)

    assert not reader.is_alive() and woke == [b""]
    driver_socket.release(found)
    client.close()
