"""The ``orders`` export type as a Python plugin: one row per order over a date range, read from
the demo DynamoDB orders table (the declared ``orders`` of exports.toml is the same export on
PostgreSQL, and ``orders_dynamodb`` the same table read by a declaration)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from exports.core.export_type import (
    SOURCE_PAGE_ROWS,
    Column,
    ColumnKind,
    Cursor,
    CursorInvalid,
    ExportType,
    FilterDate,
    Page,
    Row,
    ignore_progress,
)
from local_stack.demo_orders import OrderStatus


class OrdersReader(Protocol):
    """The data source of the ``orders`` and ``sales_report`` plugin types."""

    def iter_orders(self, day_from: date, day_to: date, status: str | None) -> Iterator[dict[str, Any]]:
        """Orders of the days ``day_from``..``day_to`` (inclusive), ordered by creation time."""


# The longest date range an orders (or sales report) export may cover.
MAX_DATE_RANGE_DAYS = 366
ORDER_COLUMNS: tuple[Column, ...] = (
    Column(
        "order_id",
        "Order ID",
        width=18,
        headers={"zh-CN": "订单号", "ja": "注文番号", "de": "Bestellnummer", "ko": "주문 번호"},
    ),
    Column(
        "order_date",
        "Order date",
        ColumnKind.DATE,
        width=12,
        headers={"zh-CN": "下单日期", "ja": "注文日", "de": "Bestelldatum", "ko": "주문일"},
    ),
    Column(
        "created_at",
        "Created at (UTC)",
        ColumnKind.DATETIME,
        width=20,
        headers={"zh-CN": "创建时间 (UTC)", "ja": "作成日時 (UTC)", "de": "Erstellt am (UTC)", "ko": "생성 시각 (UTC)"},
    ),
    Column(
        "customer_id",
        "Customer ID",
        width=12,
        headers={"zh-CN": "客户编号", "ja": "顧客ID", "de": "Kundennummer", "ko": "고객 ID"},
    ),
    Column(
        "customer_name",
        "Customer",
        width=22,
        headers={"zh-CN": "客户", "ja": "顧客", "de": "Kunde", "ko": "고객"},
    ),
    Column(
        "customer_email",
        "Email",
        width=28,
        headers={"zh-CN": "电子邮件", "ja": "メール", "de": "E-Mail", "ko": "이메일"},
    ),
    Column(
        "country",
        "Country",
        width=8,
        headers={"zh-CN": "国家", "ja": "国", "de": "Land", "ko": "국가"},
    ),
    Column(
        "status",
        "Status",
        width=11,
        headers={"zh-CN": "状态", "ja": "ステータス", "de": "Status", "ko": "상태"},
    ),
    Column(
        "item_count",
        "Items",
        ColumnKind.INTEGER,
        width=7,
        headers={"zh-CN": "件数", "ja": "点数", "de": "Artikel", "ko": "수량"},
    ),
    Column(
        "items",
        "Products",
        width=40,
        headers={"zh-CN": "商品", "ja": "商品", "de": "Produkte", "ko": "상품"},
    ),
    Column(
        "amount",
        "Amount",
        ColumnKind.DECIMAL,
        width=12,
        headers={"zh-CN": "金额", "ja": "金額", "de": "Betrag", "ko": "금액"},
    ),
    Column(
        "currency",
        "Currency",
        width=9,
        headers={"zh-CN": "币种", "ja": "通貨", "de": "Währung", "ko": "통화"},
    ),
    Column(
        "note",
        "Note",
        width=30,
        headers={"zh-CN": "备注", "ja": "備考", "de": "Notiz", "ko": "메모"},
    ),
)
_COLUMNS_BY_NAME = {column.name: column for column in ORDER_COLUMNS}
OrderColumnName = Literal[
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
]


class OrdersFilters(BaseModel):
    """Which orders to export: an inclusive date range, optionally one status and chosen columns."""

    model_config = ConfigDict(extra="forbid")

    date_from: FilterDate = Field(description="First order date included (YYYY-MM-DD).")
    date_to: FilterDate = Field(description="Last order date included (YYYY-MM-DD).")
    status: OrderStatus | None = Field(default=None, description="Only orders with this status.")
    columns: list[OrderColumnName] | None = Field(
        default=None,
        min_length=1,
        max_length=len(ORDER_COLUMNS),
        description="Columns to include, in this order (default: all).",
    )

    @field_validator("columns")
    @classmethod
    def _distinct(cls, columns: list[str] | None) -> list[str] | None:
        if columns is not None and len(set(columns)) != len(columns):
            raise ValueError("columns must not repeat")
        return columns

    @model_validator(mode="after")
    def _range(self) -> OrdersFilters:
        if self.date_from > self.date_to:
            raise ValueError("date_from must not be after date_to")
        if (self.date_to - self.date_from).days + 1 > MAX_DATE_RANGE_DAYS:
            raise ValueError(f"the date range must not exceed {MAX_DATE_RANGE_DAYS} days")
        return self


def _naive_utc(moment: datetime) -> datetime:
    """UTC wall-clock time without tzinfo: spreadsheets have no time zones (headers say UTC)."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _order_values(order: dict[str, Any]) -> dict[str, Any]:
    """The typed values of an order, by column name."""
    return {
        "order_id": order["order_id"],
        "order_date": date.fromisoformat(order["order_day"]),
        "created_at": _naive_utc(datetime.fromisoformat(order["created_at"])),
        "customer_id": order["customer_id"],
        "customer_name": order["customer_name"],
        "customer_email": order.get("customer_email"),
        "country": order.get("country"),
        "status": order["status"],
        "item_count": int(order["item_count"]),
        "items": order.get("items"),
        "amount": Decimal(order["amount"]),
        "currency": order["currency"],
        "note": order.get("note"),
    }


