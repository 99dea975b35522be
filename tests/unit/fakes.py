"""In-memory stand-ins for a multipart upload and for the demo plugins' orders table."""

from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any


class FakeOrdersReader:
    """:class:`examples.demo_plugins.orders.OrdersReader` in memory: answers like the day index,
    ordered by creation time."""

    def __init__(self, orders: Iterable[dict[str, Any]]) -> None:
        self.orders = list(orders)
        self.calls: list[tuple[date, date, str | None]] = []

    def iter_orders(self, day_from: date, day_to: date, status: str | None) -> Iterator[dict[str, Any]]:
        self.calls.append((day_from, day_to, status))
        matching = [
            order
            for order in self.orders
            if day_from <= date.fromisoformat(order["order_day"]) <= day_to
            and (status is None or order["status"] == status)
        ]
        yield from sorted(matching, key=lambda order: datetime.fromisoformat(order["created_at"]))


class FakeUpload:
    """A multipart upload that keeps its parts; ``events`` records the order things happened in."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.events: list[str] = []
        self.completed = False
        self.aborted = False

    def upload_part(self, data: bytes) -> None:
        self.events.append("upload_part")
        self.parts.append(bytes(data))

    def complete(self) -> None:
        self.completed = True

    def abort(self) -> None:
        self.aborted = True

    @property
    def content(self) -> bytes:
        return b"".join(self.parts)
