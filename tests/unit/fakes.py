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
    """:class:`exports.core.ports.ResultUpload` that keeps its parts: ``bodies`` in the order sent,
    ``numbered`` by part number; ``events`` records the order things happened in."""

    upload_id = "upload-fake"

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.numbered: dict[int, bytes] = {}
        self.events: list[str] = []
        self.completed = False
        self.aborted = False

    @property
    def parts(self) -> list[tuple[int, str]]:
        return [(number, f'"etag-{number}"') for number in self.numbered]

    def upload_part(self, data: bytes) -> None:
        self.events.append("upload_part")
        self.upload_part_number(len(self.numbered) + 1, data)

    def upload_part_number(self, number: int, data: bytes) -> str:
        # No writer sends a number twice: segments' ranges never overlap.
        assert number not in self.numbered, f"part {number} sent twice"
        self.bodies.append(bytes(data))
        self.numbered[number] = bytes(data)
        return f'"etag-{number}"'

    def complete(self) -> None:
        self.completed = True

    def abort(self) -> None:
        self.aborted = True

    @property
    def content(self) -> bytes:
        return b"".join(self.bodies)
