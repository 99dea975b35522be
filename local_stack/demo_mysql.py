"""The demo shop in MySQL (MariaDB locally): the demo orders and customers, the same rows as the
PostgreSQL demo database, loaded with multi-row INSERTs (``EXPORTS_DEMO_MYSQL=1 make run``, and
the tests of the MySQL kind)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime
from typing import Any, Final

from local_stack.demo_customers import demo_customers
from local_stack.demo_orders import demo_orders

# TIMESTAMP columns are instants (stored in UTC, read in the session's zone); DATETIME is a wall
# time; BOOLEAN is MySQL's alias of TINYINT(1).
SCHEMA: Final = (
    "DROP TABLE IF EXISTS orders",
    "DROP TABLE IF EXISTS customers",
    """CREATE TABLE customers (
    customer_id      VARCHAR(32) PRIMARY KEY,
    tenant_id        VARCHAR(32) NOT NULL,
    name             VARCHAR(200) NOT NULL,
    email            VARCHAR(200),
    phone            VARCHAR(40),
    country          CHAR(2),
    city             VARCHAR(100),
    signup_date      DATE NOT NULL,
    signed_up_at     TIMESTAMP(0) NOT NULL,
    plan             VARCHAR(20),
    marketing_opt_in BOOLEAN NOT NULL DEFAULT FALSE,
    KEY customers_by_signup (tenant_id, signup_date, customer_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin""",
    """CREATE TABLE orders (
    order_id       VARCHAR(32) PRIMARY KEY,
    tenant_id      VARCHAR(32) NOT NULL,
    order_date     DATE NOT NULL,
    created_at     TIMESTAMP(0) NOT NULL,
    customer_id    VARCHAR(32) NOT NULL,
    customer_name  VARCHAR(200) NOT NULL,
    customer_email VARCHAR(200),
    country        CHAR(2),
    status         VARCHAR(20) NOT NULL,
    item_count     INT NOT NULL,
    items          TEXT,
    amount         DECIMAL(12, 2) NOT NULL,
    currency       CHAR(3) NOT NULL,
    note           TEXT,
    KEY orders_by_tenant_date (tenant_id, order_date, order_id),
    KEY orders_by_date (order_date, order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin""",
)
_ORDER_COLUMNS: Final = (
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
)
_CUSTOMER_COLUMNS: Final = (
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
# Rows per INSERT statement.
_INSERT_ROWS: Final = 1000


def load_demo_mysql(connect: dict[str, Any], orders: int, today: date) -> tuple[int, int]:
    """(Re)create the demo tables in the database PyMySQL's keywords ``connect`` name and fill
    them; returns (orders, customers) loaded."""
    import pymysql

    conn = pymysql.connect(**connect, charset="utf8mb4", autocommit=False)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
            for statement in SCHEMA:
                cursor.execute(statement)
            customers = _insert(cursor, "customers", _CUSTOMER_COLUMNS, _customer_rows(today))
            loaded = _insert(cursor, "orders", _ORDER_COLUMNS, _order_rows(orders, today))
        conn.commit()
    finally:
        conn.close()
    return loaded, customers


def _insert(cursor: Any, table: str, columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> int:
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"
    count, batch = 0, []
    for row in rows:
        batch.append(row)
        if len(batch) == _INSERT_ROWS:
            cursor.executemany(sql, batch)
            count, batch = count + len(batch), []
    if batch:
        cursor.executemany(sql, batch)
        count += len(batch)
    return count


def _utc(text: str) -> datetime:
    """An ISO instant as the naive UTC datetime a TIMESTAMP takes in a UTC session."""
    return datetime.fromisoformat(text).astimezone(UTC).replace(tzinfo=None)


def _order_rows(count: int, today: date) -> Iterator[tuple[Any, ...]]:
    for order in demo_orders(count, today):
        yield (
            order["tenant_id"],
            order["order_id"],
            order["order_day"],
            _utc(order["created_at"]),
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
        )


def _customer_rows(today: date) -> Iterator[tuple[Any, ...]]:
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
            _utc(customer["signed_up_at"]),
            customer.get("plan"),
            bool(customer.get("marketing_opt_in")),
        )