class OrdersExport(ExportType[OrdersFilters]):
    """Orders of a date range, read day by day from the orders table's day index."""

    name = "orders"
    description = "Orders placed in a date range, one row per order."
    titles = MappingProxyType(
        {
            "zh-CN": "日期范围内的订单 (每行一个订单)",
            "ja": "期間内の注文 (1 行に 1 件)",
            "de": "Bestellungen in einem Zeitraum, eine Zeile je Bestellung.",
            "ko": "기간 내 주문, 한 행에 한 건.",
        }
    )
    filters_model = OrdersFilters

    def __init__(self, reader: OrdersReader, page_rows: int = SOURCE_PAGE_ROWS) -> None:
        self._reader = reader
        self._page_rows = page_rows

    def columns(self, filters: OrdersFilters) -> list[Column]:
        """All columns, or the chosen ones in the chosen order."""
        if filters.columns is None:
            return list(ORDER_COLUMNS)
        return [_COLUMNS_BY_NAME[name] for name in filters.columns]

    def rows(self, filters: OrdersFilters, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        """One row per order, ordered by day then creation time; progress advances by day."""
        names = [column.name for column in self.columns(filters)]
        status = filters.status.value if filters.status else None
        days = (filters.date_to - filters.date_from).days + 1
        day = filters.date_from
        while day <= filters.date_to:
            on_fraction((day - filters.date_from).days / days)
            for order in self._reader.iter_orders(day, day, status):
                values = _order_values(order)
                yield tuple(values[name] for name in names)
            day += timedelta(days=1)

    def pages(self, filters: OrdersFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """Pages of at most ``page_rows`` orders of one day; a day ends with a
        page (maybe empty) whose cursor is the next day.

        Within a day the cursor counts the orders already read and names the last one: the
        reader has no page keys, so resuming reads the day again up to there and checks that
        the same order is in the same place (the day index returns a day's orders in the same
        order each time while the day does not change); :class:`CursorInvalid` if not."""
        names = [column.name for column in self.columns(filters)]
        status = filters.status.value if filters.status else None
        days = (filters.date_to - filters.date_from).days + 1
        day, skip, last_id = _parse_cursor(cursor, filters.date_from)
        while day <= filters.date_to:
            done = (day - filters.date_from).days / days
            orders = self._reader.iter_orders(day, day, status)
            position = 0
            if skip:
                skipped = list(itertools.islice(orders, skip - 1, skip))
                if not skipped or skipped[0]["order_id"] != last_id:
                    raise CursorInvalid(f"the orders of {day.isoformat()} changed since the checkpoint")
                position = skip
            batch: list[Row] = []
            for order in orders:
                values = _order_values(order)
                batch.append(tuple(values[name] for name in names))
                position += 1
                if len(batch) == self._page_rows:
                    cursor_here = {"day": day.isoformat(), "skip": position, "last_order_id": order["order_id"]}
                    yield Page(batch, cursor_here, done)
                    batch = []
            day += timedelta(days=1)
            skip = 0
            yield Page(batch, {"day": day.isoformat(), "skip": 0}, (day - filters.date_from).days / days)

    def hot_key(self, filters: OrdersFilters) -> str:
        """Everyone exporting the same days reads the same index partitions."""
        return f"{self.name}:{filters.date_from.isoformat()}:{filters.date_to.isoformat()}"

    def file_stem(self, filters: OrdersFilters) -> str:
        """``orders_<from>_<to>``."""
        return f"orders_{filters.date_from.isoformat()}_{filters.date_to.isoformat()}"


def _parse_cursor(cursor: Cursor | None, first_day: date) -> tuple[date, int, str | None]:
    """Day, orders of that day already read, and the last of them; :class:`CursorInvalid` for
    a cursor this type did not write."""
    if cursor is None:
        return first_day, 0, None
    try:
        day, skip, last_id = date.fromisoformat(cursor["day"]), int(cursor["skip"]), cursor.get("last_order_id")
    except (KeyError, TypeError, ValueError) as error:
        raise CursorInvalid(f"not an orders cursor: {cursor!r}") from error
    if skip < 0 or (skip > 0 and not isinstance(last_id, str)):
        raise CursorInvalid(f"not an orders cursor: {cursor!r}")
    return day, skip, last_id
