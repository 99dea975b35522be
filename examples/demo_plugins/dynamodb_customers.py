"""The demo customers table: key-condition queries per sign-up day on its day index, never a scan."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from exports.core.aws.dynamodb_items import from_item
from exports.core.aws.errors import translated
from exports.core.config.tables import CustomersTable
from exports.core.export_type import CursorInvalid

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient

# The attributes of an index key: the table key plus the index key.
_KEY_ATTRIBUTES = (
    CustomersTable.PARTITION_KEY,
    CustomersTable.DAY_INDEX_PARTITION_KEY,
    CustomersTable.DAY_INDEX_SORT_KEY,
)


class DynamoCustomersReader:
    """:class:`examples.demo_plugins.customers.CustomersReader` on a DynamoDB table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def page(
        self, day: date, countries: Sequence[str] | None, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One query page of the day's sign-ups; the key comes back as plain strings."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": CustomersTable.DAY_INDEX,
            "KeyConditionExpression": "#day = :day",
            "ExpressionAttributeNames": {"#day": CustomersTable.DAY_INDEX_PARTITION_KEY},
            "ExpressionAttributeValues": {":day": {"S": day.isoformat()}},
            "Limit": limit,
        }
        if countries:
            names = [f":c{index}" for index in range(len(countries))]
            request["FilterExpression"] = f"#country IN ({', '.join(names)})"
            request["ExpressionAttributeNames"]["#country"] = "country"
            request["ExpressionAttributeValues"].update(
                {name: {"S": country} for name, country in zip(names, countries, strict=True)}
            )
        if start_key:
            if not all(isinstance(start_key.get(name), str) for name in _KEY_ATTRIBUTES):
                raise CursorInvalid(f"not a customers index key: {start_key!r}")
            request["ExclusiveStartKey"] = {name: {"S": str(start_key[name])} for name in _KEY_ATTRIBUTES}
        with translated("query customers"):
            response = self._client.query(**request)
        items = [from_item(item, exact=True) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return items, ({name: last[name]["S"] for name in _KEY_ATTRIBUTES} if last else None)
