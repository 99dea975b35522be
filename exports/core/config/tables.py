"""Key schemas of the DynamoDB tables (the connections table's are in :mod:`exports.core.config.push`)."""

from __future__ import annotations

from typing import Final


class TaskTable:
    """Key schema of the tasks table and its index."""

    PARTITION_KEY: Final = "task_id"
    USER_INDEX: Final = "by_user"
    USER_INDEX_PARTITION_KEY: Final = "user_id"
    # task ids are time-sortable, so sorting the index by them lists newest first.
    USER_INDEX_SORT_KEY: Final = "task_id"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"
    # Bumped by every write of a task item (the repository's ADD): the push channel's ``seq``.
    WRITE_SEQ: Final = "write_seq"


class SchedulesTable:
    """Key schema of the schedules table: one item per schedule, and one per firing (the
    firing's idempotency record), under the schedule's partition."""

    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"
    USER_INDEX: Final = "by_user"
    USER_INDEX_PARTITION_KEY: Final = "user_id"
    # schedule ids are time-sortable: the index lists newest first.
    USER_INDEX_SORT_KEY: Final = "schedule_id"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"


class DestinationsTable:
    """Key schema of the destinations table: a tenant's destinations and its count of them,
    under the tenant's partition (``pk = "tenant#<tenant>"``; ``sk`` the destination id, or
    ``"count"``). The key holds the tenant, so a destination is only ever read through its own
    tenant: another tenant's id is simply not there."""

    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"


class OrdersTable:
    """Key schema of the demo orders table (the data source of the ``orders`` export type)."""

    PARTITION_KEY: Final = "order_id"
    DAY_INDEX: Final = "by_day"
    DAY_INDEX_PARTITION_KEY: Final = "order_day"
    DAY_INDEX_SORT_KEY: Final = "created_at"


class CustomersTable:
    """Key schema of the demo customers table (the data source of the ``customers`` export type)."""

    PARTITION_KEY: Final = "customer_id"
    DAY_INDEX: Final = "by_signup_day"
    DAY_INDEX_PARTITION_KEY: Final = "signup_day"
    DAY_INDEX_SORT_KEY: Final = "signed_up_at"
