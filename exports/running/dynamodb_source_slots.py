"""The per-source limit of concurrent exports: ``limit`` slot items per source in the tasks
table, each taken by a conditional write (like the hot-key buckets), so all workers together
never run more exports on one source than it allows.

A slot is free when it has no holder or its lease ran out: a worker that crashed while holding
one frees it after ``SOURCE_SLOT_LEASE_SEC``; a running export renews its lease with its progress
writes."""

from __future__ import annotations

import contextlib
import zlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from exports.core.aws.errors import ConditionNotMet, translated
from exports.core.aws.task_table import key, slot_id
from exports.running.ports import SOURCE_SLOT_LEASE_SEC, SlotLease

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient


class DynamoSourceSlots:
    """:class:`exports.running.ports.SourceSlotLeases` on the tasks table."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, lease: timedelta = timedelta(seconds=SOURCE_SLOT_LEASE_SEC)
    ) -> None:
        self._client = client
        self._table = table_name
        self._lease = lease

    def acquire(self, source: str, limit: int, holder: str, now: datetime) -> SlotLease | None:
        """A free (or already ours) slot of ``source`` for ``holder``; None if all are busy. A
        holder tries the slots from its own starting point, so workers spread over them."""
        start = zlib.crc32(holder.encode()) % limit
        for offset in range(limit):
            lease = SlotLease(source, (start + offset) % limit, holder)
            if self._write(lease, now, take=True):
                return lease
        return None

    def renew(self, lease: SlotLease, now: datetime) -> bool:
        """Extend the lease; False if the slot is no longer ours (it expired and was taken)."""
        return self._write(lease, now, take=False)

    def release(self, lease: SlotLease) -> None:
        """Free the slot if it is still ours."""
        # Not ours any more (it expired and was taken): nothing to give back.
        with contextlib.suppress(ConditionNotMet), translated("release source slot"):
            self._client.update_item(
                TableName=self._table,
                Key=_key(lease),
                UpdateExpression="REMOVE holder, lease_until",
                ConditionExpression="holder = :holder",
                ExpressionAttributeValues={":holder": {"S": lease.holder}},
            )

    def holders(self, source: str, limit: int) -> list[str]:
        """Who holds the slots of ``source`` now (for tests and operators)."""
        held = []
        for index in range(limit):
            with translated("read source slot"):
                item = self._client.get_item(
                    TableName=self._table, Key=_key(SlotLease(source, index, "")), ConsistentRead=True
                ).get("Item")
            if item and "holder" in item:
                held.append(item["holder"]["S"])
        return held

    def _write(self, lease: SlotLease, now: datetime, take: bool) -> bool:
        condition = "holder = :holder"
        if take:
            condition = "attribute_not_exists(holder) OR holder = :holder OR lease_until < :now"
        values = {
            ":holder": {"S": lease.holder},
            ":until": {"N": str(int((now + self._lease).timestamp()))},
        }
        if take:
            values[":now"] = {"N": str(int(now.timestamp()))}
        try:
            with translated("take source slot"):
                self._client.update_item(
                    TableName=self._table,
                    Key=_key(lease),
                    UpdateExpression="SET holder = :holder, lease_until = :until",
                    ConditionExpression=condition,
                    ExpressionAttributeValues=values,
                )
        except ConditionNotMet:
            return False
        return True


def _key(lease: SlotLease) -> dict[str, Any]:
    return key(slot_id(lease.source, lease.index))
