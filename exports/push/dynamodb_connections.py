"""The push channel's table: open WebSocket connections, their subscriptions, stream tickets.

A table of its own (docs/push.md, "Where connections live"), keyed ``pk`` + ``sk``:

- ``conn#<id>`` / ``conn``: the connection and its viewer; ``conn#<id>`` / ``sub#<task id or *>``:
  what it follows, so ``$disconnect`` finds every subscription to drop;
- ``task#<task id>`` / ``<connection id>``: a connection following one task;
- ``owner#<user id>`` / ``<connection id>``: a connection following all of a user's tasks;
- ``ticket#<sha256 of the ticket>`` / ``ticket``: a stream ticket (a table read never shows a
  usable ticket), used up by a conditional delete.

Every item carries the viewer it answers for and expires by the TTL attribute
(``Push.TTL_ATTRIBUTE``) with the connection (API Gateway closes one after two hours).
"""

from __future__ import annotations

import hashlib
import json
from contextlib import suppress
from datetime import datetime
from typing import Any

from exports.core.aws.errors import ConditionNotMet, translated
from exports.core.config.push import Push
from exports.core.task import Task
from exports.push.model import Subscription, Viewer

_META = "conn"
_TICKET = "ticket"
_ALL = "*"
_KEYS = {"#pk": Push.PARTITION_KEY}


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {Push.PARTITION_KEY: {"S": pk}, Push.SORT_KEY: {"S": sk}}


def _viewer_attributes(viewer: Viewer) -> dict[str, Any]:
    return {"user_id": {"S": viewer.user_id}, "claims": {"S": json.dumps(dict(viewer.claims), sort_keys=True)}}


def _viewer_of(item: dict[str, Any]) -> Viewer:
    return Viewer(item["user_id"]["S"], json.loads(item["claims"]["S"]))


def _expiry(now: datetime, ttl_sec: int) -> dict[str, Any]:
    return {Push.TTL_ATTRIBUTE: {"N": str(int(now.timestamp()) + ttl_sec)}}


def _target(subscription_task: str | None, user_id: str) -> str:
    return f"task#{subscription_task}" if subscription_task else f"owner#{user_id}"


class DynamoConnections:
    """:class:`exports.push.ports.ConnectionStore` on the connections table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def open(self, connection_id: str, viewer: Viewer, now: datetime) -> None:
        """Record the connection (a connection id is new: refused if it exists)."""
        item = _key(f"conn#{connection_id}", _META) | _viewer_attributes(viewer) | _expiry(now, Push.CONNECTION_TTL_SEC)
        with translated("open connection"):
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames=_KEYS,
            )

    def viewer(self, connection_id: str) -> Viewer | None:
        """The connection's viewer, None when it is not open."""
        with translated("read connection"):
            item = self._client.get_item(
                TableName=self._table, Key=_key(f"conn#{connection_id}", _META), ConsistentRead=True
            ).get("Item")
        return _viewer_of(item) if item else None

    def subscribe(self, subscription: Subscription, now: datetime) -> None:
        """Record the subscription and, beside the connection, that it has it; only while the
        connection is open (a subscribe racing ``$disconnect`` leaves nothing behind for long:
        the items expire with the connection)."""
        connection = subscription.connection_id
        viewer = subscription.viewer
        expiry = _expiry(now, Push.CONNECTION_TTL_SEC)
        target = _target(subscription.task_id, viewer.user_id)
        with translated("subscribe", items=("marker", "subscription")):
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": _key(f"conn#{connection}", f"sub#{subscription.task_id or _ALL}") | expiry,
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": _key(target, connection) | _viewer_attributes(viewer) | expiry,
                        }
                    },
                ]
            )

    def unsubscribe(self, connection_id: str, task_id: str | None) -> None:
        """Drop one subscription of the connection (nothing when it has none such)."""
        viewer = self.viewer(connection_id)
        if viewer is None:
            return
        with translated("unsubscribe"):
            self._client.delete_item(TableName=self._table, Key=_key(_target(task_id, viewer.user_id), connection_id))
            self._client.delete_item(TableName=self._table, Key=_key(f"conn#{connection_id}", f"sub#{task_id or _ALL}"))

    def close(self, connection_id: str) -> None:
        """Drop the connection's subscriptions, then the connection."""
        viewer = self.viewer(connection_id)
        with translated("list subscriptions"):
            items = self._client.query(
                TableName=self._table,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames=_KEYS,
                ExpressionAttributeValues={":pk": {"S": f"conn#{connection_id}"}},
            ).get("Items", [])
        for item in items:
            sort_key = item[Push.SORT_KEY]["S"]
            if sort_key.startswith("sub#") and viewer is not None:
                task_id = sort_key.removeprefix("sub#")
                with translated("drop subscription"):
                    target = _target(None if task_id == _ALL else task_id, viewer.user_id)
                    self._client.delete_item(TableName=self._table, Key=_key(target, connection_id))
            with translated("close connection"):
                self._client.delete_item(TableName=self._table, Key=_key(f"conn#{connection_id}", sort_key))

    def subscribers(self, task: Task) -> list[Subscription]:
        """The connections following ``task`` or all of its owner's tasks."""
        found: list[Subscription] = []
        for pk, task_id in ((f"task#{task.task_id}", task.task_id), (f"owner#{task.user_id}", None)):
            request: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :pk",
                "ExpressionAttributeNames": _KEYS,
                "ExpressionAttributeValues": {":pk": {"S": pk}},
            }
            while True:
                with translated("find subscribers"):
                    page = self._client.query(**request)
                found.extend(
                    Subscription(item[Push.SORT_KEY]["S"], _viewer_of(item), task_id) for item in page.get("Items", [])
                )
                if "LastEvaluatedKey" not in page:
                    break
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found


class DynamoTickets:
    """:class:`exports.push.ports.TicketStore` on the connections table: a ticket is stored by
    its hash and used up by a delete conditional on it being there and still valid."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    @staticmethod
    def _key(ticket: str) -> dict[str, Any]:
        return _key(f"ticket#{hashlib.sha256(ticket.encode()).hexdigest()}", _TICKET)

    def issue(self, ticket: str, viewer: Viewer, now: datetime, ttl_sec: int) -> None:
        """Store the ticket, valid until ``now + ttl_sec`` (tickets are random: a clash is refused)."""
        valid_until = {"valid_until": {"N": str(int(now.timestamp()) + ttl_sec)}}
        with translated("issue ticket"):
            self._client.put_item(
                TableName=self._table,
                Item=self._key(ticket) | _viewer_attributes(viewer) | valid_until | _expiry(now, ttl_sec),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames=_KEYS,
            )

    def redeem(self, ticket: str, now: datetime) -> Viewer | None:
        """The ticket's viewer, deleting it in the same call; None for an unknown, used or
        expired ticket (DynamoDB's TTL deletes late, so validity is checked here)."""
        with suppress(ConditionNotMet), translated("redeem ticket"):
            old = self._client.delete_item(
                TableName=self._table,
                Key=self._key(ticket),
                ConditionExpression="attribute_exists(#pk) AND #until > :now",
                ExpressionAttributeNames=_KEYS | {"#until": "valid_until"},
                ExpressionAttributeValues={":now": {"N": str(int(now.timestamp()))}},
                ReturnValues="ALL_OLD",
            )
            return _viewer_of(old["Attributes"])
        return None
