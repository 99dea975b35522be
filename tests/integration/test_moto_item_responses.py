"""local_stack.moto_item_responses (installed for the whole test session by tests/conftest.py):
botocore reads moto's answers about items the same whether moto's serialiser wrote them or they
were dumped as JSON; and local mode's direct writes of demo data match the deploy guide's batch
writes."""

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.responses import DynamoResult

from local_stack import moto_item_responses
from local_stack.demo_customers import demo_customers, seed_customers
from local_stack.demo_orders import demo_orders, seed_orders
from local_stack.embedded_aws import REGION, Resources, put_items

TABLE = "items"
# Every kind of attribute value, binary ones included (moto keeps them as bytes, the wire in base64).
ITEM = {
    "id": {"S": "a"},
    "day": {"S": "2025-03-31"},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\xffbytes"},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02\x03"]},
    "list": {"L": [{"S": "one"}, {"N": "2"}, {"M": {"deep": {"B": b"\x10"}}}]},
    "map": {"M": {"name": {"S": "王芳"}, "empty": {"L": []}}},
}
OTHER = {"id": {"S": "b"}, "day": {"S": "2025-03-31"}, "n": {"N": "3"}}
KEY = {"id": {"S": "a"}}


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def conversation(client: Any) -> list[dict[str, Any]]:
    """One call of each operation the answers of which are dumped, from an empty table."""
    answers = [
        client.put_item(TableName=TABLE, Item=ITEM, ReturnConsumedCapacity="TOTAL"),
        client.put_item(TableName=TABLE, Item=OTHER, ReturnValues="ALL_OLD"),
        client.put_item(TableName=TABLE, Item=OTHER, ReturnValues="ALL_OLD"),
        client.get_item(TableName=TABLE, Key=KEY),
        client.get_item(TableName=TABLE, Key={"id": {"S": "missing"}}),
        client.query(
            TableName=TABLE,
            KeyConditionExpression="id = :id",
            ExpressionAttributeValues={":id": {"S": "a"}},
            ReturnConsumedCapacity="INDEXES",
        ),
        client.scan(TableName=TABLE, Limit=1),
        client.scan(TableName=TABLE, Select="COUNT"),
        client.batch_get_item(RequestItems={TABLE: {"Keys": [KEY, {"id": {"S": "b"}}]}}),
        client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": KEY}}]),
        client.update_item(
            TableName=TABLE,
            Key=KEY,
            UpdateExpression="SET n = n + :one, b = :b",
            ExpressionAttributeValues={":one": {"N": "1"}, ":b": {"B": b"\x07"}},
            ReturnValues="ALL_NEW",
        ),
        client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": {"id": {"S": "c"}}}}]}),
        client.transact_write_items(
            TransactItems=[{"Put": {"TableName": TABLE, "Item": {"id": {"S": "d"}, "b": {"B": b"\x08"}}}}]
        ),
        client.delete_item(TableName=TABLE, Key=KEY, ReturnValues="ALL_OLD"),
    ]
    for answer in answers:
        answer.pop("ResponseMetadata")
    return answers


def test_the_session_dumps_answers_about_items():
    assert DynamoResult.execute_result.__module__ == moto_item_responses.__name__


def test_botocore_reads_the_same_answers_as_from_motos_serialiser(dynamodb, monkeypatch):
    dumped = conversation(dynamodb)
    for table in dynamodb.list_tables()["TableNames"]:
        dynamodb.delete_table(TableName=table)
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    monkeypatch.setattr(DynamoResult, "execute_result", moto_item_responses.JSON_ITEMS.original)

    assert conversation(dynamodb) == dumped
    assert dumped[3]["Item"]["b"] == {"B": b"\x00\xffbytes"}  # the binary made the round trip


def test_errors_and_other_operations_keep_motos_serialiser(dynamodb):
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException) as refused:
        dynamodb.put_item(
            TableName=TABLE,
            Item=ITEM,
            ConditionExpression="attribute_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert dynamodb.describe_table(TableName=TABLE)["Table"]["CreationDateTime"].year >= 2025


def scanned(client: Any, table: str) -> list[dict[str, Any]]:
    return sorted(client.scan(TableName=table)["Items"], key=str)


def twin(client: Any, table: str) -> str:
    """An empty table keyed as ``table``."""
    keys = client.describe_table(TableName=table)["Table"]["KeySchema"]
    name = f"{table}-twin"
    client.create_table(
        TableName=name,
        KeySchema=keys,
        AttributeDefinitions=[{"AttributeName": key["AttributeName"], "AttributeType": "S"} for key in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


DAY = date(2025, 3, 31)


@pytest.mark.parametrize(
    ("table", "through_client", "direct"),
    [
        pytest.param(
            "orders_table",
            lambda client, table: seed_orders(client, table, 60, DAY),
            lambda table: put_items(table, demo_orders(60, DAY)),
            id="orders",
        ),
        pytest.param(
            "customers_table",
            lambda client, table: seed_customers(client, table, DAY, 40),
            lambda table: put_items(table, demo_customers(DAY, 40)),
            id="customers",
        ),
    ],
)
def test_local_modes_direct_writes_are_the_deploy_guides_batch_writes(
    aws: Resources, table: str, through_client: Callable[..., int], direct: Callable[..., int]
) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    seeded, written = getattr(aws, table), twin(client, getattr(aws, table))

    assert through_client(client, seeded) == direct(written)
    assert scanned(client, seeded) == scanned(client, written)
