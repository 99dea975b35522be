"""OrdersFilters rules, and how their errors become InvalidRequest naming the field."""

from datetime import date

import pytest
from pydantic import ValidationError

from examples.demo_plugins.orders import OrdersExport, OrdersFilters
from exports.accepting.validation import invalid_request
from exports.core.errors import InvalidRequest
from local_stack.demo_orders import OrderStatus
from tests.unit.fakes import FakeOrdersReader

MARCH = {"date_from": "2025-03-01", "date_to": "2025-03-31"}


def test_defaults_are_every_status_and_every_column():
    filters = OrdersFilters.model_validate(MARCH)
    assert (filters.date_from, filters.date_to) == (date(2025, 3, 1), date(2025, 3, 31))
    assert filters.status is None
    assert filters.columns is None


def test_status_and_columns_are_kept():
    filters = OrdersFilters.model_validate({**MARCH, "status": "shipped", "columns": ["amount", "order_id"]})
    assert filters.status is OrderStatus.SHIPPED
    assert filters.columns == ["amount", "order_id"]


def test_parse_filters_of_the_export_type_gives_orders_filters():
    filters = OrdersExport(FakeOrdersReader([])).parse_filters(MARCH)
    assert isinstance(filters, OrdersFilters)


@pytest.mark.parametrize(
    ("date_from", "date_to"),
    [
        ("2025-03-01", "2025-03-01"),  # one day
        ("2024-01-01", "2024-12-31"),  # 366 days (leap year)
        ("2025-01-01", "2026-01-01"),  # 366 days
    ],
)
def test_ranges_up_to_366_days_are_accepted(date_from, date_to):
    OrdersFilters.model_validate({"date_from": date_from, "date_to": date_to})


@pytest.mark.parametrize(
    ("raw", "loc", "field", "says"),
    [
        pytest.param(
            {"date_from": "2025-03-31", "date_to": "2025-03-01"},
            (),
            "filters",
            "date_from must not be after date_to",
            id="reversed-dates",
        ),
        pytest.param(
            {"date_from": "2024-01-01", "date_to": "2025-01-01"},
            (),
            "filters",
            "must not exceed 366 days",
            id="367-days",
        ),
        pytest.param({**MARCH, "status": "lost"}, ("status",), "filters.status", "'shipped'", id="unknown-status"),
        pytest.param(
            {**MARCH, "columns": ["secret"]}, ("columns", 0), "filters.columns[0]", "'order_id'", id="unknown-column"
        ),
        pytest.param(
            {**MARCH, "columns": ["amount", "secret"]},
            ("columns", 1),
            "filters.columns[1]",
            "'order_id'",
            id="unknown-second-column",
        ),
        pytest.param(
            {**MARCH, "columns": ["amount", "order_id", "amount"]},
            ("columns",),
            "filters.columns",
            "columns must not repeat",
            id="repeated-column",
        ),
        pytest.param({**MARCH, "columns": []}, ("columns",), "filters.columns", "at least 1", id="no-columns"),
        pytest.param({**MARCH, "customer": "C00042"}, ("customer",), "filters.customer", "Extra", id="unknown-key"),
        pytest.param({"date_to": "2025-03-01"}, ("date_from",), "filters.date_from", "required", id="missing-date"),
        pytest.param(
            {"date_from": "2025-02-30", "date_to": "2025-03-01"},
            ("date_from",),
            "filters.date_from",
            "date",
            id="impossible-date",
        ),
    ],
)
def test_invalid_filters_name_the_offending_field(raw, loc, field, says):
    with pytest.raises(ValidationError) as caught:
        OrdersFilters.model_validate(raw)
    assert caught.value.errors()[0]["loc"] == loc

    error = invalid_request(caught.value, prefix="filters")

    assert isinstance(error, InvalidRequest)
    assert error.code == "VALIDATION_ERROR"
    assert error.field == field
    assert error.details == {"field": field}
    assert error.message.startswith(f"{field}: ")
    assert says in error.message
    assert "Value error" not in error.message
