"""The plugin factories a declaration names (``plugin = "examples.demo_plugins.factories:orders"``).

Each reads its table's name from the deployment's environment (``Env.ORDERS_TABLE``,
``Env.CUSTOMERS_TABLE``: the demo tables the CDK app and local mode create), so the service's
settings carry nothing for them.
"""

from __future__ import annotations

from examples.demo_plugins.customers import CustomersExport
from examples.demo_plugins.dynamodb_customers import DynamoCustomersReader
from examples.demo_plugins.dynamodb_orders import DynamoOrdersReader
from examples.demo_plugins.orders import OrdersExport
from examples.demo_plugins.sales_report import SalesReportExport
from exports.core.config.env import Env
from exports.export_types.build import PluginContext


def _orders_reader(context: PluginContext) -> DynamoOrdersReader:
    return DynamoOrdersReader(context.client("dynamodb"), context.environ[Env.ORDERS_TABLE])


def orders(context: PluginContext) -> OrdersExport:
    """The demo ``orders`` type on the demo DynamoDB orders table."""
    return OrdersExport(_orders_reader(context))


def customers(context: PluginContext) -> CustomersExport:
    """The demo ``customers`` type on the demo DynamoDB customers table."""
    return CustomersExport(DynamoCustomersReader(context.client("dynamodb"), context.environ[Env.CUSTOMERS_TABLE]))


def sales_report(context: PluginContext) -> SalesReportExport:
    """The demo ``sales_report`` type, totalled in Python over the DynamoDB orders (on PostgreSQL
    the same report is a declared ``GROUP BY``)."""
    return SalesReportExport(_orders_reader(context))
