"""Small builders for the unit tests: tasks, results and stored orders with sensible defaults."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from exports.core.task import ExportFormat, ExportResult, Task, claim

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=120)
RETENTION = timedelta(hours=24)
TASK_ID = "exp_01JNCS6Z00000000000000000A"


def make_task(**overrides: Any) -> Task:
    """A PENDING orders task created at ``NOW``; any field can be overridden."""
    fields: dict[str, Any] = {
        "task_id": TASK_ID,
        "user_id": "alice",
        "export_type": "orders",
        "format": ExportFormat.CSV,
        "filters": {"date_from": "2025-03-01", "date_to": "2025-03-31"},
        "created_at": NOW,
        "expires_at": NOW + timedelta(seconds=300) + RETENTION,
    }
    return Task(**(fields | overrides))


def make_running_task(now: datetime = NOW, lease: timedelta = LEASE, **overrides: Any) -> Task:
    """A task claimed by a worker at ``now`` (attempt 1, lease until ``now + lease``)."""
    return claim(make_task(**overrides), now, lease)


def make_result(**overrides: Any) -> ExportResult:
    fields: dict[str, Any] = {
        "key": f"results/{TASK_ID}/orders_2025-03-01_2025-03-31.csv",
        "bytes": 2048,
        "rows": 17,
        "sha256": "a" * 64,
        "content_type": "text/csv; charset=utf-8",
        "file_name": "orders_2025-03-01_2025-03-31.csv",
    }
    return ExportResult(**(fields | overrides))


def make_order(**overrides: Any) -> dict[str, Any]:
    """An order as the orders table stores it (see ``local_stack/demo_orders.py``); no note by default."""
    order: dict[str, Any] = {
        "order_id": "ORD-0000001",
        "order_day": "2025-03-01",
        "created_at": "2025-03-01T09:15:00+00:00",
        "customer_id": "C00042",
        "customer_name": "王芳",
        "customer_email": "wang.fang7@example.com",
        "country": "CN",
        "status": "paid",
        "item_count": 2,
        "items": "SKU-1002 无线鼠标 Wireless mouse x2",
        "amount": Decimal("39.98"),
        "currency": "CNY",
    }
    return order | overrides
