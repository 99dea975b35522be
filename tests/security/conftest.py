"""Fixtures of the security suite: moto with the real resources (from the integration suite), and
one moto per module for the many small cases that store nothing or only their own tasks."""

import functools
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from local_stack.embedded_aws import REGION, Resources, create_resources
from tests.integration.conftest import _clear_caches, aws, orders, retry_clock, running_aws  # noqa: F401


@pytest.fixture(scope="module")
def module_aws() -> Iterator[Resources]:
    """Like ``aws``, shared by the tests of one module."""
    with mock_aws(), pytest.MonkeyPatch.context() as patch:
        resources = create_resources(functools.partial(boto3.client, region_name=REGION))
        for name, value in resources.function_environment().items():
            patch.setenv(name, value)
        _clear_caches()
        yield resources
        _clear_caches()
