"""Fixtures of the client suite: the local stack over real HTTP, and exportctl as users run it."""

from collections.abc import Iterator

import pytest

from exports_client import ExportsClient
from tests.client.e2e_support import Exportctl, SlowTasks
from tests.stack_process import Stack


@pytest.fixture(scope="session")
def stack(dynamodb_stack: Stack) -> Stack:
    """The local stack the client's end-to-end tests share (with the e2e suite's)."""
    return dynamodb_stack


@pytest.fixture
def client(stack: Stack) -> Iterator[ExportsClient]:
    """The SDK as alice, on ``stack``."""
    with ExportsClient(stack.url, stack.tokens["alice"]) as sdk:
        yield sdk


@pytest.fixture(scope="session")
def exportctl(stack: Stack) -> Exportctl:
    """The installed exportctl as alice, on ``stack``."""
    return Exportctl(stack.url, stack.tokens["alice"])


@pytest.fixture
def slow_tasks(client: ExportsClient) -> Iterator[SlowTasks]:
    """Submit exports that are still running when the test acts on them."""
    tasks = SlowTasks(client)
    yield tasks
    tasks.cancel_all()
