"""Export types as plugins: pages with resumable cursors, filters, expected rows, and the defaults
of the base class."""

from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from examples.demo_plugins.customers import CustomersExport, CustomersFilters
from examples.demo_plugins.orders import OrdersExport, OrdersFilters
from examples.demo_plugins.sales_report import SalesReportExport, SalesReportFilters
from exports.core.export_type import Column, Cursor, CursorInvalid, ExportType, Page, Row
from exports.core.task import ExportFormat
from local_stack.demo_customers import demo_customers
from local_stack.demo_orders import OrderStatus, demo_orders
from tests.unit.builders import make_order
from tests.unit.fakes import FakeOrdersReader

TODAY = date(2025, 3, 31)


def all_rows(pages):
    return [row for page in pages for row in page.rows]


def resumed_everywhere(export, filters):
    """Rows read by resuming after every page, each time from the last cursor only."""
    rows: list[Row] = []
    cursor: Cursor | None = None
    while True:
        page = next(export.pages(filters, cursor), None)
        if page is None:
            return rows
        rows.extend(page.rows)
        cursor = page.cursor


# orders ---------------------------------------------------------------------------------------


def test_orders_pages_hold_the_rows_of_rows_and_resume_from_any_cursor():
    export = OrdersExport(FakeOrdersReader(demo_orders(600, TODAY)), page_rows=7)
    filters = OrdersFilters(date_from=date(2025, 3, 20), date_to=date(2025, 3, 31))

    expected = list(export.rows(filters))

    assert all_rows(export.pages(filters)) == expected
    assert resumed_everywhere(export, filters) == expected
    assert len(expected) > 50


def test_orders_cursors_count_within_a_day_and_name_the_last_order():
    orders = [make_order(order_id=f"O{n}", created_at=f"2025-03-01T0{n}:00:00+00:00") for n in range(1, 4)]
    export = OrdersExport(FakeOrdersReader(orders), page_rows=2)
    filters = OrdersFilters(date_from=date(2025, 3, 1), date_to=date(2025, 3, 2), columns=["order_id"])

    pages = list(export.pages(filters))

    assert [(page.rows, page.cursor, page.fraction) for page in pages] == [
        ([("O1",), ("O2",)], {"day": "2025-03-01", "skip": 2, "last_order_id": "O2"}, 0.0),
        ([("O3",)], {"day": "2025-03-02", "skip": 0}, 0.5),
        ([], {"day": "2025-03-03", "skip": 0}, 1.0),
    ]


def test_an_orders_cursor_whose_day_changed_is_invalid():
    export = OrdersExport(FakeOrdersReader([make_order(order_id="O1"), make_order(order_id="O9")]))
    filters = OrdersFilters(date_from=date(2025, 3, 1), date_to=date(2025, 3, 1))
    with pytest.raises(CursorInvalid):
        list(export.pages(filters, {"day": "2025-03-01", "skip": 1, "last_order_id": "O2"}))
    with pytest.raises(CursorInvalid):
        list(export.pages(filters, {"day": "2025-03-01", "skip": 5, "last_order_id": "O9"}))
    with pytest.raises(CursorInvalid):
        list(export.pages(filters, {"next": 3}))
    first = next(export.pages(filters, {"day": "2025-03-01", "skip": 1, "last_order_id": "O1"}))
    assert [row[0] for row in first.rows] == ["O9"]


def test_built_in_types_offer_csv_gz_and_resume():
    reader = FakeOrdersReader([])
    for export in (OrdersExport(reader), SalesReportExport(reader), CustomersExport(FakeCustomersReader([]))):
        assert export.formats == tuple(ExportFormat)
        assert export.resumable


# customers ------------------------------------------------------------------------------------


class FakeCustomersReader:
    """The sign-up day index in memory, in pages of ``limit`` with plain-string keys."""

    def __init__(self, customers):
        self.customers = sorted(customers, key=lambda c: (c["signup_day"], c["signed_up_at"], c["customer_id"]))
        self.reads = 0

    def page(self, day, countries, start_key, limit):
        of_day = [c for c in self.customers if c["signup_day"] == day.isoformat()]
        if start_key:
            position = next(i for i, c in enumerate(of_day) if c["customer_id"] == start_key["customer_id"]) + 1
            of_day = of_day[position:]
        chunk = of_day[:limit]
        self.reads += len(chunk)
        more = len(of_day) > limit
        key = {k: chunk[-1][k] for k in ("customer_id", "signup_day", "signed_up_at")} if more else None
        return [c for c in chunk if not countries or c["country"] in countries], key


