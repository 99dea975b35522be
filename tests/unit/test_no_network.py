"""Unit tests run on fakes and in-process moto only: a network connection fails at once."""

import socket

import pytest
from pytest_socket import SocketBlockedError


@pytest.mark.filterwarnings("ignore:A test tried to use socket")  # pytest-socket's note of the refusal
def test_a_unit_test_cannot_open_a_network_connection():
    with pytest.raises(SocketBlockedError):
        socket.create_connection(("127.0.0.1", 9))
    with pytest.raises(SocketBlockedError):
        socket.getaddrinfo("example.com", 443)
