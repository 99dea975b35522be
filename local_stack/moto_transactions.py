"""moto's DynamoDB transactions, rolled back item by item.

Before a TransactWriteItems, moto deep-copies every table it names, to put the copy back if the
transaction is cancelled: a transaction costs time in proportion to the whole table. Every
submit, claim and ending writes the tasks table in a transaction, so a long ``make run`` session
or a test run of hundreds of tasks got slower with each task. Here only what a transaction can
change is kept: the items it names, and the length of the table's stream. A cancelled
transaction gets them back and loses the stream records it wrote; the outcome is moto's own (all
or nothing, the cancellation's reasons item by item).

Installed by the local stack and, for the whole session, by the test suite. Never on AWS.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from moto.dynamodb import models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

from local_stack import thread_safety
from local_stack.moto_patch import MOTO, CountedPatch


class _NoTableCopy:
    """moto's ``copy`` module as its transaction code sees it: tables are not copied."""

    @staticmethod
    def deepcopy(value: Any) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value)


def _snapshot(backend: Any, operation: dict[str, Any]) -> tuple[Any, Any, Any, Any] | None:
    """The table, key and a copy of the item (or None) one operation names."""
    table = backend.tables.get(operation.get("TableName"))
    if table is None:
        return None  # moto refuses the transaction before writing anything
    key = operation.get("Key") or operation.get("Item", {})
    if table.hash_key_attr not in key or (table.range_key_attr and table.range_key_attr not in key):
        return None  # moto refuses this operation before writing it
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    return table, hash_value, range_value, copy.deepcopy(table.get_item(hash_value, range_value))


def _restore(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    if range_value is None:
        table.items.pop(hash_value, None)
        if item is not None:
            table.items[hash_value] = item
    else:
        table.items[hash_value].pop(range_value, None)
        if item is not None:
            table.items[hash_value][range_value] = item


def _item_by_item(original: Callable[..., None]) -> Callable[..., None]:
    """``DynamoDBBackend.transact_write_items`` that keeps aside only the items it names."""

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        # Under local mode's DynamoDB lock: no other thread sees the items or the module swapped.
        with thread_safety.MOTO_DYNAMODB.lock:
            snapshots = [s for entry in transact_items if (s := _snapshot(backend, next(iter(entry.values()))))]
            shards = {id(s[0].stream_shard): s[0].stream_shard for s in snapshots if s[0].stream_shard}
            streams = [(shard, len(shard.items)) for shard in shards.values()]
            models.copy = _NoTableCopy  # type: ignore[assignment]
            try:
                original(backend, transact_items)
            except Exception:
                for table, hash_value, range_value, item in reversed(snapshots):
                    _restore(table, hash_value, range_value, item)
                for shard, length in streams:
                    del shard.items[length:]
                raise
            finally:
                models.copy = copy

    return transact_write_items


ROLLBACK = CountedPatch(DynamoDBBackend, "transact_write_items", _item_by_item, verified_on=MOTO)