def test_customers_rows_are_typed_and_filtered_by_country():
    stored = list(demo_customers(TODAY, count=800))
    export = CustomersExport(FakeCustomersReader(stored), page_rows=3)
    filters = CustomersFilters(signed_up_from=date(2024, 1, 1), signed_up_to=date(2024, 12, 31), countries=["DE", "JP"])

    rows = all_rows(export.pages(filters))

    expected = sorted(
        (c for c in stored if "2024-01-01" <= c["signup_day"] <= "2024-12-31" and c["country"] in ("DE", "JP")),
        key=lambda c: (c["signup_day"], c["signed_up_at"], c["customer_id"]),
    )
    assert [row[0] for row in rows] == [c["customer_id"] for c in expected] and len(rows) > 20
    first, customer = rows[0], expected[0]
    assert first[6] == date.fromisoformat(customer["signup_day"])
    assert first[7] == datetime.fromisoformat(customer["signed_up_at"]).replace(tzinfo=None)
    assert first[9] == ("yes" if customer["marketing_opt_in"] else "no")
    assert [column.name for column in export.columns(filters)][:3] == ["customer_id", "name", "email"]


def test_customers_resume_from_the_index_key_and_read_nothing_twice():
    stored = [
        {
            "customer_id": f"C{n}",
            "name": "n",
            "signup_day": "2025-03-01" if n < 3 else "2025-03-02",
            "signed_up_at": f"2025-03-0{1 if n < 3 else 2}T0{n}:00:00+00:00",
        }
        for n in range(5)
    ]
    reader = FakeCustomersReader(stored)
    export = CustomersExport(reader, page_rows=1)
    filters = CustomersFilters(signed_up_from=date(2025, 3, 1), signed_up_to=date(2025, 3, 2))

    pages = list(export.pages(filters))
    assert pages[0].cursor == {
        "day": "2025-03-01",
        "key": {"customer_id": "C0", "signup_day": "2025-03-01", "signed_up_at": "2025-03-01T00:00:00+00:00"},
    }
    assert pages[2].cursor == {"day": "2025-03-02", "key": None}
    reader.reads = 0
    rows = resumed_everywhere(export, filters)
    assert [row[0] for row in rows] == ["C0", "C1", "C2", "C3", "C4"]
    assert reader.reads == 5


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"signed_up_from": "2025-03-02", "signed_up_to": "2025-03-01"}, "must not be after"),
        ({"signed_up_from": "2010-01-01", "signed_up_to": "2025-03-01"}, "must not exceed"),
        ({"signed_up_from": "2025-03-01", "signed_up_to": "2025-03-01", "countries": ["de"]}, "pattern"),
        ({"signed_up_from": "2025-03-01", "signed_up_to": "2025-03-01", "countries": ["DE", "DE"]}, "repeat"),
        ({"signed_up_from": "2025-03-01", "signed_up_to": "2025-03-01", "countries": []}, "at least 1"),
        ({"signed_up_from": "2025-03-01", "signed_up_to": "2025-03-01", "country": "DE"}, "Extra inputs"),
    ],
)
def test_customers_filters_are_checked(filters, message):
    with pytest.raises(ValidationError, match=message):
        CustomersFilters.model_validate(filters)


def test_demo_customers_are_the_same_on_every_run_and_match_the_orders_ids():
    first, again = list(demo_customers(TODAY, count=50)), list(demo_customers(TODAY, count=50))
    assert first == again
    assert [c["customer_id"] for c in first[:3]] == ["C00001", "C00002", "C00003"]
    assert all(c["phone"].startswith("+") for c in first)
    assert all(TODAY - timedelta(days=3 * 365) < date.fromisoformat(c["signup_day"]) <= TODAY for c in first)


# sales report ---------------------------------------------------------------------------------


