"""Feeds on the services' fakes: each run covers the changes since the previous COMPLETED run
(a failed run leaves the watermark, one run at a time), empty runs skipped, the latest file
with its owner's link and the secret permalink, and an hourly feed over the autumn DST change."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise, takewhile
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel, ConfigDict

from exports.core.caller import Caller
from exports.core.config.metrics import Metric
from exports.core.errors import InvalidRequest
from exports.core.export_type import ChangeWindow, Column, ColumnKind, ExportType, Row, WindowParameters
from exports.core.spec import ExportSpec
from exports.core.status import TaskStatus
from exports.core.task import Task, claim, complete, fail
from exports.finishing.callbacks import callback_payload
from exports.finishing.schedule_run_end import RunEndDependencies, on_run_end
from exports.schedules import firing, latest, service
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.expression import recurrence_of
from exports.schedules.feed import feed_window
from exports.schedules.model import Every, ScheduleState, WhenEmpty
from exports.schedules.ports import FeedBusy, NoLatestFile, ScheduleConflict, ScheduleNotFound
from tests.unit.builders import make_result
from tests.unit.schedule_fakes import FakeMailer, FakeScheduleStore
from tests.unit.service_fakes import ServiceWorld, service_world

ALICE = Caller("alice", {})
START = datetime(2026, 1, 5, 8, tzinfo=UTC)


class ChangeFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    changed_from: datetime
    changed_to: datetime


class ChangedRows(ExportType[ChangeFilters]):
    """Rows of an in-memory table (id -> changed at), those changed in ``[from, to)``."""

    name = "changed_rows"
    description = "Rows by when they last changed."
    filters_model = ChangeFilters

    def __init__(self, lag: timedelta = timedelta()) -> None:
        self.table: dict[str, datetime] = {}
        self.lag = lag

    def window(self) -> WindowParameters:
        return WindowParameters("changed_from", "changed_to", "datetime")

    def changes(self) -> ChangeWindow:
        return ChangeWindow("updated_at", "changed_from", "changed_to", self.lag, max_span=timedelta(days=7))

    def columns(self, filters: ChangeFilters) -> list[Column]:
        return [Column("id", "ID"), Column("updated_at", "Changed", ColumnKind.DATETIME)]

    def file_stem(self, filters: ChangeFilters) -> str:
        return "changes"

    def rows(self, filters: ChangeFilters, on_fraction: Any = None) -> Iterator[Row]:
        for key, changed in sorted(self.table.items()):
            if filters.changed_from <= changed < filters.changed_to:
                yield (key, changed)


class CreatedRows(ChangedRows):
    """The same table, windowed on creation: no change column, so no feed."""

    name = "created_rows"

    def changes(self) -> None:  # type: ignore[override]
        return None


@dataclasses.dataclass
class Feed:
    services: ServiceWorld
    deps: ScheduleDependencies
    store: FakeScheduleStore
    source: ChangedRows
    mailer: FakeMailer

    def run_end(self) -> RunEndDependencies:
        return RunEndDependencies(
            schedules=self.store,
            mailer=self.mailer,
            sender="reports@acme.example",
            allowed_domains=frozenset({"acme.example"}),
            results=self.services.files,
            clock=self.services.clock,
        )

    def task(self, task_id: str | None) -> Task:
        return self.services.tasks.tasks[task_id or ""]

    def exported(self, task: Task) -> list[tuple[str, datetime]]:
        filters = self.source.parse_filters(task.filters)
        return [(str(row[0]), row[1]) for row in self.source.rows(filters)]

    def end(self, task_id: str | None, status: TaskStatus = TaskStatus.COMPLETED) -> Task:
        """End the run as the worker would (its rows in the result), then observe its end."""
        task = self.task(task_id)
        now = self.services.clock()
        running = claim(task, now, timedelta(minutes=2))
        if status is TaskStatus.COMPLETED:
            rows = len(self.exported(task))
            ended = complete(
                running, make_result(rows=rows, key=f"results/{task.task_id}/f.csv"), now, timedelta(days=1)
            )
        else:
            ended = fail(running, "SOURCE_QUERY_FAILED", "boom", now, timedelta(days=1))
        self.services.tasks.tasks[ended.task_id] = ended
        on_run_end(ended, self.run_end())
        return ended


def feed(lag: timedelta = timedelta(), **spec: Any) -> tuple[Feed, str]:
    source = ChangedRows(lag)
    services = service_world(
        source, CreatedRows(), mail_sender="reports@acme.example", mail_allowed_domains="acme.example"
    )
    store = FakeScheduleStore()
    deps = ScheduleDependencies(api=services.api, schedules=store)
    values: dict[str, Any] = {
        "export": ExportSpec(export_type="changed_rows", filters={"changed_from": "since_last_run"}),
        "every": Every(hours=1),
        "start_at": START,
        **spec,
    }
    schedule = service.create_schedule(service.ScheduleSpec(**values), ALICE, deps)
    return Feed(services, deps, store, source, FakeMailer()), schedule.schedule_id


def span(task: Task) -> tuple[datetime, datetime]:
    """The instants the run covers, as its task records them."""
    return datetime.fromisoformat(task.filters["changed_from"]), datetime.fromisoformat(task.filters["changed_to"])


def hour(n: float) -> datetime:
    return START + timedelta(hours=n)


def test_every_change_is_sent_once_across_a_failed_run_and_a_pause():
    world, schedule_id = feed()
    table = world.source.table
    sent: list[tuple[str, datetime]] = []

    def run(at: datetime, status: TaskStatus = TaskStatus.COMPLETED) -> Task:
        fired = firing.fire(schedule_id, at, world.deps)
        assert fired.outcome is firing.FiringOutcome.CREATED
        ended = world.end(fired.task_id, status)
        if status is TaskStatus.COMPLETED:
            sent.extend(world.exported(ended))
        return ended

    table.update({"a": hour(0.2), "b": hour(0.5)})
    first = run(hour(1))
    assert span(first) == (hour(0), hour(1))
    table.update({"a": hour(1.5), "c": hour(1.7)})  # a updated, c inserted
    run(hour(2), TaskStatus.FAILED)  # the watermark stays at 1h
    assert world.store.schedules[schedule_id].watermark == hour(1)
    table.update({"c": hour(2.2), "d": hour(2.4)})  # c updated twice: sent once, as it is now
    third = run(hour(3))
    assert span(third)[0] == hour(1)  # covers the failed run's span too
    service.update_schedule(schedule_id, service.ScheduleChanges({"state": ScheduleState.PAUSED}), ALICE, world.deps)
    assert firing.fire(schedule_id, hour(4), world.deps).outcome is firing.FiringOutcome.SKIPPED
    table.update({"b": hour(4.5)})
    service.update_schedule(schedule_id, service.ScheduleChanges({"state": ScheduleState.ACTIVE}), ALICE, world.deps)
    fifth = run(hour(5))
    assert span(fifth)[0] == hour(3)  # from the watermark, across the pause

    assert sorted(sent) == sorted(
        [("a", hour(0.2)), ("b", hour(0.5)), ("a", hour(1.5)), ("c", hour(2.2)), ("d", hour(2.4)), ("b", hour(4.5))]
    )
    assert len(sent) == len(set(sent))
    assert world.store.schedules[schedule_id].watermark == hour(5)


def test_a_firing_while_the_run_is_in_flight_makes_no_task_and_the_next_covers_its_span():
    world, schedule_id = feed()
    first = firing.fire(schedule_id, hour(1), world.deps)

    busy = firing.fire(schedule_id, hour(2), world.deps)
    with pytest.raises(FeedBusy):
        service.run_now(schedule_id, ALICE, world.deps)

    assert busy.outcome is firing.FiringOutcome.BUSY and busy.task_id == first.task_id
    assert world.services.counts(Metric.FEED_FIRING_SKIPPED) == 1
    world.end(first.task_id)
    third = world.task(firing.fire(schedule_id, hour(3), world.deps).task_id)
    assert span(third) == (hour(1), hour(3))


def test_a_run_whose_end_was_not_observed_is_taken_as_ended_at_the_next_firing():
    world, schedule_id = feed()
    task = world.task(firing.fire(schedule_id, hour(1), world.deps).task_id)
    # The worker completed it, but the callback function never recorded the end.
    now = world.services.clock()
    done = complete(claim(task, now, timedelta(minutes=2)), make_result(rows=0), now, timedelta(days=1))
    world.services.tasks.tasks[task.task_id] = done

    second = world.task(firing.fire(schedule_id, hour(2), world.deps).task_id)

    assert span(second)[0] == hour(1)
    on_run_end(done, world.run_end())  # observed late: the watermark is not moved twice
    assert world.store.schedules[schedule_id].feed_run is not None


def test_the_lag_holds_back_the_youngest_changes_and_a_far_behind_feed_catches_up_in_spans():
    world, schedule_id = feed(lag=timedelta(minutes=5))
    first = world.task(firing.fire(schedule_id, hour(1), world.deps).task_id)
    assert span(first)[1] == hour(1) - timedelta(minutes=5)
    world.end(first.task_id)

    later = world.task(firing.fire(schedule_id, hour(24 * 30), world.deps).task_id)

    assert span(later)[0] == span(first)[1]
    assert span(later)[1] - span(later)[0] == timedelta(days=7)


def test_a_watermark_reset_restarts_the_feed_and_only_feeds_take_one():
    world, schedule_id = feed()
    world.end(firing.fire(schedule_id, hour(1), world.deps).task_id)
    assert world.store.schedules[schedule_id].watermark == hour(1)

    reset = service.update_schedule(schedule_id, service.ScheduleChanges({"watermark": None}), ALICE, world.deps)
    assert reset.watermark is None
    assert span(world.task(firing.fire(schedule_id, hour(2), world.deps).task_id))[0] == hour(0)

    # A watermark ahead is where the feed starts: the runs until then cover an empty span.
    ahead = service.update_schedule(schedule_id, service.ScheduleChanges({"watermark": hour(10)}), ALICE, world.deps)
    assert ahead.watermark == hour(10)
    world.source.table["early"] = hour(2.5)
    early = world.end(firing.fire(schedule_id, hour(3), world.deps).task_id)
    assert span(early) == (hour(10), hour(10))
    assert early.result is not None and early.result.rows == 0

    # A schedule that is no feed has no watermark: its body could not know, a conflict (409).
    plain = service.create_schedule(
        service.ScheduleSpec(
            export=ExportSpec(export_type="created_rows", filters={"changed_from": "previous_day"}),
            every=Every(hours=1),
        ),
        ALICE,
        world.deps,
    )
    with pytest.raises(ScheduleConflict) as not_a_feed:
        service.update_schedule(plain.schedule_id, service.ScheduleChanges({"watermark": hour(1)}), ALICE, world.deps)
    assert not_a_feed.value.field == "watermark"
    assert "is no feed" in not_a_feed.value.message


def test_since_last_run_needs_a_type_that_declares_its_change_column():
    world, _ = feed()
    spec = service.ScheduleSpec(
        export=ExportSpec(export_type="created_rows", filters={"changed_from": "since_last_run"}), every=Every(hours=1)
    )
    with pytest.raises(InvalidRequest) as refused:
        service.create_schedule(spec, ALICE, world.deps)
    assert refused.value.details["field"] == "filters.changed_from"
    assert "cannot be a change feed" in refused.value.message
    ended = dataclasses.replace(
        spec, export=ExportSpec(export_type="changed_rows", filters={"changed_to": "since_last_run"})
    )
    with pytest.raises(InvalidRequest) as wrong_end:
        service.create_schedule(ended, ALICE, world.deps)
    assert wrong_end.value.details["field"] == "filters.changed_to"


def test_an_empty_run_skipped_keeps_no_file_mails_no_one_and_says_so_in_its_webhook():
    world, schedule_id = feed(when_empty=WhenEmpty.SKIP, recipients=("finance@acme.example",))
    empty = world.end(firing.fire(schedule_id, hour(1), world.deps).task_id)
    world.source.table["a"] = hour(1.5)
    full = world.end(firing.fire(schedule_id, hour(2), world.deps).task_id)

    assert empty.skip_empty and empty.empty_skipped and not empty.has_file
    data = callback_payload(empty, world.services.callback)["data"]
    assert (data["empty"], data["skipped"], data["download_url"]) == (True, True, None)
    assert full.has_file and not full.empty_skipped
    assert callback_payload(full, world.services.callback)["data"]["empty"] is False
    [(_, _, subject, _)] = world.mailer.sent
    assert "1 rows" in subject
    stored = world.store.schedules[schedule_id]
    assert stored.watermark == hour(2) and stored.latest_task_id == full.task_id


def test_latest_is_the_newest_completed_file_for_its_owner_and_the_permalink_until_revoked():
    world, schedule_id = feed()
    with pytest.raises(NoLatestFile):
        latest.owner_latest(schedule_id, "alice", world.deps)
    world.source.table["a"] = hour(0.5)
    done = world.end(firing.fire(schedule_id, hour(1), world.deps).task_id)
    world.end(firing.fire(schedule_id, hour(2), world.deps).task_id, TaskStatus.FAILED)

    assert done.task_id in latest.owner_latest(schedule_id, "alice", world.deps).url
    with pytest.raises(ScheduleNotFound):
        latest.owner_latest(schedule_id, "bob", world.deps)
    key, _ = latest.mint_permalink(schedule_id, "alice", world.deps)
    assert done.task_id in latest.permalink_latest(schedule_id, key, world.deps).url
    rotated, _ = latest.mint_permalink(schedule_id, "alice", world.deps)
    with pytest.raises(ScheduleNotFound):
        latest.permalink_latest(schedule_id, key, world.deps)
    latest.revoke_permalink(schedule_id, "alice", world.deps)
    with pytest.raises(ScheduleNotFound):
        latest.permalink_latest(schedule_id, rotated, world.deps)
    assert world.store.schedules[schedule_id].permalink_hash is None


@pytest.mark.parametrize("timing", [{"cron": "0 * * * *", "every": None}, {"every": Every(hours=1)}])
def test_an_hourly_feed_over_the_autumn_change_covers_the_repeated_hour_once(timing: dict[str, Any]):
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 10, 24, 22, tzinfo=UTC)  # 00:00 CEST on 25 October
    world, schedule_id = feed(timezone="Europe/Berlin", start_at=start, **timing)
    # 02:30 local happens twice: 00:30 UTC (CEST) and 01:30 UTC (CET).
    first, second = datetime(2026, 10, 25, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    assert first.astimezone(berlin).strftime("%H:%M") == second.astimezone(berlin).strftime("%H:%M") == "02:30"
    world.source.table.update({"first": first, "second": second})
    schedule = world.store.schedules[schedule_id]
    end = datetime(2026, 10, 25, 4, tzinfo=UTC)
    firings = list(takewhile(lambda at: at <= end, recurrence_of(schedule).firings(start)))

    windows, sent = [], []
    for at in firings:
        task = world.end(firing.fire(schedule_id, at, world.deps).task_id)
        windows.append(span(task))
        sent.extend(world.exported(task))

    assert sorted(sent) == [("first", first), ("second", second)]
    assert all(earlier[1] == later[0] for earlier, later in pairwise(windows))
    assert windows[0][0] == start and windows[-1][1] == firings[-1]


def test_the_window_never_ends_before_it_starts():
    world, schedule_id = feed(lag=timedelta(hours=2))
    schedule = world.store.schedules[schedule_id]
    changes = world.source.changes()
    assert feed_window(schedule, changes, hour(1)) == (hour(0), hour(0))


def test_the_incremental_window_lives_in_schedules_only() -> None:
    # docs/how-to/README.md: a window over what changed is the schedules' alone (its value, its
    # span, its watermark); a type only declares which column changes (its `changes`), which the
    # run reads as any filter. Outside schedules/ the word is in docstrings, never in code.
    repo = Path(__file__).resolve().parents[3]
    in_code = re.compile(r"[\"']since_last_run[\"']|SINCE_LAST_RUN|schedules\.feed\b|schedules import feed\b")
    naming = sorted(
        str(path.relative_to(repo))
        for path in (repo / "exports").rglob("*.py")
        if in_code.search(path.read_text(encoding="utf-8"))
    )
    assert naming and all(name.startswith("exports/schedules/") for name in naming), naming
