"""Unit tests need nothing outside the process: network sockets are refused while each one runs
(pytest-socket lifts the restriction after the test). Unix sockets stay allowed (asyncio's event
loop makes a socket pair of its own)."""

from collections.abc import Iterator

import pytest
from pytest_socket import disable_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    disable_socket(allow_unix_socket=True)
    yield
