"""The audit trail on its DynamoDB table (keys: :class:`exports.core.config.audit.AuditTable`).

An append is one transaction: the event's marker (absent before), the record under its number
(absent before) and, for an export's end, the day's usage counters. The first condition makes a
redelivered event a no-op, the second makes two writers never share a number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from exports.audit.model import AuditRecord, Usage, canonical
from exports.audit.ports import AlreadyRecorded, ChainMoved, StoredRecord
from exports.core.aws.errors import TransactionCancelled, translated
from exports.core.config.audit import AuditTable

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient
    from types_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

_EVENT: Final = "event"
_RECORD: Final = "record"
_USAGE: Final = "usage"
_COUNTS: Final = "counts"
_NOT_THERE: Final = "attribute_not_exists(#pk)"
_SEQ_DIGITS: Final = 10


def _counts_key(tenant: str) -> dict[str, Any]:
    """The tenant's running counts: one item, kept as long as the tenant (no TTL)."""
    return {
        AuditTable.PARTITION_KEY: {"S": f"{tenant}{AuditTable.COUNTS_SUFFIX}"},
        AuditTable.SORT_KEY: {"S": AuditTable.COUNTS_SORT_KEY},
    }


def partition(tenant: str, day: date | str) -> str:
    """The partition of a tenant's day."""
    return f"{tenant}#{day if isinstance(day, str) else day.isoformat()}"


def record_key(seq: int) -> str:
    """The sort key of record ``seq`` (zero-padded: the keys sort as the numbers)."""
    return f"{AuditTable.RECORD_PREFIX}{seq:0{_SEQ_DIGITS}d}"


def _columns(record: AuditRecord) -> dict[str, Any]:
    """The record's fields as attributes of their own, for the ``audit_log`` export type to read
    as columns (exports.toml); its canonical text (``record``) stays what the hash covers."""
    values = record.as_json()
    return {
        name: {"N": str(value)}
        if isinstance(value, int)
        else {"S": value if isinstance(value, str) else canonical(value)}
        for name, value in values.items()
    }


