"""Feeds: a schedule whose window is ``since_last_run`` sends, at each run, the rows that changed
since the previous COMPLETED run (docs/schedules.md, "Feeds").

The functions here are pure. Their callers store what they return, each write conditional on
the version they read.

- A run covers ``[watermark, firing - lag)`` on the export type's change column. The span is
  capped at the type's longest range, so a feed far behind catches up over several runs.
- The watermark is the previous COMPLETED run's end. It moves only when a run COMPLETES. A run
  that ends FAILED, TIMEOUT or CANCELLED leaves it where it was, so the next run covers that span
  too.
- A feed has one run at a time. A firing while the feed's run is in flight makes no task, and the
  next run covers its span. So no two runs ever cover the same rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from exports.core.export_type import ChangeWindow
from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.schedules.model import FeedRun, Schedule

SINCE_LAST_RUN = "since_last_run"


def is_feed(filters: dict[str, Any]) -> bool:
    """Whether these filters ask for a feed: a parameter's value is ``since_last_run``."""
    return any(value == SINCE_LAST_RUN for value in filters.values())


def feed_start(schedule: Schedule, changes: ChangeWindow) -> datetime:
    """Where the feed's next run starts: the watermark if there is one, else ``start_at``, else
    the type's floor, else the schedule's creation."""
    return schedule.watermark or schedule.start_at or changes.floor or schedule.created_at


def feed_window(schedule: Schedule, changes: ChangeWindow, firing: datetime) -> tuple[datetime, datetime]:
    """The span the run of ``firing`` covers, from the feed's start to the firing less the lag.

    The span never ends before its start, and it is at most the type's longest range.
    """
    start = feed_start(schedule, changes)
    end = max(start, firing - changes.lag)
    if changes.max_span is not None:
        end = min(end, start + changes.max_span)
    return start, end


def holding(run: FeedRun | None, now: datetime, lease: timedelta) -> bool:
    """Whether ``run`` still holds its feed back.

    It does while it has its task, until that task's end is observed. It also does when it was
    reserved less than ``lease`` ago, since the invocation may still be making its task.
    """
    return run is not None and (run.task_id is not None or now - run.reserved_at < lease)


def reserve(schedule: Schedule, firing: datetime, window: tuple[datetime, datetime], now: datetime) -> Schedule:
    """Returns the schedule with the run of ``firing`` in flight over ``window``."""
    run = FeedRun(scheduled_for=firing, window_from=window[0], window_to=window[1], reserved_at=now)
    return schedule.model_copy(update={"feed_run": run})


def bind_task(schedule: Schedule, task_id: str) -> Schedule:
    """Returns the schedule with its run in flight bound to its task."""
    assert schedule.feed_run is not None
    return schedule.model_copy(update={"feed_run": schedule.feed_run.model_copy(update={"task_id": task_id})})


def release(schedule: Schedule) -> Schedule:
    """Returns the schedule with no run in flight, for a reservation that made no task."""
    return schedule.model_copy(update={"feed_run": None})


def end_feed_run(schedule: Schedule, task: Task) -> Schedule:
    """Returns ``schedule`` as it is after its feed's run ``task`` ended.

    A COMPLETED run moves the watermark to the run's end. Any other end leaves the watermark, so
    the next run covers the span again. The schedule is unchanged when ``task`` is not the run in
    flight: that run ended already, or the watermark was reset meanwhile.
    """
    run = schedule.feed_run
    if run is None or run.task_id != task.task_id or not task.is_terminal:
        return schedule
    update: dict[str, Any] = {"feed_run": None}
    if task.status is TaskStatus.COMPLETED:
        update["watermark"] = run.window_to
    return schedule.model_copy(update=update)


def record_latest(schedule: Schedule, task: Task) -> Schedule:
    """Returns ``schedule`` with ``task`` as its latest file, when the task COMPLETED with a file
    and fired no earlier than the current latest."""
    if task.status is not TaskStatus.COMPLETED or task.result is None or task.empty_skipped:
        return schedule
    fired = task.scheduled_for or task.created_at
    if schedule.latest_scheduled_for is not None and fired < schedule.latest_scheduled_for:
        return schedule
    return schedule.model_copy(update={"latest_task_id": task.task_id, "latest_scheduled_for": fired})
