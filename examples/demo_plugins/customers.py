"""The ``customers`` export type as a Python plugin: the user list, filtered by sign-up date range and country."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

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
)

# A customer list may span years: one key-condition query per day of the range.
MAX_SIGNUP_RANGE_DAYS = 3660
MAX_COUNTRIES = 50
CountryCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]


class CustomersReader(Protocol):
    """The data source of the ``customers`` export type: a table with a sign-up day index."""

    def page(
        self, day: date, countries: Sequence[str] | None, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Customers who signed up on ``day`` (by sign-up time), from ``start_key``, at most
        ``limit`` read; and the key to read on from, None after the day's last page."""


CUSTOMER_COLUMNS: tuple[Column, ...] = (
    Column("customer_id", "Customer ID", width=12),
    Column("name", "Name", width=22),
    Column("email", "Email", width=30),
    Column("phone", "Phone", width=18),
    Column("country", "Country", width=8),
    Column("city", "City", width=16),
    Column("signup_date", "Sign-up date", ColumnKind.DATE, width=12),
    Column("signed_up_at", "Signed up at (UTC)", ColumnKind.DATETIME, width=20),
    Column("plan", "Plan", width=10),
    Column("marketing_opt_in", "Marketing opt-in", width=10),
)


class CustomersFilters(BaseModel):
    """Which customers: an inclusive sign-up date range, optionally some countries."""

    model_config = ConfigDict(extra="forbid")

    signed_up_from: FilterDate = Field(description="First sign-up date included (YYYY-MM-DD).")
    signed_up_to: FilterDate = Field(description="Last sign-up date included (YYYY-MM-DD).")
    countries: list[CountryCode] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COUNTRIES,
        description="Only customers in these countries (ISO 3166-1 alpha-2 codes, e.g. DE).",
    )

    @field_validator("countries")
    @classmethod
    def _distinct(cls, countries: list[str] | None) -> list[str] | None:
        if countries is not None and len(set(countries)) != len(countries):
            raise ValueError("countries must not repeat")
        return countries

    @model_validator(mode="after")
    def _range(self) -> CustomersFilters:
        if self.signed_up_from > self.signed_up_to:
            raise ValueError("signed_up_from must not be after signed_up_to")
        if (self.signed_up_to - self.signed_up_from).days + 1 > MAX_SIGNUP_RANGE_DAYS:
            raise ValueError(f"the sign-up range must not exceed {MAX_SIGNUP_RANGE_DAYS} days")
        return self


def _customer_row(customer: dict[str, Any]) -> Row:
    signed_up_at = datetime.fromisoformat(customer["signed_up_at"])
    if signed_up_at.tzinfo:
        signed_up_at = signed_up_at.astimezone(UTC).replace(tzinfo=None)
    return (
        customer["customer_id"],
        customer["name"],
        customer.get("email"),
        customer.get("phone"),
        customer.get("country"),
        customer.get("city"),
        date.fromisoformat(customer["signup_day"]),
        signed_up_at,
        customer.get("plan"),
        "yes" if customer.get("marketing_opt_in") else "no",
    )


class CustomersExport(ExportType[CustomersFilters]):
    """Customers by sign-up day, read page by page from the customers table's day index."""

    name = "customers"
    description = "Customers who signed up in a date range, optionally in some countries."
    filters_model = CustomersFilters

    def __init__(self, reader: CustomersReader, page_rows: int = SOURCE_PAGE_ROWS) -> None:
        self._reader = reader
        self._page_rows = page_rows

    def columns(self, filters: CustomersFilters) -> list[Column]:
        """Every customer column."""
        return list(CUSTOMER_COLUMNS)

    def pages(self, filters: CustomersFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """One page per query page of the day index; the cursor is the day and the index's own
        key to continue from, so resuming reads nothing twice."""
        days = (filters.signed_up_to - filters.signed_up_from).days + 1
        day, key = _parse_cursor(cursor, filters.signed_up_from)
        while day <= filters.signed_up_to:
            items, key = self._reader.page(day, filters.countries, key, self._page_rows)
            rows = [_customer_row(item) for item in items]
            if key is None:
                day += timedelta(days=1)
            yield Page(
                rows,
                {"day": day.isoformat(), "key": key},
                (day - filters.signed_up_from).days / days,
            )

    def file_stem(self, filters: CustomersFilters) -> str:
        """``customers_<from>_<to>``."""
        return f"customers_{filters.signed_up_from.isoformat()}_{filters.signed_up_to.isoformat()}"

    def hot_key(self, filters: CustomersFilters) -> str:
        """Everyone exporting the same sign-up days reads the same index partitions."""
        return f"{self.name}:{filters.signed_up_from.isoformat()}:{filters.signed_up_to.isoformat()}"


def _parse_cursor(cursor: Cursor | None, first_day: date) -> tuple[date, dict[str, Any] | None]:
    if cursor is None:
        return first_day, None
    try:
        day, key = date.fromisoformat(cursor["day"]), cursor["key"]
    except (KeyError, TypeError, ValueError) as error:
        raise CursorInvalid(f"not a customers cursor: {cursor!r}") from error
    if key is not None and not isinstance(key, dict):
        raise CursorInvalid(f"not a customers cursor: {cursor!r}")
    return day, key
