"""moto in-process with the same resources local mode and the CDK app define."""

from collections.abc import Iterator
from datetime import date

import boto3
import pytest
from moto import mock_aws

from exports.adapters.clients import aws_client
from functions.submit import handler as api
from functions.worker import handler as worker
from local_stack.demo_orders import seed_orders
from local_stack.embedded_aws import REGION, Resources, create_resources

SEED_DAY = date(2025, 3, 31)
SEED_ORDERS = 400


def _clear_caches() -> None:
    aws_client.cache_clear()
    api.dependencies.cache_clear()
    worker.dependencies.cache_clear()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resources]:
    """Fresh tables, queues and bucket in moto; handlers rebuilt against them."""
    with mock_aws():
        resources = create_resources(lambda service: boto3.client(service, region_name=REGION))
        for name, value in resources.function_environment().items():
            monkeypatch.setenv(name, value)
        _clear_caches()
        yield resources
        _clear_caches()


@pytest.fixture
def orders(aws: Resources) -> Resources:
    """The demo orders (90 days up to SEED_DAY) in the orders table."""
    seed_orders(boto3.client("dynamodb", region_name=REGION), aws.orders_table, SEED_ORDERS, SEED_DAY)
    return aws
