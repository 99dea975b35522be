"""field_path and invalid_request on their own."""

import pytest
from pydantic import BaseModel, ValidationError

from examples.demo_plugins.orders import OrdersFilters
from exports.accepting.validation import field_path, invalid_request


@pytest.mark.parametrize(
    ("loc", "prefix", "expected"),
    [
        (("date_from",), "filters", "filters.date_from"),
        (("columns", 0), "filters", "filters.columns[0]"),
        ((), "filters", "filters"),
        (("filters", "date_from"), None, "filters.date_from"),
        (("a", "b", 2, "c"), None, "a.b[2].c"),
        (("items", 0, 3), None, "items[0][3]"),
        ((), None, None),
        ((), "", None),
    ],
)
def test_field_path(loc, prefix, expected):
    assert field_path(loc, prefix) == expected


def test_without_a_prefix_the_field_is_the_model_field():
    with pytest.raises(ValidationError) as caught:
        OrdersFilters.model_validate({"date_from": "soon", "date_to": "2025-03-01"})

    error = invalid_request(caught.value)

    assert error.field == "date_from"
    assert error.message.startswith("date_from: ")


def test_a_whole_model_error_without_prefix_has_no_field_and_a_bare_message():
    with pytest.raises(ValidationError) as caught:
        OrdersFilters.model_validate({"date_from": "2025-03-02", "date_to": "2025-03-01"})

    error = invalid_request(caught.value)

    assert error.field is None
    assert error.message == "date_from must not be after date_to"


def test_only_the_first_problem_is_reported():
    class Pair(BaseModel):
        first: int
        second: int

    with pytest.raises(ValidationError) as caught:
        Pair.model_validate({"first": "x", "second": "y"})
    assert len(caught.value.errors()) == 2

    assert invalid_request(caught.value, prefix="pair").field == "pair.first"
