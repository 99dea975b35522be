"""When schedules fire: cron in a zone with our DST rules (a time the clocks skip fires once, at
the first instant after the gap; a time they repeat fires once, at its first occurrence),
intervals as fixed durations, the shortest interval, and the edges of months and leap years."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from exports.core.errors import InvalidRequest
from exports.schedules.expression import Recurrence, check_interval, parse_cron, zone
from exports.schedules.model import Every


def cron(expression: str, tz: str, start: datetime | None = None, end: datetime | None = None) -> Recurrence:
    return Recurrence(
        cron=expression, every=None, timezone=tz, anchor=datetime(2026, 1, 1, tzinfo=UTC), start_at=start, end_at=end
    )


def local_days(recurrence: Recurrence, after: datetime, count: int) -> list[str]:
    tz = ZoneInfo(recurrence.timezone)
    return [run.astimezone(tz).isoformat() for run in recurrence.next_runs(after, count)]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# Spring forward: the local 02:00-03:00 does not exist (Berlin 29 March 2026, New York 8 March 2026).
@pytest.mark.parametrize(
    ("tz", "before", "gap_day", "moved_utc"),
    [
        ("Europe/Berlin", utc(2026, 3, 27, 12), "2026-03-29", utc(2026, 3, 29, 1)),
        ("America/New_York", utc(2026, 3, 6, 12), "2026-03-08", utc(2026, 3, 8, 7)),
    ],
)
def test_a_daily_0230_fires_once_at_0300_on_the_spring_forward_day(tz, before, gap_day, moved_utc):
    recurrence = cron("30 2 * * *", tz)
    runs = local_days(recurrence, before, 4)

    on_the_day = [run for run in runs if run.startswith(gap_day)]
    assert len(on_the_day) == 1
    assert on_the_day[0][11:19] == "03:00:00"  # the first local minute after the gap
    assert all(run[11:19] == "02:30:00" for run in runs if not run.startswith(gap_day))
    days = [run[:10] for run in runs]
    assert len(days) == len(set(days)) == 4
    assert moved_utc in recurrence.next_runs(before, 4)
    assert recurrence.next_moved_firing(before, timedelta(days=400)) == moved_utc


@pytest.mark.parametrize(
    ("expression", "moved"),
    [
        # Four times inside the gap: one firing at 03:00.
        ("*/15 2 * * *", utc(2026, 3, 29, 1)),
        # 02:00 moves to 03:00, which fires anyway: once, and Scheduler fires it (not moved).
        ("0 2,3 * * *", None),
        # 02:00-02:45 move to 03:00, which fires anyway: no firing added, no short gap.
        ("*/15 * * * *", None),
    ],
)
def test_firings_inside_one_gap_are_one_firing_and_never_double_a_normal_one(expression, moved):
    recurrence = cron(expression, "Europe/Berlin")
    runs = recurrence.next_runs(utc(2026, 3, 28, 23, 30), 200)

    at_three = [run for run in runs if run == utc(2026, 3, 29, 1)]
    assert at_three == [utc(2026, 3, 29, 1)]
    assert len(runs) == len(set(runs))
    assert not [run for run in runs if utc(2026, 3, 29, 0, 59) < run < utc(2026, 3, 29, 1)]
    assert recurrence.next_moved_firing(utc(2026, 3, 28), timedelta(days=2)) == moved


def test_the_next_moved_firing_is_next_years_after_this_years_and_none_without_a_gap():
    daily = cron("30 2 * * *", "Europe/Berlin")

    assert daily.next_moved_firing(utc(2026, 3, 29, 1), timedelta(days=400)) == utc(2027, 3, 28, 1)
    assert daily.next_moved_firing(utc(2026, 3, 29, 1), timedelta(days=300)) is None
    assert cron("30 2 * * *", "Etc/UTC").next_moved_firing(utc(2026, 1, 1), timedelta(days=400)) is None
    assert cron("30 2 * * *", "Asia/Kathmandu").next_moved_firing(utc(2026, 1, 1), timedelta(days=400)) is None
    # Not at that hour: nothing moves.
    assert cron("30 4 * * *", "Europe/Berlin").next_moved_firing(utc(2026, 1, 1), timedelta(days=400)) is None
    # Ended before the gap, or an interval: nothing moves.
    ended = cron("30 2 * * *", "Europe/Berlin", end=utc(2026, 3, 1))
    assert ended.next_moved_firing(utc(2026, 1, 1), timedelta(days=400)) is None
    interval = Recurrence(cron=None, every=Every(hours=1), timezone="Europe/Berlin", anchor=utc(2026, 1, 1))
    assert interval.next_moved_firing(utc(2026, 1, 1), timedelta(days=400)) is None


# Fall back: the local 01:00-02:00 (New York 1 November) or 02:00-03:00 (Berlin 25 October) repeats.
@pytest.mark.parametrize(
    ("tz", "expression", "before", "day", "first_utc"),
    [
        ("Europe/Berlin", "30 2 * * *", utc(2026, 10, 24, 12), "2026-10-25", utc(2026, 10, 25, 0, 30)),
        ("America/New_York", "30 1 * * *", utc(2026, 10, 31, 12), "2026-11-01", utc(2026, 11, 1, 5, 30)),
    ],
)
def test_a_daily_time_the_clocks_repeat_fires_once_at_its_first_occurrence(tz, expression, before, day, first_utc):
    recurrence = cron(expression, tz)
    runs = recurrence.next_runs(before, 3)

    on_the_day = [run for run in runs if run.astimezone(ZoneInfo(tz)).date().isoformat() == day]
    assert on_the_day == [first_utc]  # the earlier instant, still on summer time
    assert runs[1] - runs[0] == timedelta(hours=25)


def test_every_30_minutes_in_berlin_skips_the_missing_hour_and_does_not_repeat_the_doubled_one():
    spring = cron("*/30 * * * *", "Europe/Berlin").next_runs(utc(2026, 3, 29, 0, 0), 3)
    autumn = cron("*/30 * * * *", "Europe/Berlin").next_runs(utc(2026, 10, 24, 23, 45), 5)

    # 01:30 CET, then 03:00 CEST: one hour of real time, no firing at the missing wall times.
    assert spring == [utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30)]
    # 02:00 and 02:30 CEST once; the repeated 02:00 and 02:30 CET do not fire again.
    assert autumn == [
        utc(2026, 10, 25, 0, 0),
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 25, 2, 0),
        utc(2026, 10, 25, 2, 30),
        utc(2026, 10, 25, 3, 0),
    ]


def test_lord_howe_moves_its_clocks_by_30_minutes():
    # 4 October 2026, 02:00 -> 02:30 (+10:30 -> +11): 02:15 does not exist that day, fires at 02:30.
    spring = local_days(cron("15 2 * * *", "Australia/Lord_Howe"), utc(2026, 10, 2, 0), 4)
    # 5 April 2026, 02:00 -> 01:30 (+11 -> +10:30): 01:45 exists twice, fires once.
    autumn = cron("45 1 * * *", "Australia/Lord_Howe").next_runs(utc(2026, 4, 4, 0), 3)

    assert spring == [
        "2026-10-03T02:15:00+10:30",
        "2026-10-04T02:30:00+11:00",
        "2026-10-05T02:15:00+11:00",
        "2026-10-06T02:15:00+11:00",
    ]
    moved = cron("15 2 * * *", "Australia/Lord_Howe").next_moved_firing(utc(2026, 10, 2), timedelta(days=400))
    assert moved == utc(2026, 10, 3, 15, 30)
    assert autumn[0] == utc(2026, 4, 4, 14, 45)  # 01:45+11:00 on 5 April, the first one
    assert autumn[1] - autumn[0] == timedelta(hours=24, minutes=30)


def test_kathmandu_is_five_hours_45_ahead_all_year():
    runs = cron("0 9 * * *", "Asia/Kathmandu").next_runs(utc(2026, 6, 1), 2)

    assert runs == [utc(2026, 6, 1, 3, 15), utc(2026, 6, 2, 3, 15)]


def test_month_ends_and_leap_days():
    last_day = local_days(cron("0 6 L * *", "Europe/Berlin"), utc(2027, 1, 15), 3)
    the_31st = local_days(cron("0 6 31 * *", "Etc/UTC"), utc(2027, 1, 15), 3)
    leap = local_days(cron("0 0 29 2 *", "Etc/UTC"), utc(2026, 1, 1), 2)

    assert [run[:10] for run in last_day] == ["2027-01-31", "2027-02-28", "2027-03-31"]
    assert [run[:10] for run in the_31st] == ["2027-01-31", "2027-03-31", "2027-05-31"]
    assert [run[:10] for run in leap] == ["2028-02-29", "2032-02-29"]


def test_start_and_end_bound_the_firings():
    recurrence = cron("0 8 * * *", "Etc/UTC", start=utc(2026, 5, 3), end=utc(2026, 5, 5, 8))

    assert recurrence.next_runs(utc(2026, 1, 1), 10) == [utc(2026, 5, 3, 8), utc(2026, 5, 4, 8)]


def test_an_interval_is_a_fixed_duration_from_its_anchor_across_dst():
    recurrence = Recurrence(cron=None, every=Every(days=1), timezone="Europe/Berlin", anchor=utc(2026, 3, 28, 7))

    runs = recurrence.next_runs(utc(2026, 3, 28, 6), 3)

    assert runs == [utc(2026, 3, 28, 7), utc(2026, 3, 29, 7), utc(2026, 3, 30, 7)]
    # 08:00 CET, then 09:00 CEST: a day is 24 hours, as Scheduler's rate.
    assert [run.astimezone(ZoneInfo("Europe/Berlin")).hour for run in runs] == [8, 9, 9]


def test_an_interval_fires_at_its_anchor_then_every_interval_after():
    recurrence = Recurrence(cron=None, every=Every(minutes=15), timezone="Etc/UTC", anchor=utc(2026, 1, 1, 0, 7))

    assert recurrence.next_runs(utc(2026, 1, 1, 0, 7), 2) == [utc(2026, 1, 1, 0, 22), utc(2026, 1, 1, 0, 37)]
    assert recurrence.next_runs(utc(2026, 1, 1), 1) == [utc(2026, 1, 1, 0, 7)]


@pytest.mark.parametrize(
    ("expression", "tz", "shortest"),
    [
        ("*/15 * * * *", "Etc/UTC", timedelta(minutes=15)),
        # Monday 08:00 to Monday 08:00 across spring forward: an hour short of a week.
        ("0 8 * * 1", "Europe/Berlin", timedelta(days=7, hours=-1)),
        ("0,10 9 * * *", "Etc/UTC", timedelta(minutes=10)),
        # 01:00 and 03:00 are one real hour apart on the spring-forward day.
        ("0 1,3 * * *", "Europe/Berlin", timedelta(hours=1)),
        # A moved firing (02:05 at 03:00, five minutes before 03:05) is not a gap of the
        # expression's: hourly stays hourly, as without it.
        ("5 * * * *", "Europe/Berlin", timedelta(hours=1)),
        ("10,40 * * * *", "America/New_York", timedelta(minutes=30)),
        ("*/20 * * * *", "Australia/Lord_Howe", timedelta(minutes=20)),
        ("*/15 2 * * *", "Europe/Berlin", timedelta(minutes=15)),
    ],
)
def test_the_shortest_gap_between_firings_over_a_year(expression, tz, shortest):
    assert cron(expression, tz).shortest_gap(utc(2026, 1, 1)) == shortest


def test_a_short_gap_at_a_dst_change_months_ahead_is_found():
    # Every two hours from 01:00: 01:00 CET to 03:00 CEST on 28 March 2027 is one real hour, far
    # beyond the next firings counted one by one.
    recurrence = cron("0 1-23/2 * * *", "Europe/Berlin")

    assert recurrence.shortest_gap(utc(2026, 4, 1)) == timedelta(hours=1)
    with pytest.raises(InvalidRequest, match="60 minutes apart"):
        check_interval(recurrence, utc(2026, 4, 1), timedelta(minutes=90))


def test_intervals_shorter_than_the_minimum_are_refused_naming_the_field():
    with pytest.raises(InvalidRequest) as too_short:
        check_interval(cron("0,10 9 * * *", "Etc/UTC"), utc(2026, 1, 1), timedelta(minutes=15))
    every = Recurrence(cron=None, every=Every(minutes=5), timezone="Etc/UTC", anchor=utc(2026, 1, 1))
    with pytest.raises(InvalidRequest) as every_too_short:
        check_interval(every, utc(2026, 1, 1), timedelta(minutes=15))

    assert (too_short.value.code, too_short.value.field) == ("INTERVAL_TOO_SHORT", "cron")
    assert (every_too_short.value.code, every_too_short.value.field) == ("INTERVAL_TOO_SHORT", "every")
    check_interval(cron("*/15 * * * *", "Etc/UTC"), utc(2026, 1, 1), timedelta(minutes=15))


@pytest.mark.parametrize("expression", ["0 8 * *", "0 0 8 * * *", "61 * * * *", "0 8 30 2 *", "0 8 * * FUN", ""])
def test_invalid_cron_expressions_are_refused_on_cron(expression):
    with pytest.raises(InvalidRequest) as refused:
        parse_cron(expression)

    assert refused.value.field == "cron" and refused.value.code == "INVALID_CRON"


@pytest.mark.parametrize("name", ["Mars/Olympus", "europe/berlin", "../etc/passwd", "", "UTC+1"])
def test_unknown_zones_are_refused_on_timezone(name):
    with pytest.raises(InvalidRequest) as refused:
        zone(name)

    assert refused.value.field == "timezone" and "IANA" in refused.value.message