def test_sales_report_totals_each_day_and_status_in_the_chosen_currency():
    orders = [
        make_order(order_id="A", status="paid", item_count=2, amount=Decimal("10.00"), currency="EUR"),
        make_order(order_id="B", status="paid", item_count=1, amount=Decimal("5.50"), currency="EUR"),
        make_order(order_id="C", status="paid", item_count=9, amount=Decimal("99"), currency="USD"),
        make_order(order_id="D", status="shipped", amount=Decimal("1.01"), currency="EUR", order_day="2025-03-02"),
    ]
    export = SalesReportExport(FakeOrdersReader(orders))
    filters = SalesReportFilters(date_from=date(2025, 3, 1), date_to=date(2025, 3, 2), currency="EUR")

    rows = all_rows(export.pages(filters))

    assert len(rows) == export.expected_rows(filters) == 2 * len(OrderStatus)
    by_key = {(row[0], row[1]): row for row in rows}
    assert by_key[(date(2025, 3, 1), "paid")] == (
        date(2025, 3, 1),
        "paid",
        "EUR",
        2,
        3,
        Decimal("15.50"),
        Decimal("7.75"),
    )
    assert by_key[(date(2025, 3, 1), "shipped")][3:] == (0, 0, Decimal("0.00"), None)
    assert by_key[(date(2025, 3, 2), "shipped")][3:6] == (1, 2, Decimal("1.01"))
    assert [row[1] for row in rows[:6]] == [status.value for status in OrderStatus]


def test_sales_report_reads_one_day_at_a_time_and_resumes_at_the_next_day():
    reader = FakeOrdersReader(demo_orders(300, TODAY))
    export = SalesReportExport(reader)
    filters = SalesReportFilters(date_from=date(2025, 3, 1), date_to=date(2025, 3, 10), currency="CNY")

    pages = list(export.pages(filters))

    assert reader.calls == [(date(2025, 3, d), date(2025, 3, d), None) for d in range(1, 11)]
    assert [page.cursor for page in pages][:2] == [{"day": "2025-03-02"}, {"day": "2025-03-03"}]
    assert [page.fraction for page in pages][-1] == 1.0
    assert resumed_everywhere(export, filters) == all_rows(pages)
    assert sum(row[3] for row in all_rows(pages)) == sum(
        1 for o in reader.orders if "2025-03-01" <= o["order_day"] <= "2025-03-10" and o["currency"] == "CNY"
    )


def test_sales_report_filters_want_a_currency_code():
    with pytest.raises(ValidationError, match="currency"):
        SalesReportFilters.model_validate({"date_from": "2025-03-01", "date_to": "2025-03-01"})
    with pytest.raises(ValidationError, match="pattern"):
        SalesReportFilters.model_validate({"date_from": "2025-03-01", "date_to": "2025-03-01", "currency": "eur"})


# the base class -------------------------------------------------------------------------------


class NoFilters(BaseModel):
    pass


class RowsOnly(ExportType):
    name = "rows_only"
    description = "d"
    filters_model = NoFilters

    def columns(self, filters):
        return [Column("n", "N")]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = lambda _: None) -> Iterator[Row]:
        for n in range(2500):
            if n % 1000 == 0:
                on_fraction(n / 2500)
            yield (n,)

    def file_stem(self, filters):
        return "rows_only"


class PagesOnly(RowsOnly):
    name = "pages_only"
    rows = ExportType.rows

    def pages(self, filters, cursor=None):
        start = cursor["next"] if cursor else 0
        for first in range(start, 6, 2):
            yield Page([(first,), (first + 1,)], {"next": first + 2}, (first + 2) / 6)


class Neither(RowsOnly):
    rows = ExportType.rows


def test_a_type_with_rows_only_gets_pages_without_cursors():
    export = RowsOnly()
    pages = list(export.pages(None))
    assert [len(page.rows) for page in pages] == [1000, 1000, 500]
    assert [page.cursor for page in pages] == [None, None, None]
    assert [page.fraction for page in pages] == [0.0, 0.4, 0.8]
    assert not export.resumable
    with pytest.raises(CursorInvalid):
        list(export.pages(None, {"next": 5}))


def test_a_type_with_pages_only_gets_rows_and_fractions():
    fractions: list[float] = []
    assert list(PagesOnly().rows(None, on_fraction=fractions.append)) == [(n,) for n in range(6)]
    assert fractions == [2 / 6, 4 / 6, 1.0]
    assert PagesOnly().resumable


def test_a_type_with_neither_says_so():
    with pytest.raises(NotImplementedError, match="rows\\(\\) or pages\\(\\)"):
        list(Neither().rows(None))
    with pytest.raises(NotImplementedError):
        list(Neither().pages(None))


def test_expected_rows_are_unknown_by_default():
    assert RowsOnly().expected_rows(None) is None
