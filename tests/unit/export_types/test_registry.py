"""The registry of export types."""

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from examples.demo_plugins.orders import OrdersExport
from exports.core.errors import InvalidRequest
from exports.core.export_type import Column, ExportType
from exports.export_types.registry import ExportTypeRegistry
from tests.unit.fakes import FakeOrdersReader


class NoFilters(BaseModel):
    pass


class RefundsExport(ExportType):
    """A second, trivial export type."""

    name = "refunds"
    description = "Refunds."
    filters_model = NoFilters

    def columns(self, filters):
        return [Column("refund_id", "Refund ID")]

    def rows(self, filters, on_fraction=None) -> Iterator[tuple]:
        yield from ()

    def file_stem(self, filters):
        return "refunds"


@pytest.fixture
def orders():
    return OrdersExport(FakeOrdersReader([]))


def test_get_finds_a_type_by_name(orders):
    refunds = RefundsExport()
    registry = ExportTypeRegistry([refunds, orders])

    assert registry.get("orders") is orders
    assert registry.get("refunds") is refunds


def test_unknown_type_is_an_invalid_request_listing_the_known_ones(orders):
    registry = ExportTypeRegistry([RefundsExport(), orders])

    with pytest.raises(InvalidRequest) as caught:
        registry.get("invoices")

    assert caught.value.field == "export_type"
    assert caught.value.code == "UNKNOWN_EXPORT_TYPE"
    assert "'invoices'" in caught.value.message
    assert caught.value.message.endswith("known types: orders, refunds")
    # the code override is the instance's, not the class's
    assert InvalidRequest.code == "VALIDATION_ERROR"


def test_iterates_over_its_types(orders):
    refunds = RefundsExport()
    assert list(ExportTypeRegistry([orders, refunds])) == [orders, refunds]
