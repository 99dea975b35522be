"""Capacity pools in the tasks table: the work queued in each pool, and its measured drain
(exports.core.capacity_rules).

The queued work is one counter item per pool, changed only by atomic ``ADD``s: a reservation
adds under a condition on what is queued (so a burst of submits on many API instances never
admits more than fits, and no read comes before the write), starts and releases subtract. The
drain is another item, read-modify-written by the workers as tasks start (a few writers, not
the burst's), and read by the API through a short cache (``cache_sec``, so at most that old).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from exports.core.aws.errors import ConditionNotMet, translated
from exports.core.aws.task_table import capacity_id, drain_id, key
from exports.core.capacity_rules import Drain, drained
from exports.core.config.tables import TaskTable
from exports.core.ports import Reservation

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient

_ATTEMPTS = 8
# Queued work below this counts as none (the float residue of additions and subtractions).
_EMPTY_SEC = 0.001


class DynamoCapacityPools:
    """:class:`exports.core.ports.CapacityPools` over the tasks table."""

    def __init__(self, client: DynamoDBClient, table_name: str, smoothing: float, cache_sec: float) -> None:
        self._client = client
        self._table = table_name
        self._smoothing = smoothing
        self._cache_sec = cache_sec
        self._drains: dict[str, tuple[float, Drain | None]] = {}

    def drain(self, pool: str) -> Drain | None:
        """The pool's measured drain, read again at most every ``cache_sec``."""
        cached = self._drains.get(pool)
        if cached is not None and time.monotonic() - cached[0] < self._cache_sec:
            return cached[1]
        with translated("read capacity drain"):
            item = self._client.get_item(TableName=self._table, Key=key(drain_id(pool))).get("Item")
        measured = _drain(item)
        self._drains[pool] = (time.monotonic(), measured)
        return measured

    def reserve(self, pool: str, work_sec: float, limit_sec: float) -> Reservation:
        """Queue ``work_sec`` in the pool if at most ``limit_sec`` is queued there already."""
        try:
            with translated("reserve capacity"):
                answer = self._client.update_item(
                    TableName=self._table,
                    Key=key(capacity_id(pool)),
                    UpdateExpression="ADD #queued :work, #tasks :one",
                    ConditionExpression="attribute_not_exists(#queued) OR #queued <= :limit",
                    ExpressionAttributeNames={"#queued": "queued_sec", "#tasks": "queued_tasks"},
                    ExpressionAttributeValues={
                        ":work": {"N": _number(work_sec)},
                        ":one": {"N": "1"},
                        ":limit": {"N": _number(limit_sec)},
                    },
                    ReturnValues="UPDATED_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionNotMet as refused:
            return Reservation(admitted=False, queued_sec=_queued(refused.item))
        return Reservation(admitted=True, queued_sec=max(0.0, _queued(answer.get("Attributes")) - work_sec))

    def release(self, pool: str, work_sec: float) -> None:
        """Take back work that leaves the queue without starting."""
        self._subtract(pool, work_sec)

    def start(self, pool: str, work_sec: float, now: datetime, drained_sec: float | None = None) -> None:
        """Take ``work_sec`` off the queue as its task starts, and measure the drain: when work
        was still queued after the previous start, every worker was busy since, so the time
        between the two starts is what this one's work (``drained_sec``; None: a guess, not
        measured) took to drain."""
        queued_after = self._subtract(pool, work_sec)
        drain_key = key(drain_id(pool))
        stamp = now.timestamp()
        for _ in range(_ATTEMPTS):
            with translated("read capacity drain"):
                item = self._client.get_item(TableName=self._table, Key=drain_key, ConsistentRead=True).get("Item")
            measured = _drain(item)
            if drained_sec is not None and item is not None and float(item["queued_after"]["N"]) > _EMPTY_SEC:
                elapsed = stamp - float(item["started_at"]["N"])
                if elapsed >= 0:
                    measured = drained(measured, drained_sec, elapsed, self._smoothing)
            values: dict[str, Any] = {
                "started_at": {"N": _number(stamp)},
                "queued_after": {"N": _number(queued_after)},
            }
            if measured is not None:
                values |= {
                    "work_sec": {"N": _number(measured.work_sec)},
                    "elapsed_sec": {"N": _number(measured.elapsed_sec)},
                    "samples": {"N": str(measured.samples)},
                }
            if self._write_if_unchanged(drain_key, values, item):
                return

    def _subtract(self, pool: str, work_sec: float) -> float:
        """Take ``work_sec`` (and one task) off the pool's queue; what is queued after."""
        with translated("release capacity"):
            answer = self._client.update_item(
                TableName=self._table,
                Key=key(capacity_id(pool)),
                UpdateExpression="ADD #queued :work, #tasks :one",
                ExpressionAttributeNames={"#queued": "queued_sec", "#tasks": "queued_tasks"},
                ExpressionAttributeValues={":work": {"N": _number(-work_sec)}, ":one": {"N": "-1"}},
                ReturnValues="UPDATED_NEW",
            )
        return max(0.0, _queued(answer.get("Attributes")))

    def _write_if_unchanged(
        self, item_key: dict[str, Any], values: dict[str, Any], read: dict[str, Any] | None
    ) -> bool:
        version = int(read["version"]["N"]) if read else 0
        try:
            with translated("update capacity drain"):
                self._client.put_item(
                    TableName=self._table,
                    Item={**item_key, **values, "version": {"N": str(version + 1)}},
                    ConditionExpression="attribute_not_exists(#pk) OR #version = :version",
                    ExpressionAttributeNames={"#pk": TaskTable.PARTITION_KEY, "#version": "version"},
                    ExpressionAttributeValues={":version": {"N": str(version)}},
                )
        except ConditionNotMet:
            return False
        return True


def _number(value: float) -> str:
    # DynamoDB numbers take 38 digits; microseconds are plenty for seconds of work.
    return f"{value:.6f}"


def _queued(item: Any) -> float:
    return float(item["queued_sec"]["N"]) if item and "queued_sec" in item else 0.0


def _drain(item: dict[str, Any] | None) -> Drain | None:
    if not item or "work_sec" not in item:
        return None
    return Drain(
        work_sec=float(item["work_sec"]["N"]),
        elapsed_sec=float(item["elapsed_sec"]["N"]),
        samples=int(item["samples"]["N"]),
    )
