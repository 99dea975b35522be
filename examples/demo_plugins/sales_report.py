"""The ``sales_report`` export type as a Python plugin: totals per day and order status, computed while streaming.

The report reads the orders source one day at a time and keeps only that day's running totals
(one per status), so memory does not grow with the range. Every day has one row per status,
zeros included, so the row count is known before the first query and progress is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from examples.demo_plugins.orders import MAX_DATE_RANGE_DAYS, OrdersReader
from exports.core.export_type import Column, ColumnKind, Cursor, CursorInvalid, ExportType, FilterDate, Page
from local_stack.demo_orders import OrderStatus

SALES_COLUMNS: tuple[Column, ...] = (
    Column("day", "Day", ColumnKind.DATE, width=12),
    Column("status", "Status", width=11),
    Column("currency", "Currency", width=9),
    Column("orders", "Orders", ColumnKind.INTEGER, width=9),
    Column("items", "Items", ColumnKind.INTEGER, width=9),
    Column("amount", "Amount", ColumnKind.DECIMAL, width=14),
    Column("average_order", "Average order", ColumnKind.DECIMAL, width=14),
)
_CENT = Decimal("0.01")


class SalesReportFilters(BaseModel):
    """An inclusive date range and the currency whose orders are totalled."""

    model_config = ConfigDict(extra="forbid")

    date_from: FilterDate = Field(description="First order date included (YYYY-MM-DD).")
    date_to: FilterDate = Field(description="Last order date included (YYYY-MM-DD).")
    currency: str = Field(
        pattern=r"^[A-Z]{3}$",
        examples=["EUR"],
        description="ISO 4217 code: only orders in this currency are totalled (amounts in different "
        "currencies do not add up).",
    )

    @model_validator(mode="after")
    def _range(self) -> SalesReportFilters:
        if self.date_from > self.date_to:
            raise ValueError("date_from must not be after date_to")
        if (self.date_to - self.date_from).days + 1 > MAX_DATE_RANGE_DAYS:
            raise ValueError(f"the date range must not exceed {MAX_DATE_RANGE_DAYS} days")
        return self


class _Totals:
    """Running totals of one status on one day."""

    __slots__ = ("amount", "items", "orders")

    def __init__(self) -> None:
        self.orders = 0
        self.items = 0
        self.amount = Decimal(0)

    def add(self, order: dict[str, Any]) -> None:
        self.orders += 1
        self.items += int(order["item_count"])
        self.amount += Decimal(order["amount"])


class SalesReportExport(ExportType[SalesReportFilters]):
    """Orders, items and amounts per day and status over a date range."""

    name = "sales_report"
    description = "Totals per day and order status over a date range, in one currency."
    filters_model = SalesReportFilters

    def __init__(self, reader: OrdersReader) -> None:
        self._reader = reader

    def columns(self, filters: SalesReportFilters) -> list[Column]:
        """Day, status, currency and the totals."""
        return list(SALES_COLUMNS)

    def expected_rows(self, filters: SalesReportFilters) -> int:
        """One row per day and status."""
        return ((filters.date_to - filters.date_from).days + 1) * len(OrderStatus)

    def pages(self, filters: SalesReportFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """One page per day; the cursor is the next day."""
        days = (filters.date_to - filters.date_from).days + 1
        day = _parse_cursor(cursor, filters.date_from)
        while day <= filters.date_to:
            totals = {status: _Totals() for status in OrderStatus}
            for order in self._reader.iter_orders(day, day, None):
                if order["currency"] == filters.currency:
                    totals[OrderStatus(order["status"])].add(order)
            rows = [
                (
                    day,
                    status.value,
                    filters.currency,
                    total.orders,
                    total.items,
                    total.amount.quantize(_CENT),
                    (total.amount / total.orders).quantize(_CENT) if total.orders else None,
                )
                for status, total in totals.items()
            ]
            day += timedelta(days=1)
            yield Page(rows, {"day": day.isoformat()}, (day - filters.date_from).days / days)

    def file_stem(self, filters: SalesReportFilters) -> str:
        """``sales_report_<currency>_<from>_<to>``."""
        return f"sales_report_{filters.currency}_{filters.date_from.isoformat()}_{filters.date_to.isoformat()}"

    def hot_key(self, filters: SalesReportFilters) -> str:
        """The same index partitions as an orders export of the same days."""
        return f"orders:{filters.date_from.isoformat()}:{filters.date_to.isoformat()}"


def _parse_cursor(cursor: Cursor | None, first_day: date) -> date:
    if cursor is None:
        return first_day
    try:
        return date.fromisoformat(cursor["day"])
    except (KeyError, TypeError, ValueError) as error:
        raise CursorInvalid(f"not a sales report cursor: {cursor!r}") from error
