"""Reading a declared DynamoDB export type from the user's own table: key-condition queries on
the table or one of its indexes, paginated with the table's own continuation key, never a scan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from exports.core.aws.dynamodb_items import from_item
from exports.core.aws.errors import AwsError, translated
from exports.core.errors import ExportFailed, SourceCode
from exports.sources.dynamodb.ports import ItemQuery

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient


class DynamoItemsReader:
    """:class:`exports.sources.dynamodb.ports.ItemsReader` on a DynamoDB client."""

    def __init__(self, client: DynamoDBClient) -> None:
        self._client = client

    def page(
        self, query: ItemQuery, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One query page (numbers as Decimals) and the key to go on from (None: no more)."""
        names = {"#pk": query.partition_name}
        values: dict[str, Any] = {":pk": {"S": query.partition_value}}
        condition = "#pk = :pk"
        if query.sort_name is not None:
            names["#sk"] = query.sort_name
            condition += " AND " + _sort_condition(query, values)
        request: dict[str, Any] = {
            "TableName": query.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "Limit": limit,
        }
        if query.index:
            request["IndexName"] = query.index
        filters = []
        for position, (attribute, allowed) in enumerate(query.filters):
            names[f"#f{position}"] = attribute
            placeholders = []
            for number, value in enumerate(allowed):
                placeholders.append(f":f{position}_{number}")
                values[placeholders[-1]] = {"S": value}
            filters.append(f"#f{position} IN ({', '.join(placeholders)})")
        if filters:
            request["FilterExpression"] = " AND ".join(filters)
        if start_key:
            request["ExclusiveStartKey"] = start_key
        try:
            with translated(f"query {query.table}"):
                response = self._client.query(**request)
        except AwsError as error:
            raise ExportFailed(
                f"reading table {query.table!r} failed ({error.aws_code}): check the "
                "declaration's table, index and key names, and the worker's read permission",
                code=SourceCode.QUERY_FAILED,
            ) from error
        items = [from_item(item, exact=True) for item in response.get("Items", [])]
        return items, response.get("LastEvaluatedKey")


def _sort_condition(query: ItemQuery, values: dict[str, Any]) -> str:
    if query.sort_begins_with is not None:
        values[":sk0"] = {"S": query.sort_begins_with}
        return "begins_with(#sk, :sk0)"
    low, high = query.sort_from, query.sort_to
    if low is not None and high is not None:
        values[":sk0"], values[":sk1"] = {"S": low}, {"S": high}
        return "#sk BETWEEN :sk0 AND :sk1"
    if low is not None:
        values[":sk0"] = {"S": low}
        return "#sk >= :sk0"
    values[":sk1"] = {"S": high}
    return "#sk <= :sk1"
