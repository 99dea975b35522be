"""The destinations table (``DestinationsTable``): each tenant's destinations and its count of
them, under the tenant's partition:

- a **destination** under ``pk = "tenant#<tenant>"``, ``sk = destination_id`` (ids sort by
  creation time, so the partition read backwards lists newest first);
- the tenant's **count** of destinations under the same ``pk``, ``sk = "count"``: the cap, kept
  in the same transaction as a destination's creation and deletion.

Every read names the tenant in the key, so another tenant's destination is never found: the
isolation is the key's, not a filter's. Every write is conditional: a new destination on its id
being free and the count under the cap, a change on the version it was read at.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from exports.core.aws.dynamodb_items import from_item, to_item
from exports.core.aws.errors import ConditionNotMet, TransactionCancelled, translated
from exports.core.config.tables import DestinationsTable
from exports.core.errors import ConditionFailed, InvalidRequest
from exports.finishing.destinations.model import DESTINATION_ID_PREFIX, Destination
from exports.finishing.destinations.ports import DestinationLimitReached, DestinationPage

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient

COUNT_SORT_KEY = "count"
_PK, _SK = DestinationsTable.PARTITION_KEY, DestinationsTable.SORT_KEY
# Named condition fragments: what each write requires of the stored item.
_IS_NEW = "attribute_not_exists(#pk)"
_EXISTS = "attribute_exists(#pk)"
_AT_VERSION = "#version = :version"
_UNDER_CAP = "attribute_not_exists(#count) OR #count < :cap"
_POSITIVE = "#count > :zero"


def tenant_key(tenant: str) -> str:
    """The partition of ``tenant``'s items."""
    return f"tenant#{tenant}"


def _key(tenant: str, sk: str) -> dict[str, Any]:
    return {_PK: {"S": tenant_key(tenant)}, _SK: {"S": sk}}


def destination_item(destination: Destination) -> dict[str, Any]:
    """The item of ``destination``."""
    values = destination.model_dump(mode="json")
    return to_item({**values, _PK: tenant_key(destination.tenant), _SK: destination.destination_id})


def destination_of(item: dict[str, Any]) -> Destination:
    """The destination stored in ``item``."""
    values = from_item(item)
    values.pop(_PK, None)
    values.pop(_SK, None)
    return Destination.model_validate(values)


class DynamoDestinationStore:
    """:class:`exports.finishing.destinations.ports.DestinationStore` on the destinations table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, destination: Destination, max_per_tenant: int) -> None:
        """The destination and its tenant's count + 1, in one transaction."""
        try:
            with translated("create destination", items=("destination", "count")):
                self._client.transact_write_items(
                    TransactItems=[
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": destination_item(destination),
                                "ConditionExpression": _IS_NEW,
                                "ExpressionAttributeNames": {"#pk": _PK},
                            }
                        },
                        {
                            "Update": {
                                "TableName": self._table,
                                "Key": _key(destination.tenant, COUNT_SORT_KEY),
                                "UpdateExpression": "ADD #count :one",
                                "ConditionExpression": _UNDER_CAP,
                                "ExpressionAttributeNames": {"#count": "destinations"},
                                "ExpressionAttributeValues": {
                                    ":one": {"N": "1"},
                                    ":cap": {"N": str(max_per_tenant)},
                                },
                            }
                        },
                    ]
                )
        except TransactionCancelled as cancelled:
            if cancelled.failed("count"):
                raise DestinationLimitReached(max_per_tenant) from None
            raise ConditionFailed(f"destination {destination.destination_id} exists") from None

    def get(self, tenant: str, destination_id: str) -> Destination | None:
        """The tenant's destination (a strongly consistent read), or None."""
        if not destination_id.startswith(DESTINATION_ID_PREFIX):
            return None  # never the count item, whatever the id given
        with translated("get destination"):
            response = self._client.get_item(
                TableName=self._table, Key=_key(tenant, destination_id), ConsistentRead=True
            )
        item = response.get("Item")
        return destination_of(item) if item else None

    def list_for_tenant(self, tenant: str, limit: int, cursor: str | None) -> DestinationPage:
        """Newest first: the tenant's partition backwards, destinations only."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": _PK, "#sk": _SK},
            "ExpressionAttributeValues": {
                ":pk": {"S": tenant_key(tenant)},
                ":prefix": {"S": DESTINATION_ID_PREFIX},
            },
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            request["ExclusiveStartKey"] = _decode_cursor(cursor, tenant)
        with translated("list destinations"):
            response = self._client.query(**request)
        start_key = response.get("LastEvaluatedKey")
        destinations = [destination_of(item) for item in response.get("Items", [])]
        return DestinationPage(destinations, _encode_cursor(start_key) if start_key else None)

    def replace(self, before: Destination, after: Destination) -> Destination:
        """Write ``after`` at ``before.version + 1`` if the stored version is still ``before``'s
        (and it is the same tenant's destination)."""
        if (after.tenant, after.destination_id) != (before.tenant, before.destination_id):
            raise ValueError("a replacement keeps the tenant and the id")
        written = after.model_copy(update={"version": before.version + 1})
        try:
            with translated("update destination"):
                self._client.put_item(
                    TableName=self._table,
                    Item=destination_item(written),
                    ConditionExpression=f"{_EXISTS} AND {_AT_VERSION}",
                    ExpressionAttributeNames={"#pk": _PK, "#version": "version"},
                    ExpressionAttributeValues={":version": {"N": str(before.version)}},
                )
        except ConditionNotMet:
            raise ConditionFailed(f"destination {before.destination_id} changed meanwhile") from None
        return written

    def delete(self, destination: Destination) -> None:
        """The destination and its tenant's count - 1, in one transaction."""
        try:
            with translated("delete destination", items=("destination", "count")):
                self._client.transact_write_items(
                    TransactItems=[
                        {
                            "Delete": {
                                "TableName": self._table,
                                "Key": _key(destination.tenant, destination.destination_id),
                                "ConditionExpression": _EXISTS,
                                "ExpressionAttributeNames": {"#pk": _PK},
                            }
                        },
                        {
                            "Update": {
                                "TableName": self._table,
                                "Key": _key(destination.tenant, COUNT_SORT_KEY),
                                "UpdateExpression": "ADD #count :minus_one",
                                "ConditionExpression": _POSITIVE,
                                "ExpressionAttributeNames": {"#count": "destinations"},
                                "ExpressionAttributeValues": {":minus_one": {"N": "-1"}, ":zero": {"N": "0"}},
                            }
                        },
                    ]
                )
        except TransactionCancelled:
            return  # deleted meanwhile


def _encode_cursor(start_key: dict[str, Any]) -> str:
    plain = {name: value["S"] for name, value in start_key.items()}
    return base64.urlsafe_b64encode(json.dumps(plain, sort_keys=True).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, tenant: str) -> dict[str, Any]:
    """The start key in ``cursor``; refuses cursors that are malformed or another tenant's."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        plain = json.loads(base64.urlsafe_b64decode(padded.encode()))
        valid = (
            isinstance(plain, dict)
            and set(plain) == {_PK, _SK}
            and all(isinstance(value, str) for value in plain.values())
        )
    except (ValueError, binascii.Error, UnicodeDecodeError):
        valid = False
    if not valid or plain[_PK] != tenant_key(tenant) or not plain[_SK].startswith(DESTINATION_ID_PREFIX):
        raise InvalidRequest("next_token is not valid", field="next_token")
    return {name: {"S": value} for name, value in plain.items()}