class DynamoAuditLog:
    """:class:`exports.audit.ports.AuditLog` on the audit table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def tip(self, tenant: str, day: date) -> AuditRecord | None:
        """The last record of the tenant's day, or None."""
        with translated("read the audit chain's end"):
            items = self._client.query(
                TableName=self._table,
                KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
                ExpressionAttributeNames={"#pk": AuditTable.PARTITION_KEY, "#sk": AuditTable.SORT_KEY},
                ExpressionAttributeValues={
                    ":pk": {"S": partition(tenant, day)},
                    ":prefix": {"S": AuditTable.RECORD_PREFIX},
                },
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            ).get("Items", [])
        return AuditRecord.parse(items[0][AuditTable.RECORD_ATTRIBUTE]["S"]) if items else None

    def add(self, record: AuditRecord, usage: Usage | None, counts: Mapping[str, int], expires_at: datetime) -> None:
        """Append ``record`` (with its usage and counts) in one transaction."""
        pk = partition(record.tenant, record.day)
        expires = {"N": str(int(expires_at.timestamp()))}
        names = {"#pk": AuditTable.PARTITION_KEY}
        items: dict[str, TransactWriteItemTypeDef] = {
            _EVENT: {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        AuditTable.PARTITION_KEY: {"S": pk},
                        AuditTable.SORT_KEY: {"S": AuditTable.EVENT_PREFIX + record.event_id},
                        "seq": {"N": str(record.seq)},
                        AuditTable.TTL_ATTRIBUTE: expires,
                    },
                    "ConditionExpression": _NOT_THERE,
                    "ExpressionAttributeNames": names,
                }
            },
            _RECORD: {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        AuditTable.PARTITION_KEY: {"S": pk},
                        AuditTable.SORT_KEY: {"S": record_key(record.seq)},
                        AuditTable.RECORD_ATTRIBUTE: {"S": record.text()},
                        AuditTable.TTL_ATTRIBUTE: expires,
                        **_columns(record),
                    },
                    "ConditionExpression": _NOT_THERE,
                    "ExpressionAttributeNames": names,
                }
            },
        }
        if usage is not None:
            items[_USAGE] = {
                "Update": {
                    "TableName": self._table,
                    "Key": {AuditTable.PARTITION_KEY: {"S": pk}, AuditTable.SORT_KEY: {"S": AuditTable.USAGE_SORT_KEY}},
                    "UpdateExpression": "ADD exports :e, #rows :r, #bytes :b, cpu_seconds :c SET #ttl = :ttl",
                    "ExpressionAttributeNames": {"#rows": "rows", "#bytes": "bytes", "#ttl": AuditTable.TTL_ATTRIBUTE},
                    "ExpressionAttributeValues": {
                        ":e": {"N": str(usage.exports)},
                        ":r": {"N": str(usage.rows)},
                        ":b": {"N": str(usage.bytes)},
                        ":c": {"N": str(Decimal(repr(round(usage.cpu_seconds, 6))))},
                        ":ttl": expires,
                    },
                }
            }
        deltas = {name: delta for name, delta in counts.items() if delta}
        if deltas:
            names = {f"#c{i}": name for i, name in enumerate(deltas)}
            items[_COUNTS] = {
                "Update": {
                    "TableName": self._table,
                    "Key": _counts_key(record.tenant),
                    "UpdateExpression": "ADD " + ", ".join(f"#c{i} :c{i}" for i in range(len(deltas))),
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": {f":c{i}": {"N": str(d)} for i, d in enumerate(deltas.values())},
                }
            }
        try:
            with translated("append to the audit trail", items=tuple(items)):
                self._client.transact_write_items(TransactItems=list(items.values()))
        except TransactionCancelled as cancelled:
            if cancelled.failed(_EVENT):
                raise AlreadyRecorded(f"event {record.event_id} is recorded already") from cancelled
            if cancelled.failed(_RECORD):
                raise ChainMoved(f"record {record.seq} of {pk} is taken") from cancelled
            raise

    def records(self, tenant: str, day: date, after_seq: int, limit: int) -> list[StoredRecord]:
        """Up to ``limit`` records after ``after_seq``, in order."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :start AND :end",
            "ExpressionAttributeNames": {"#pk": AuditTable.PARTITION_KEY, "#sk": AuditTable.SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": partition(tenant, day)},
                ":start": {"S": record_key(after_seq + 1)},
                ":end": {"S": record_key(10**_SEQ_DIGITS - 1)},
            },
            "Limit": limit,
            "ConsistentRead": True,
        }
        with translated("read the audit trail"):
            items = self._client.query(**request).get("Items", [])
        return [self._stored(tenant, day, item) for item in items]

    @staticmethod
    def _stored(tenant: str, day: date, item: dict[str, Any]) -> StoredRecord:
        seq = int(item[AuditTable.SORT_KEY]["S"].removeprefix(AuditTable.RECORD_PREFIX))
        text = item.get(AuditTable.RECORD_ATTRIBUTE, {}).get("S", "")
        try:
            values = json.loads(text)
        except ValueError:
            values = None
        if not isinstance(values, dict):
            # Unreadable: shown by where it is stored, for verify to name.
            values = {"tenant": tenant, "day": day.isoformat(), "seq": seq}
        return StoredRecord(seq=seq, values=values)

    def usage(self, tenant: str, day: date) -> Usage:
        """The day's usage counters (zero before its first export ended)."""
        key = {
            AuditTable.PARTITION_KEY: {"S": partition(tenant, day)},
            AuditTable.SORT_KEY: {"S": AuditTable.USAGE_SORT_KEY},
        }
        with translated("read usage"):
            item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item") or {}

        def number(name: str) -> Decimal:
            return Decimal(item.get(name, {}).get("N", "0"))

        return Usage(
            exports=int(number("exports")),
            rows=int(number("rows")),
            bytes=int(number("bytes")),
            cpu_seconds=float(number("cpu_seconds")),
        )

    def counts(self, tenant: str) -> dict[str, int]:
        """The tenant's running counts (none before its first counted event)."""
        with translated("read the tenant's counts"):
            key = _counts_key(tenant)
            item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return {
            name: int(value["N"])
            for name, value in (item or {}).items()
            if name not in (AuditTable.PARTITION_KEY, AuditTable.SORT_KEY) and "N" in value
        }
