"""The demo shop database: the demo orders and customers in PostgreSQL, loaded with ``COPY``."""

from __future__ import annotations

from datetime import date
from typing import Any

from local_stack.demo_customers import demo_customers
from local_stack.demo_orders import demo_orders

SCHEMA = """
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS customers;
CREATE TABLE customers (
    customer_id      text PRIMARY KEY,
    tenant_id        text NOT NULL,
    name             text NOT NULL,
    email            text,
    phone            text,
    country          char(2),
    city             text,
    signup_date      date NOT NULL,
    signed_up_at     timestamptz NOT NULL,
    plan             text,
    marketing_opt_in boolean NOT NULL DEFAULT false
);
CREATE INDEX customers_by_signup ON customers (tenant_id, signup_date, customer_id);
CREATE TABLE orders (
    order_id       text PRIMARY KEY,
    tenant_id      text NOT NULL,
    order_date     date NOT NULL,
    created_at     timestamptz NOT NULL,
    customer_id    text NOT NULL,
    customer_name  text NOT NULL,
    customer_email text,
    country        char(2),
    status         text NOT NULL,
    item_count     integer NOT NULL,
    items          text,
    amount         numeric(12, 2) NOT NULL,
    currency       char(3) NOT NULL,
    note           text,
    -- When the row last changed (set by whoever writes it, at commit): the feed type
    -- order_changes reads it (docs/schedules.md, "Feeds"). The demo rows never changed.
    updated_at     timestamptz NOT NULL
);
-- Every demo type reads one tenant's rows (exports.toml binds tenant_id from the token); the
-- admin type reads them all, in the same order.
CREATE INDEX orders_by_tenant_date ON orders (tenant_id, order_date, order_id);
CREATE INDEX orders_by_date ON orders (order_date, order_id);
CREATE INDEX orders_by_change ON orders (tenant_id, updated_at, order_id);
"""
# The columns loaded: the tenant, then the demo types' columns in the order exports.toml reads
# them (tests/postgres/test_declarations.py checks the declared types against these tables).
_ORDER_COLUMNS = (
    "tenant_id",
    "order_id",
    "order_date",
    "created_at",
    "customer_id",
    "customer_name",
    "customer_email",
    "country",
    "status",
    "item_count",
    "items",
    "amount",
    "currency",
    "note",
    "updated_at",
)
_CUSTOMER_COLUMNS = (
    "tenant_id",
    "customer_id",
    "name",
    "email",
    "phone",
    "country",
    "city",
    "signup_date",
    "signed_up_at",
    "plan",
    "marketing_opt_in",
)


def load_demo_data(uri: str, orders: int, today: date) -> tuple[int, int]:
    """(Re)create the demo tables and fill them; returns (orders, customers) loaded. Tables of
    the user's own in the same database are left alone."""
    import psycopg

    with psycopg.connect(uri) as conn:
        conn.execute(SCHEMA)
        with conn.cursor() as cursor:
            customers = _copy(cursor, "customers", _CUSTOMER_COLUMNS, _customer_rows(today))
            loaded = _copy(cursor, "orders", _ORDER_COLUMNS, _order_rows(orders, today))
        conn.execute("ANALYZE orders; ANALYZE customers")
    return loaded, customers


def _copy(cursor: Any, table: str, columns: tuple[str, ...], rows: Any) -> int:
    count = 0
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def _order_rows(count: int, today: date) -> Any:
    for order in demo_orders(count, today):
        yield (
            order["tenant_id"],
            order["order_id"],
            order["order_day"],
            order["created_at"],
            order["customer_id"],
            order["customer_name"],
            order.get("customer_email"),
            order.get("country"),
            order["status"],
            order["item_count"],
            order.get("items"),
            order["amount"],
            order["currency"],
            order.get("note"),
            order["created_at"],
        )


def _customer_rows(today: date) -> Any:
    for customer in demo_customers(today):
        yield (
            customer["tenant_id"],
            customer["customer_id"],
            customer["name"],
            customer.get("email"),
            customer.get("phone"),
            customer.get("country"),
            customer.get("city"),
            customer["signup_day"],
            customer["signed_up_at"],
            customer.get("plan"),
            bool(customer.get("marketing_opt_in")),
        )
