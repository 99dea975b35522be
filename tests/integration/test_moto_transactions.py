"""local_stack.moto_transactions (installed for the whole test session by tests/conftest.py): a
transaction keeps moto's outcome, all or nothing, while only the items it names are kept aside."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from local_stack import moto_transactions
from tests.integration.conftest import STREAMS_ENDPOINT

TABLE = "transactions"


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        client.put_item(TableName=TABLE, Item={"id": {"S": "kept"}, "n": {"N": "1"}})
        yield client


def stream_events(client: Any) -> list[str]:
    streams = boto3.client("dynamodbstreams", region_name="us-east-1", endpoint_url=STREAMS_ENDPOINT)
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return [record["eventName"] for record in records]


def writes(condition_holds: bool) -> list[dict[str, Any]]:
    """A put of a new item, an update of the kept one, and a condition on a third."""
    return [
        {"Put": {"TableName": TABLE, "Item": {"id": {"S": "new"}}}},
        {
            "Update": {
                "TableName": TABLE,
                "Key": {"id": {"S": "kept"}},
                "UpdateExpression": "SET n = n + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        {
            "ConditionCheck": {
                "TableName": TABLE,
                "Key": {"id": {"S": "missing"}},
                "ConditionExpression": "attribute_not_exists(id)" if condition_holds else "attribute_exists(id)",
            }
        },
    ]


def test_the_session_runs_the_item_by_item_rollback():
    assert DynamoDBBackend.transact_write_items.__module__ == moto_transactions.__name__


def test_a_cancelled_transaction_leaves_every_item_and_the_stream_as_they_were(dynamodb):
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(TransactItems=writes(condition_holds=False))

    reasons = [reason["Code"] for reason in cancelled.value.response["CancellationReasons"]]
    assert reasons == ["None", "None", "ConditionalCheckFailed"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "new"}})
    assert dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "kept"}})["Item"]["n"] == {"N": "1"}
    assert stream_events(dynamodb) == ["INSERT"]  # the kept item's own put


def test_a_transaction_whose_conditions_hold_writes_everything(dynamodb):
    dynamodb.transact_write_items(TransactItems=writes(condition_holds=True))

    assert "Item" in dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "new"}})
    assert dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "kept"}})["Item"]["n"] == {"N": "2"}
    assert stream_events(dynamodb) == ["INSERT", "INSERT", "MODIFY"]


def test_it_stays_installed_until_every_install_is_undone():
    ours = DynamoDBBackend.transact_write_items
    moto_transactions.ROLLBACK.install()  # an in-process local stack, say
    moto_transactions.ROLLBACK.uninstall()
    assert DynamoDBBackend.transact_write_items is ours


def test_an_operation_without_its_key_cancels_the_transaction_as_in_moto_and_writes_nothing(dynamodb):
    keyless = {"Put": {"TableName": TABLE, "Item": {"n": {"N": "1"}}}}

    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=[writes(condition_holds=True)[0], keyless])

    assert refused.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "new"}})
