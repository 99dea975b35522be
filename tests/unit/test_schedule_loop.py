"""Local mode's scheduler on a controlled clock: due firings are invoked once with Scheduler's
Input, paused schedules fire nothing, a failing firing is delivered again then dead-lettered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from exports.core.config.retry import SCHEDULE_TARGET_RETRY
from exports.schedules.model import Every, Schedule, ScheduleState, StoredCaller
from local_stack.schedule_loop import Clock, ScheduleLoop

START = datetime(2026, 12, 7, 7, 0, 30, tzinfo=UTC)


class Store:
    def __init__(self, *schedules: Schedule) -> None:
        self.schedules = list(schedules)

    def all_schedules(self) -> list[Schedule]:
        return self.schedules


def every_minute(**changes: Any) -> Schedule:
    base = Schedule(
        schedule_id="sch_1",
        user_id="alice",
        caller=StoredCaller(user_id="alice"),
        export_type="orders",
        every=Every(minutes=1),
        created_at=START,
        updated_at=START,
        anchor_at=START,
    )
    return base.model_copy(update=changes)


class Recorder:
    def __init__(self, failures: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self.failures = failures

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the queue is down")
        return {"outcome": "created", "task_id": f"exp_{len(self.events)}"}


def test_due_firings_are_invoked_once_each_with_schedulers_input() -> None:
    handler = Recorder()
    loop = ScheduleLoop(Store(every_minute()), handler, Clock(lambda: START))

    loop.tick()  # the rate fires at its start
    loop.advance(150)
    loop.tick()
    loop.tick()  # nothing new is due

    assert [event["scheduled_time"] for event in handler.events] == [
        "2026-12-07T07:00:30Z",
        "2026-12-07T07:01:30Z",
        "2026-12-07T07:02:30Z",
    ]
    assert {event["schedule_id"] for event in handler.events} == {"sch_1"}
    assert all(event["execution_id"] for event in handler.events)


def test_a_paused_schedule_fires_nothing_and_is_not_caught_up_when_resumed() -> None:
    handler = Recorder()
    store = Store(every_minute().model_copy(update={"state": ScheduleState.PAUSED}))
    loop = ScheduleLoop(store, handler, Clock(lambda: START))
    loop.tick()
    loop.advance(600)
    loop.tick()
    assert handler.events == []

    store.schedules = [every_minute()]
    loop.advance(60)
    loop.tick()

    assert [event["scheduled_time"] for event in handler.events] == ["2026-12-07T07:11:30Z"]


def test_a_failing_firing_is_delivered_again_then_dead_lettered() -> None:
    handler = Recorder(failures=1 + SCHEDULE_TARGET_RETRY.retries)
    dead: list[dict[str, Any]] = []
    loop = ScheduleLoop(
        Store(every_minute(end_at=START + timedelta(seconds=1))), handler, Clock(lambda: START), dead.append
    )

    loop.tick()
    loop.advance(600)  # its one firing (no gap to measure) arrives within the longest window
    for _ in range(SCHEDULE_TARGET_RETRY.retries + 2):
        loop.tick()

    assert len(handler.events) == 1 + SCHEDULE_TARGET_RETRY.retries
    assert {event["scheduled_time"] for event in handler.events} == {"2026-12-07T07:00:30Z"}
    assert [entry["scheduled_time"] for entry in dead] == ["2026-12-07T07:00:30Z"]


def test_the_loop_fires_a_time_in_the_dst_gap_once_at_the_gaps_end() -> None:
    daily = every_minute(every=None, cron="30 2 * * *", timezone="Europe/Berlin")
    before = datetime(2026, 3, 27, 12, tzinfo=UTC)
    handler = Recorder()
    loop = ScheduleLoop(Store(daily.model_copy(update={"anchor_at": before})), handler, Clock(lambda: before))

    loop.tick()
    loop.advance(86400 + 12 * 3600 + 59 * 60)  # 29 March 00:59 UTC: 01:59 CET, just before the gap
    loop.tick()
    loop.advance(60)  # 01:00 UTC: 03:00 CEST, the gap's end
    loop.tick()
    loop.tick()
    loop.advance(3 * 86400)
    loop.tick()

    # 28 March (CET); 29 March once, at 03:00 CEST (02:30 does not exist); 30 and 31 March (CEST).
    assert [event["scheduled_time"] for event in handler.events] == [
        "2026-03-28T01:30:00Z",
        "2026-03-29T01:00:00Z",
        "2026-03-30T00:30:00Z",
        "2026-03-31T00:30:00Z",
        "2026-04-01T00:30:00Z",
    ]


def test_firings_of_the_same_minute_arrive_spread_over_their_window_with_their_own_time() -> None:
    monday = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
    before = monday - timedelta(minutes=1)
    schedules = [
        every_minute(schedule_id=f"sch_{n}", every=None, cron="0 8 * * 1", anchor_at=before, updated_at=before)
        for n in range(200)
    ]
    handler = Recorder()
    loop = ScheduleLoop(Store(*schedules), handler, Clock(lambda: before))
    loop.tick()
    arrived_by_minute = []
    for _ in range(11):
        loop.advance(60)
        loop.tick()
        arrived_by_minute.append(len(handler.events))

    assert arrived_by_minute[-1] == 200  # every one arrived, once, within the ten-minute window
    assert all(later > earlier for earlier, later in pairwise(arrived_by_minute[:10]))
    assert arrived_by_minute[0] < 50  # not all in the first minute
    assert {event["scheduled_time"] for event in handler.events} == {"2026-12-07T08:00:00Z"}


class Retries:
    def __init__(self, *due: tuple[str, datetime]) -> None:
        self.due = list(due)

    def take_due(self, now: datetime) -> list[tuple[str, datetime]]:
        taken = [(schedule_id, at) for schedule_id, at in self.due if at <= now]
        self.due = [item for item in self.due if item not in taken]
        return taken


def test_a_firing_refused_for_capacity_is_delivered_again_with_its_own_time() -> None:
    handler = Recorder()
    firing = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    loop = ScheduleLoop(Store(), handler, Clock(lambda: START), deferred=Retries(("sch_9", firing)))

    loop.tick()
    loop.tick()

    assert [(event["schedule_id"], event["scheduled_time"]) for event in handler.events] == [
        ("sch_9", "2026-12-07T06:00:00Z")
    ]
