"""Deterministic demo orders: the same realistic data on every run (seeded randomness)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from local_stack.demo_tenants import tenant_of


class OrderStatus(StrEnum):
    """Statuses a demo order goes through (the declared types list the same values)."""

    PENDING = "pending"
    PAID = "paid"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


SEED = 20251101
DEMO_DAYS = 90

_CUSTOMERS = [
    ("王芳", "wang.fang", "CN"),
    ("李娜", "li.na", "CN"),
    ("张伟", "zhang.wei", "CN"),
    ("刘洋", "liu.yang", "CN"),
    ("陈静", "chen.jing", "CN"),
    ("杨磊", "yang.lei", "CN"),
    ("赵敏", "zhao.min", "CN"),
    ("黄晓明", "huang.xm", "CN"),
    ("周杰", "zhou.jie", "TW"),
    ("吴雪", "wu.xue", "SG"),
    ("Emma Johnson", "emma.j", "US"),
    ("Liam Smith", "liam.smith", "GB"),
    ("Olivia Brown", "olivia.b", "CA"),
    ("Noah Müller", "noah.m", "DE"),
    ("Chloé Martin", "chloe.m", "FR"),
    ("Sofia García", "sofia.g", "ES"),
    ("Lucas Rossi", "lucas.r", "IT"),
    ("Mia Tanaka", "mia.t", "JP"),
    ("Ethan Kim", "ethan.k", "KR"),
    ("Ava O'Brien", "ava.ob", "IE"),
]
_PRODUCTS = [
    ("SKU-1001", "机械键盘 Mechanical keyboard", Decimal("59.90")),
    ("SKU-1002", "无线鼠标 Wireless mouse", Decimal("19.99")),
    ("SKU-1003", '27" 显示器 Monitor', Decimal("229.00")),
    ("SKU-1004", "USB-C 扩展坞 Dock", Decimal("89.50")),
    ("SKU-1005", "降噪耳机 ANC headphones", Decimal("149.00")),
    ("SKU-1006", "笔记本支架 Laptop stand", Decimal("32.00")),
    ("SKU-1007", "移动硬盘 2TB portable drive", Decimal("74.99")),
    ("SKU-1008", "网络摄像头 Webcam, 1080p", Decimal("45.00")),
]
_CURRENCY = {"CN": "CNY", "TW": "TWD", "SG": "SGD", "US": "USD", "GB": "GBP", "CA": "CAD", "JP": "JPY", "KR": "KRW"}
_STATUS_WEIGHTS = [
    (OrderStatus.DELIVERED, 45),
    (OrderStatus.SHIPPED, 20),
    (OrderStatus.PAID, 15),
    (OrderStatus.PENDING, 8),
    (OrderStatus.CANCELLED, 7),
    (OrderStatus.REFUNDED, 5),
]
# Notes include text a spreadsheet would run as a formula: exports must neutralise it.
_NOTES = [None] * 12 + ["请周末送货", "Leave at the door", "-10% coupon applied", '=HYPERLINK("http://x")', "@home"]


def demo_orders(count: int, today: date, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """``count`` orders spread over the ``DEMO_DAYS`` days up to ``today``, as stored items."""
    rng = random.Random(seed)
    first_day = today - timedelta(days=DEMO_DAYS - 1)
    statuses = [status for status, _ in _STATUS_WEIGHTS]
    weights = [weight for _, weight in _STATUS_WEIGHTS]
    for number in range(1, count + 1):
        day = first_day + timedelta(days=rng.randrange(DEMO_DAYS))
        created = datetime.combine(day, time(), tzinfo=UTC) + timedelta(seconds=rng.randrange(86_400))
        name, handle, country = rng.choice(_CUSTOMERS)
        lines = rng.sample(_PRODUCTS, k=rng.randint(1, 3))
        quantities = [rng.randint(1, 4) for _ in lines]
        amount = sum((price * qty for (_, _, price), qty in zip(lines, quantities, strict=True)), Decimal("0"))
        customer_id = f"C{rng.randrange(1, 5000):05d}"
        item: dict[str, Any] = {
            "order_id": f"ORD-{number:07d}",
            "tenant_id": tenant_of(customer_id),
            "order_day": day.isoformat(),
            "created_at": created.isoformat(timespec="seconds"),
            "customer_id": customer_id,
            "customer_name": name,
            "customer_email": f"{handle}{rng.randrange(100)}@example.com",
            "country": country,
            "status": rng.choices(statuses, weights)[0].value,
            "item_count": sum(quantities),
            "items": "; ".join(f"{sku} {title} x{qty}" for (sku, title, _), qty in zip(lines, quantities, strict=True)),
            "amount": amount.quantize(Decimal("0.01")),
            "currency": _CURRENCY.get(country, "EUR"),
        }
        note = rng.choice(_NOTES)
        if note:
            item["note"] = note
        yield item


def seed_orders(dynamodb: Any, table: str, count: int, today: date) -> int:
    """Write the demo orders with batch writes through ``dynamodb`` (AWS, or any endpoint);
    returns how many were written. Local mode writes into its own moto directly
    (:func:`local_stack.embedded_aws.put_items`)."""
    return seed_items(dynamodb, table, demo_orders(count, today))


def seed_items(dynamodb: Any, table: str, items: Iterable[dict[str, Any]]) -> int:
    """Write ``items`` with batch writes; returns how many were written."""
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()
    batch: list[dict[str, Any]] = []
    written = 0
    for item in items:
        batch.append({"PutRequest": {"Item": {k: serializer.serialize(v) for k, v in item.items()}}})
        if len(batch) == 25:
            written += _write(dynamodb, table, batch)
            batch = []
    if batch:
        written += _write(dynamodb, table, batch)
    return written


def _write(dynamodb: Any, table: str, batch: list[dict[str, Any]]) -> int:
    pending = {table: batch}
    while pending:
        pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    return len(batch)
