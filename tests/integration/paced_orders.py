"""The ``orders`` type on a paced in-memory source, for tests of how long exports take: reading
costs :data:`SEC_PER_ORDER` an order, slept rather than computed, so an export's duration follows
its size and not how busy the machine's cores are (the parallel test run shares them)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

from examples.demo_plugins.orders import OrdersExport
from exports.export_types.build import PluginContext
from local_stack.demo_orders import demo_orders

SEC_PER_ORDER = 0.0025


class PacedOrdersReader:
    """:class:`examples.demo_plugins.orders.OrdersReader` over the demo orders held in memory."""

    def __init__(self, count: int, today: date) -> None:
        by_day: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for order in demo_orders(count, today):
            by_day[order["order_day"]].append(order)
        self._days = {day: sorted(orders, key=lambda order: order["created_at"]) for day, orders in by_day.items()}

    def iter_orders(self, day_from: date, day_to: date, status: str | None) -> Iterator[dict[str, Any]]:
        """Each day's orders, after the time reading them takes."""
        day = day_from
        while day <= day_to:
            orders = [o for o in self._days.get(day.isoformat(), []) if status is None or o["status"] == status]
            time.sleep(len(orders) * SEC_PER_ORDER)
            yield from orders
            day += timedelta(days=1)


def paced_orders(context: PluginContext) -> OrdersExport:
    """Plugin factory: ``options.orders`` demo orders over the 90 days up to ``options.today``."""
    return OrdersExport(PacedOrdersReader(int(context.options["orders"]), date.fromisoformat(context.options["today"])))
