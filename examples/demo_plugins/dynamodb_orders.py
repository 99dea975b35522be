"""The demo orders table: one key-condition query per day on the day index, never a scan."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from exports.core.aws.dynamodb_items import from_item
from exports.core.aws.errors import translated
from exports.core.config.tables import OrdersTable

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient


class DynamoOrdersReader:
    """:class:`examples.demo_plugins.orders.OrdersReader` on a DynamoDB table with a day index."""

    def __init__(self, client: DynamoDBClient, table_name: str, page_size: int = 1000) -> None:
        self._client = client
        self._table = table_name
        self._page_size = page_size

    def iter_orders(self, day_from: date, day_to: date, status: str | None) -> Iterator[dict[str, Any]]:
        """Orders of each day in turn, each day ordered by creation time."""
        day = day_from
        while day <= day_to:
            yield from self._orders_of(day, status)
            day += timedelta(days=1)

    def _orders_of(self, day: date, status: str | None) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OrdersTable.DAY_INDEX,
            "KeyConditionExpression": "#day = :day",
            "ExpressionAttributeNames": {"#day": OrdersTable.DAY_INDEX_PARTITION_KEY},
            "ExpressionAttributeValues": {":day": {"S": day.isoformat()}},
            "Limit": self._page_size,
        }
        if status:
            request["FilterExpression"] = "#status = :status"
            request["ExpressionAttributeNames"]["#status"] = "status"
            request["ExpressionAttributeValues"][":status"] = {"S": status}
        while True:
            with translated("query orders"):
                response = self._client.query(**request)
            for item in response.get("Items", []):
                yield from_item(item, exact=True)
            if "LastEvaluatedKey" not in response:
                return
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
