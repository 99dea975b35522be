"""The orders export type over a fake orders table."""

from datetime import date, datetime
from decimal import Decimal

import pytest

from examples.demo_plugins.orders import ORDER_COLUMNS, OrdersExport, OrdersFilters
from exports.core.task import ExportFormat
from local_stack.demo_orders import demo_orders
from tests.unit.builders import make_order
from tests.unit.fakes import FakeOrdersReader

ALL_NAMES = [column.name for column in ORDER_COLUMNS]


def export_of(*orders):
    reader = FakeOrdersReader(orders)
    return OrdersExport(reader), reader


def filters(date_from="2025-03-01", date_to="2025-03-03", **extra):
    return OrdersFilters.model_validate({"date_from": date_from, "date_to": date_to, **extra})


def as_dicts(export, chosen, rows):
    names = [column.name for column in export.columns(chosen)]
    return [dict(zip(names, row, strict=True)) for row in rows]


def test_describes_itself():
    export, _ = export_of()
    assert export.name == "orders"
    assert export.filters_model is OrdersFilters
    assert set(export.formats) == set(ExportFormat)


def test_all_columns_by_default():
    export, _ = export_of(make_order())
    chosen = filters()

    assert export.columns(chosen) == list(ORDER_COLUMNS)
    [row] = list(export.rows(chosen))
    assert len(row) == len(ORDER_COLUMNS)


def test_chosen_columns_come_in_the_chosen_order():
    export, _ = export_of(make_order(order_id="ORD-1", amount=Decimal("10.50")))
    chosen = filters(columns=["amount", "order_id", "order_date"])

    assert [column.name for column in export.columns(chosen)] == ["amount", "order_id", "order_date"]
    assert list(export.rows(chosen)) == [(Decimal("10.50"), "ORD-1", date(2025, 3, 1))]


def test_rows_hold_typed_values():
    # item_count comes back from DynamoDB as a Decimal
    export, _ = export_of(make_order(item_count=Decimal("3"), amount=Decimal("59.90"), note="请周末送货"))
    chosen = filters()

    [row] = as_dicts(export, chosen, export.rows(chosen))

    assert row == {
        "order_id": "ORD-0000001",
        "order_date": date(2025, 3, 1),
        "created_at": datetime(2025, 3, 1, 9, 15),
        "customer_id": "C00042",
        "customer_name": "王芳",
        "customer_email": "wang.fang7@example.com",
        "country": "CN",
        "status": "paid",
        "item_count": 3,
        "items": "SKU-1002 无线鼠标 Wireless mouse x2",
        "amount": Decimal("59.90"),
        "currency": "CNY",
        "note": "请周末送货",
    }
    assert type(row["item_count"]) is int
    assert type(row["amount"]) is Decimal


def test_missing_optional_fields_are_none():
    order = make_order()
    del order["customer_email"], order["country"], order["items"]
    export, _ = export_of(order)
    chosen = filters(columns=["customer_email", "country", "items", "note"])

    assert list(export.rows(chosen)) == [(None, None, None, None)]


@pytest.mark.parametrize(
    ("created_at", "expected"),
    [
        ("2025-03-01T09:15:00+00:00", datetime(2025, 3, 1, 9, 15)),
        ("2025-03-02T07:30:00+08:00", datetime(2025, 3, 1, 23, 30)),
        ("2025-03-01T04:15:00-05:00", datetime(2025, 3, 1, 9, 15)),
        ("2025-03-01T09:15:00.250000+00:00", datetime(2025, 3, 1, 9, 15, 0, 250_000)),
    ],
)
def test_created_at_becomes_naive_utc(created_at, expected):
    export, _ = export_of(make_order(created_at=created_at))
    chosen = filters(columns=["created_at"])

    [(value,)] = list(export.rows(chosen))

    assert value == expected
    assert value.tzinfo is None


def test_rows_come_day_by_day_in_creation_order_and_each_day_is_asked_for_once():
    export, reader = export_of(
        make_order(order_id="C", order_day="2025-03-03", created_at="2025-03-03T01:00:00+00:00"),
        make_order(order_id="B2", order_day="2025-03-01", created_at="2025-03-01T18:00:00+00:00"),
        make_order(order_id="B1", order_day="2025-03-01", created_at="2025-03-01T06:00:00+00:00"),
        make_order(order_id="OUT", order_day="2025-03-04", created_at="2025-03-04T06:00:00+00:00"),
    )

    rows = list(export.rows(filters(columns=["order_id"])))

    assert rows == [("B1",), ("B2",), ("C",)]
    days = [date(2025, 3, 1), date(2025, 3, 2), date(2025, 3, 3)]
    assert reader.calls == [(day, day, None) for day in days]


def test_status_filter_is_passed_to_the_reader():
    export, reader = export_of(
        make_order(order_id="P", status="paid"),
        make_order(order_id="S", status="shipped"),
    )

    rows = list(export.rows(filters(date_to="2025-03-01", status="shipped", columns=["order_id", "status"])))

    assert rows == [("S", "shipped")]
    assert reader.calls == [(date(2025, 3, 1), date(2025, 3, 1), "shipped")]


def test_progress_fractions_start_at_zero_and_increase_by_day():
    export, _ = export_of(make_order(order_day="2025-03-02", created_at="2025-03-02T10:00:00+00:00"))
    fractions: list[float] = []

    list(export.rows(filters(date_to="2025-03-04"), on_fraction=fractions.append))

    assert fractions == [0.0, 0.25, 0.5, 0.75]
    assert all(0 <= fraction < 1 for fraction in fractions)


def test_progress_is_reported_before_each_days_rows():
    export, _ = export_of(
        make_order(order_id="D1", order_day="2025-03-01"),
        make_order(order_id="D2", order_day="2025-03-02", created_at="2025-03-02T10:00:00+00:00"),
    )
    events: list[float | str] = []

    for (order_id,) in export.rows(filters(date_to="2025-03-02", columns=["order_id"]), on_fraction=events.append):
        events.append(order_id)

    assert events == [0.0, "D1", 0.5, "D2"]


def test_file_stem_names_the_range():
    export, _ = export_of()
    assert export.file_stem(filters("2025-03-01", "2025-03-31")) == "orders_2025-03-01_2025-03-31"


def test_demo_orders_all_come_out_typed_and_ordered():
    stored = list(demo_orders(200, today=date(2025, 3, 31)))
    export, _ = export_of(*stored)
    chosen = filters("2025-01-01", "2025-03-31")

    rows = as_dicts(export, chosen, export.rows(chosen))

    assert sorted(row["order_id"] for row in rows) == sorted(order["order_id"] for order in stored)
    assert [(row["order_date"], row["created_at"]) for row in rows] == sorted(
        (row["order_date"], row["created_at"]) for row in rows
    )
    for row in rows:
        assert row["created_at"].tzinfo is None
        assert row["created_at"].date() == row["order_date"]
        assert isinstance(row["amount"], Decimal)
        assert type(row["item_count"]) is int
