"""Admission state kept in the tasks table: hot-key token buckets and throughput statistics.

Both are read-modify-write with a condition on what was read (optimistic concurrency), so
concurrent workers never both spend the same token or lose an update."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from exports.accepting.admission_rules import Bucket, Throughput, take_token, updated_throughput
from exports.core.aws.errors import ConditionNotMet, translated
from exports.core.aws.task_table import bucket_id, throughput_id
from exports.core.aws.task_table import key as item_key
from exports.core.config.tables import TaskTable
from exports.core.errors import RetryableError

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient

_ATTEMPTS = 8


class DynamoHotKeyLimiter:
    """:class:`exports.accepting.ports.HotKeyLimiter`: one token bucket item per hot key."""

    def __init__(self, client: DynamoDBClient, table_name: str, rate_per_minute: float, burst: int) -> None:
        self._client = client
        self._table = table_name
        self._rate = rate_per_minute / 60
        self._burst = burst

    def acquire(self, hot_key: str, now: datetime) -> float:
        """Take a token for ``hot_key``: 0 if granted, else seconds until one is free."""
        key = item_key(bucket_id(hot_key))
        for _ in range(_ATTEMPTS):
            with translated("read token bucket"):
                item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
            bucket = (
                Bucket(tokens=float(item["tokens"]["N"]), updated_at=datetime.fromisoformat(item["updated_at"]["S"]))
                if item
                else None
            )
            allowed, after, wait = take_token(bucket, now, self._rate, self._burst)
            if not allowed:
                return wait
            if _write_if_unchanged(
                self._client,
                self._table,
                key,
                {"tokens": {"N": repr(after.tokens)}, "updated_at": {"S": after.updated_at.isoformat()}},
                item,
            ):
                return 0.0
        raise RetryableError(f"token bucket {hot_key} is contended")


class DynamoThroughputStats:
    """:class:`exports.accepting.ports.ThroughputStats`: moving averages per export type and format."""

    def __init__(self, client: DynamoDBClient, table_name: str, smoothing: float) -> None:
        self._client = client
        self._table = table_name
        self._smoothing = smoothing

    def get(self, key: str) -> Throughput | None:
        """The current averages, or None before the first run."""
        with translated("read throughput"):
            item = self._client.get_item(TableName=self._table, Key=_stats_key(key)).get("Item")
        return _throughput(item) if item else None

    def record(self, key: str, rows: int, seconds: float, days: int | None = None) -> None:
        """Fold one finished run in; gives up quietly under heavy contention (it is a statistic)."""
        item_key = _stats_key(key)
        for _ in range(_ATTEMPTS):
            with translated("read throughput"):
                item = self._client.get_item(TableName=self._table, Key=item_key, ConsistentRead=True).get("Item")
            after = updated_throughput(_throughput(item) if item else None, rows, seconds, self._smoothing, days)
            values = {
                name: {"N": repr(float(value))}
                for name, value in vars(after).items()
                if value is not None  # rows_per_day stays unknown for types without a date range
            }
            if _write_if_unchanged(self._client, self._table, item_key, values, item):
                return


def _stats_key(export_type: str) -> dict[str, Any]:
    return item_key(throughput_id(export_type))


def _throughput(item: dict[str, Any]) -> Throughput:
    def optional(name: str) -> float | None:
        return float(item[name]["N"]) if name in item else None

    return Throughput(
        rows_per_sec=float(item["rows_per_sec"]["N"]),
        task_sec=float(item["task_sec"]["N"]),
        rows_per_task=float(item["rows_per_task"]["N"]),
        rows_squared=optional("rows_squared"),
        rows_times_sec=optional("rows_times_sec"),
        rows_per_day=optional("rows_per_day"),
    )


def _write_if_unchanged(
    client: DynamoDBClient, table: str, key: dict[str, Any], values: dict[str, Any], read: dict[str, Any] | None
) -> bool:
    """Write ``values`` if the item's version is still the one read; False if someone was first."""
    version = int(read["version"]["N"]) if read else 0
    try:
        with translated("update admission state"):
            client.put_item(
                TableName=table,
                Item={**key, **values, "version": {"N": str(version + 1)}},
                ConditionExpression="attribute_not_exists(#pk) OR #version = :version",
                ExpressionAttributeNames={"#pk": TaskTable.PARTITION_KEY, "#version": "version"},
                ExpressionAttributeValues={":version": {"N": str(version)}},
            )
    except ConditionNotMet:
        return False
    return True
