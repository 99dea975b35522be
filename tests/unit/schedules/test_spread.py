"""When a schedule's firings arrive (its flexible time window) and how long a refused one may
wait (exports/schedules/spread.py); the EventBridge request carries the window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from exports.schedules.eventbridge_scheduler import deferred_firing_name, deferred_input, flexible_window
from exports.schedules.model import Every, Schedule, StoredCaller
from exports.schedules.spread import deferral_deadline, spread_offset, spread_window

START = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)


def schedule(**timing: Any) -> Schedule:
    return Schedule(
        schedule_id="sch_01JN8S7QG0MAEKZNRR87MB0XR4",
        user_id="alice",
        caller=StoredCaller(user_id="alice"),
        export_type="orders",
        created_at=START,
        updated_at=START,
        anchor_at=START,
        **timing,
    )


def test_the_window_is_ten_minutes_at_most_and_a_quarter_of_the_shortest_gap() -> None:
    assert spread_window(schedule(cron="0 8 * * 1")) == timedelta(minutes=10)  # Monday 08:00
    assert spread_window(schedule(every=Every(hours=1))) == timedelta(minutes=10)
    assert spread_window(schedule(cron="0,30 * * * *")) == timedelta(0)  # more often than hourly: none
    assert spread_window(schedule(every=Every(minutes=3))) == timedelta(0)
    assert flexible_window(timedelta(minutes=5)) == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5}
    assert flexible_window(timedelta(0)) == {"Mode": "OFF"}


def test_local_firings_spread_over_the_window_each_at_an_instant_of_its_own() -> None:
    window = timedelta(minutes=10)
    monday = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
    offsets = [spread_offset(f"sch_{n}", monday, window) for n in range(200)]

    assert all(timedelta(0) <= offset < window for offset in offsets)
    assert len({offset.seconds // 60 for offset in offsets}) == 10  # every minute of the window gets some
    assert spread_offset("sch_1", monday, window) == spread_offset("sch_1", monday, window)
    assert spread_offset("sch_1", monday, timedelta(0)) == timedelta(0)


def test_a_refused_firing_may_wait_an_hour_but_never_past_the_next_firing() -> None:
    monday = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
    assert deferral_deadline(schedule(cron="0 8 * * 1"), monday) == monday + timedelta(hours=1)
    half_hourly = schedule(every=Every(minutes=30))
    assert deferral_deadline(half_hourly, START) == START + timedelta(minutes=30)


def test_a_retry_names_its_firings_own_time() -> None:
    at = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
    name = deferred_firing_name("sch_01JN8S7QG0MAEKZNRR87MB0XR4", at)
    assert name == "retry-20261207T080000-sch_01JN8S7QG0MAEKZNRR87MB0XR4" and len(name) <= 64
    assert '"scheduled_time": "2026-12-07T08:00:00Z"' in deferred_input("sch_1", at)
