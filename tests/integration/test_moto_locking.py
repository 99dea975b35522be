"""The local stack's lock on moto's DynamoDB: conditional writes from many threads behave as
DynamoDB's do (one winner per version), and uninstalling gives moto its operations back."""

import threading
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from local_stack import moto_locking
from local_stack.embedded_aws import REGION

THREADS = 6
TRIES = 60


@pytest.fixture
def counter_table() -> Iterator[str]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="counters",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.put_item(TableName="counters", Item={"id": {"S": "c"}, "version": {"N": "0"}})
        yield "counters"


def test_every_conditional_write_that_succeeds_counts_once_under_the_lock(counter_table: str) -> None:
    """Read the version, write version + 1 on condition that it is unchanged: with DynamoDB's
    atomicity the final version is exactly the number of successful writes."""
    moto_locking.install()
    successes: list[int] = []
    start = threading.Barrier(THREADS)

    def bump() -> None:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        start.wait()
        for _ in range(TRIES):
            seen = dynamodb.get_item(TableName=counter_table, Key={"id": {"S": "c"}})["Item"]["version"]["N"]
            try:
                dynamodb.update_item(
                    TableName=counter_table,
                    Key={"id": {"S": "c"}},
                    UpdateExpression="SET version = :next",
                    ConditionExpression="version = :seen",
                    ExpressionAttributeValues={":seen": {"N": seen}, ":next": {"N": str(int(seen) + 1)}},
                )
                successes.append(1)
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass

    try:
        threads = [threading.Thread(target=bump) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        moto_locking.uninstall()

    final = boto3.client("dynamodb", region_name=REGION).get_item(TableName=counter_table, Key={"id": {"S": "c"}})
    assert int(final["Item"]["version"]["N"]) == len(successes) > 0


def test_installing_is_idempotent_and_uninstalling_restores_moto() -> None:
    original = DynamoDBBackend.transact_write_items
    moto_locking.install()
    moto_locking.install()
    try:
        wrapped = DynamoDBBackend.transact_write_items
        assert wrapped is not original
        assert wrapped.__wrapped__ is original  # wrapped once, not twice
    finally:
        moto_locking.uninstall()
    assert DynamoDBBackend.transact_write_items is original
