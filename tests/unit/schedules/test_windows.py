"""Relative windows, resolved in the schedule's zone at the firing: each covers exactly its
local days, over 23- and 25-hour days, month ends, leap days and ISO weeks."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from exports.core.errors import InvalidRequest
from exports.core.export_type import WindowParameters
from exports.schedules.filters import resolved_filters
from exports.schedules.windows import Relative, RelativeWindow, WindowKind, parse_relative, resolve, window_days

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
DATES = WindowParameters("date_from", "date_to", "date")
INSTANTS = WindowParameters("created_from", "created_to", "datetime")


def at(zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=zone)


@pytest.mark.parametrize(
    ("zone", "firing", "day", "hours"),
    [
        (BERLIN, at(BERLIN, 2026, 3, 30, 8), date(2026, 3, 29), 23),  # spring forward
        (BERLIN, at(BERLIN, 2026, 10, 26, 8), date(2026, 10, 25), 25),  # fall back
        (NEW_YORK, at(NEW_YORK, 2026, 3, 9, 8), date(2026, 3, 8), 23),
        (NEW_YORK, at(NEW_YORK, 2026, 11, 2, 8), date(2026, 11, 1), 25),
    ],
)
def test_previous_day_covers_exactly_that_local_day_over_23_and_25_hour_days(zone, firing, day, hours):
    start, end = resolve(RelativeWindow(Relative.PREVIOUS_DAY), firing, zone, WindowKind.DATETIME)

    assert (start.date(), start.time().isoformat()) == (day, "00:00:00")
    assert (end.date(), end.time().isoformat()) == (day + timedelta(days=1), "00:00:00")
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=hours)
    assert resolve(RelativeWindow(Relative.PREVIOUS_DAY), firing, zone, WindowKind.DATE) == (day, day)


def test_the_day_is_the_zones_not_utcs():
    # 00:30 in Berlin on 2 December is still 1 December in UTC.
    firing = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)

    assert window_days(RelativeWindow(Relative.PREVIOUS_DAY), firing.astimezone(BERLIN).date()) == (
        date(2026, 12, 1),
        date(2026, 12, 1),
    )
    assert resolve(RelativeWindow(Relative.PREVIOUS_DAY), firing, BERLIN, WindowKind.DATE)[0] == date(2026, 12, 1)


@pytest.mark.parametrize(
    ("window", "firing_day", "expected"),
    [
        ("previous_week", date(2026, 12, 7), (date(2026, 11, 30), date(2026, 12, 6))),  # a Monday
        ("previous_week", date(2026, 12, 13), (date(2026, 11, 30), date(2026, 12, 6))),  # a Sunday
        ("previous_week", date(2027, 1, 4), (date(2026, 12, 28), date(2027, 1, 3))),  # across the year
        ("previous_month", date(2026, 3, 1), (date(2026, 2, 1), date(2026, 2, 28))),
        ("previous_month", date(2028, 3, 15), (date(2028, 2, 1), date(2028, 2, 29))),  # a leap year
        ("previous_month", date(2027, 1, 1), (date(2026, 12, 1), date(2026, 12, 31))),
        ("month_to_date", date(2028, 2, 29), (date(2028, 2, 1), date(2028, 2, 29))),
        ("month_to_date", date(2026, 5, 1), (date(2026, 5, 1), date(2026, 5, 1))),
        ("last_n_days:7", date(2026, 3, 1), (date(2026, 2, 22), date(2026, 2, 28))),
        ("last_n_days:1", date(2028, 3, 1), (date(2028, 2, 29), date(2028, 2, 29))),
        ("previous_day", date(2028, 3, 1), (date(2028, 2, 29), date(2028, 2, 29))),
        ("previous_day", date(2027, 1, 1), (date(2026, 12, 31), date(2026, 12, 31))),
    ],
)
def test_each_window_names_its_local_days(window, firing_day, expected):
    relative = parse_relative(window)

    assert relative is not None and window_days(relative, firing_day) == expected


def test_a_datetime_month_to_date_ends_at_the_firing():
    firing = at(BERLIN, 2026, 3, 31, 8)

    start, end = resolve(RelativeWindow(Relative.MONTH_TO_DATE), firing, BERLIN, WindowKind.DATETIME)

    assert start == at(BERLIN, 2026, 3, 1) and end == firing


def test_previous_week_over_the_spring_forward_week_is_167_hours():
    start, end = resolve(
        RelativeWindow(Relative.PREVIOUS_WEEK), at(BERLIN, 2026, 3, 30, 8), BERLIN, WindowKind.DATETIME
    )

    assert start.date() == date(2026, 3, 23) and end.date() == date(2026, 3, 30)
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=167)


@pytest.mark.parametrize("value", ["2026-01-01", "previous", "PREVIOUS_DAY", 7, None, "last_week"])
def test_values_that_name_no_window_are_left_alone(value):
    assert parse_relative(value) is None


@pytest.mark.parametrize(
    "value", ["last_n_days", "last_n_days:0", "last_n_days:367", "last_n_days:-1", "last_n_days:x"]
)
def test_last_n_days_needs_one_to_366(value):
    with pytest.raises(ValueError, match="last_n_days"):
        parse_relative(value)


def test_filters_resolve_the_window_into_both_parameters_as_json():
    firing = datetime(2026, 12, 7, 7, tzinfo=UTC)

    dates = resolved_filters({"date_from": "previous_week", "status": "paid"}, DATES, firing, BERLIN)
    same = resolved_filters({"date_from": "previous_week", "date_to": "previous_week"}, DATES, firing, BERLIN)
    instants = resolved_filters({"created_from": "previous_day"}, INSTANTS, firing, BERLIN)

    assert dates == {"date_from": "2026-11-30", "date_to": "2026-12-06", "status": "paid"}
    assert same == {"date_from": "2026-11-30", "date_to": "2026-12-06"}
    assert instants == {"created_from": "2026-12-06T00:00:00+01:00", "created_to": "2026-12-07T00:00:00+01:00"}
    # Absolute dates pass through untouched.
    assert resolved_filters({"date_from": "2026-01-01"}, DATES, firing, BERLIN) == {"date_from": "2026-01-01"}


@pytest.mark.parametrize(
    ("filters", "window", "field"),
    [
        ({"status": "previous_day"}, DATES, "filters.status"),
        ({"date_from": "previous_day"}, None, "filters.date_from"),
        ({"date_to": "previous_day"}, DATES, "filters.date_to"),
        ({"date_from": "previous_day", "date_to": "2026-01-01"}, DATES, "filters.date_to"),
        ({"date_from": "previous_day", "date_to": "previous_week"}, DATES, "filters.date_to"),
        ({"date_from": "last_n_days:999"}, DATES, "filters.date_from"),
    ],
)
def test_a_relative_value_anywhere_else_is_a_422_naming_the_field(filters, window, field):
    with pytest.raises(InvalidRequest) as refused:
        resolved_filters(filters, window, datetime(2026, 12, 7, tzinfo=UTC), BERLIN)

    assert refused.value.field == field
