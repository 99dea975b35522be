"""The items of the tasks table and their keys, in one place.

The tasks table is a single table keyed by one string attribute (``TaskTable.PARTITION_KEY``):

- a **task** under its own id (``exp_...``), the only kind with a ``user_id``, so the only kind
  in the ``by_user`` index;
- a user's **quota** counter of active tasks, ``quota#<user>``;
- a **dedup** marker held by the active task of an identical request, ``dedup#<hash>``;
- a hot key's token **bucket**, ``bucket#<hot key>``;
- an export type's **throughput** averages, ``stats#<export type>``;
- a capacity pool's queued **work** (a lane, a limited data source), ``capacity#<pool>``, and
  its measured **drain**, ``capacity-drain#<pool>`` (exports.core.capacity_rules);
- a data source's concurrency **slot**, ``source-slot#<source>#<index>``;
- an **idempotency** record of a submit with an ``Idempotency-Key``, ``idempotency#<hash>``
  (Powertools names it from :data:`IDEMPOTENCY_PREFIX`).

Those that expire do so by the tasks' TTL attribute (``TaskTable.TTL_ATTRIBUTE``).
"""

from __future__ import annotations

from typing import Any

from exports.core.config.tables import TaskTable

IDEMPOTENCY_PREFIX = "idempotency"


def key(item_id: str) -> dict[str, Any]:
    """The DynamoDB key of the item ``item_id`` (any kind)."""
    return {TaskTable.PARTITION_KEY: {"S": item_id}}


def quota_id(user_id: str) -> str:
    """The id of the user's quota counter."""
    return f"quota#{user_id}"


def dedup_id(dedup_key: str) -> str:
    """The id of the dedup marker of ``dedup_key``."""
    return f"dedup#{dedup_key}"


def bucket_id(hot_key: str) -> str:
    """The id of the token bucket of ``hot_key``."""
    return f"bucket#{hot_key}"


def throughput_id(export_type: str) -> str:
    """The id of the throughput averages of ``export_type``."""
    return f"stats#{export_type}"


def capacity_id(pool: str) -> str:
    """The id of the work queued in capacity ``pool``."""
    return f"capacity#{pool}"


def drain_id(pool: str) -> str:
    """The id of the measured drain of capacity ``pool``."""
    return f"capacity-drain#{pool}"


def slot_id(source: str, index: int) -> str:
    """The id of slot ``index`` of ``source``'s limit of concurrent exports."""
    return f"source-slot#{source}#{index}"
