"""Fixtures of the client suite: local stacks over real HTTP, and exportctl as users run it."""

from collections.abc import Iterator

import pytest
from exports_client import ExportsClient

from tests.client.cli_process import Exportctl
from tests.stack_process import Stack, running_stack


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The local stack with its worker: tasks run to the end."""
    with running_stack(demo_orders=4000) as running:
        yield running


@pytest.fixture(scope="session")
def idle_stack() -> Iterator[Stack]:
    """A local stack without a worker: tasks stay PENDING until cancelled or timed out."""
    with running_stack(demo_orders=10, worker_concurrency=0) as running:
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[ExportsClient]:
    """The SDK as alice, on ``stack``."""
    with ExportsClient(stack.url, stack.tokens["alice"]) as sdk:
        yield sdk


@pytest.fixture
def idle_client(idle_stack: Stack) -> Iterator[ExportsClient]:
    """The SDK as alice, on ``idle_stack``."""
    with ExportsClient(idle_stack.url, idle_stack.tokens["alice"]) as sdk:
        yield sdk


@pytest.fixture(scope="session")
def exportctl(stack: Stack) -> Exportctl:
    """The installed exportctl as alice, on ``stack``."""
    return Exportctl(stack.url, stack.tokens["alice"])


@pytest.fixture(scope="session")
def idle_exportctl(idle_stack: Stack) -> Exportctl:
    """The installed exportctl as alice, on ``idle_stack``."""
    return Exportctl(idle_stack.url, idle_stack.tokens["alice"])
