"""DynamoDB: the tasks table, the schedules table and the demo data tables, on demand, with point-in-time recovery.

The tasks table is a single table: besides the tasks it holds the admission items under prefixed
keys (see :mod:`exports.core.aws.task_table`). They carry no ``user_id``, so they stay out of the
``by_user`` index, and those that expire do so by the same TTL attribute as the tasks.

The orders and customers tables hold the demo data: a declared DynamoDB type reads one by naming
its variable as ``table_env`` (``EXPORTS_ORDERS_TABLE``, as exports.toml's ``orders_dynamodb``
does, or ``EXPORTS_CUSTOMERS_TABLE``); the functions that build the registry get the variables
the declaration names, and the worker ``Query`` on the index each declared type reads (see
:class:`infra.functions.ServiceFunctions`). Your own tables are declared by name instead
(docs/deploy.md, "The data sources").
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from exports.core.config.audit import AuditTable
from exports.core.config.env import Env
from exports.core.config.push import Push
from exports.core.config.tables import CustomersTable, DestinationsTable, OrdersTable, SchedulesTable, TaskTable
from infra.function_factory import removal_policy
from infra.settings import StageSettings


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class Tables(Construct):
    """The service's tables; keys, index and TTL names come from :mod:`exports.core.config`."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        common: dict[str, Any] = {
            "billing": dynamodb.Billing.on_demand(),
            "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            "deletion_protection": settings.protect_data,
            "removal_policy": removal_policy(settings),
        }
        self.tasks = dynamodb.TableV2(
            self,
            "Tasks",
            partition_key=_string(TaskTable.PARTITION_KEY),
            time_to_live_attribute=TaskTable.TTL_ATTRIBUTE,
            # The push function reads every task write from here (docs/push.md): the old image
            # tells a status change from a progress step and from a write watchers do not see.
            dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=TaskTable.USER_INDEX,
                    partition_key=_string(TaskTable.USER_INDEX_PARTITION_KEY),
                    sort_key=_string(TaskTable.USER_INDEX_SORT_KEY),
                    projection_type=dynamodb.ProjectionType.ALL,
                )
            ],
            **common,
        )
        # The push channel's connections, subscriptions and stream tickets (docs/push.md): a
        # table of its own, keyed pk + sk (a subscription is found by task or by owner), expiring
        # with the connections, and no churn on the tasks table's stream.
        self.connections = dynamodb.TableV2(
            self,
            "Connections",
            partition_key=_string(Push.PARTITION_KEY),
            sort_key=_string(Push.SORT_KEY),
            time_to_live_attribute=Push.TTL_ATTRIBUTE,
            **common,
        )
        # Scheduled exports (docs/schedules.md): each schedule's item and its firings' idempotency
        # records under the schedule's partition (pk + sk); a user's schedules through by_user;
        # the firing records expire.
        self.schedules = dynamodb.TableV2(
            self,
            "Schedules",
            partition_key=_string(SchedulesTable.PARTITION_KEY),
            sort_key=_string(SchedulesTable.SORT_KEY),
            time_to_live_attribute=SchedulesTable.TTL_ATTRIBUTE,
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=SchedulesTable.USER_INDEX,
                    partition_key=_string(SchedulesTable.USER_INDEX_PARTITION_KEY),
                    sort_key=_string(SchedulesTable.USER_INDEX_SORT_KEY),
                    projection_type=dynamodb.ProjectionType.ALL,
                )
            ],
            **common,
        )
        # The audit trail (docs/audit.md): each tenant's daily chain of records, its usage and its
        # event markers under ``<tenant>#<day>``, expiring a day at a time. A protected stage keeps
        # it (deletion protection, retained with the stack), as every table.
        self.audit = dynamodb.TableV2(
            self,
            "Audit",
            partition_key=_string(AuditTable.PARTITION_KEY),
            sort_key=_string(AuditTable.SORT_KEY),
            time_to_live_attribute=AuditTable.TTL_ATTRIBUTE,
            **common,
        )
        # Delivery destinations (docs/destinations.md): each tenant's destinations and its count
        # of them under the tenant's partition (pk + sk); nothing expires.
        self.destinations = dynamodb.TableV2(
            self,
            "Destinations",
            partition_key=_string(DestinationsTable.PARTITION_KEY),
            sort_key=_string(DestinationsTable.SORT_KEY),
            **common,
        )
        self.orders = self._day_indexed("DemoOrders", OrdersTable, common)
        self.customers = self._day_indexed("DemoCustomers", CustomersTable, common)

    def _day_indexed(
        self, construct_id: str, keys: type[OrdersTable | CustomersTable], common: dict[str, Any]
    ) -> dynamodb.TableV2:
        """A data-source table read day by day through its day index (orders, customers)."""
        return dynamodb.TableV2(
            self,
            construct_id,
            partition_key=_string(keys.PARTITION_KEY),
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=keys.DAY_INDEX,
                    partition_key=_string(keys.DAY_INDEX_PARTITION_KEY),
                    sort_key=_string(keys.DAY_INDEX_SORT_KEY),
                    projection_type=dynamodb.ProjectionType.ALL,
                )
            ],
            **common,
        )

    def by_variable(self) -> dict[str, dynamodb.TableV2]:
        """The demo tables (and the audit table, which exports.toml's ``audit_log`` reads) by the
        variable a declared type names them with (``table_env``)."""
        return {Env.ORDERS_TABLE: self.orders, Env.CUSTOMERS_TABLE: self.customers, Env.AUDIT_TABLE: self.audit}

    @staticmethod
    def index_arn(table: dynamodb.TableV2, index_name: str) -> str:
        """The ARN of one index of ``table`` (grants name it instead of ``index/*``)."""
        return f"{table.table_arn}/index/{index_name}"
