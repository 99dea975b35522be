"""Local mode's EventBridge Scheduler: a loop that fires the stored schedules with Scheduler's
semantics (moto stores Scheduler's schedules but never fires them).

Each tick reads the schedules, finds every firing due since the last tick with the same
expression module the API shows ``next_runs`` with (cron or rate in the schedule's zone, DST
rules included), and invokes the schedule function with Scheduler's target Input, each at its own
instant within the schedule's flexible time window (exports/schedules/spread.py: Scheduler picks
at random, the loop by a hash of the firing). The one-time schedules that deliver a firing refused
for capacity again (``retry-...``, stored in moto's Scheduler) are fired once due. A firing whose
invocation fails is delivered again at the next ticks, up to Scheduler's retry attempts, then
sent to the schedule DLQ. The clock is injectable: ``make run`` ticks on wall time; a stack
started with ``EXPORTS_LOCAL_CLOCK=manual`` only moves when told (``POST /local/clock``), so
tests never sleep for a firing.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from exports.core.config.retry import SCHEDULE_TARGET_RETRY
from exports.core.config.schedules import Schedules
from exports.schedules.expression import recurrence_of
from exports.schedules.model import Schedule
from exports.schedules.spread import spread_offset, spread_window
from local_stack.lambda_context import LocalLambdaContext

logger = logging.getLogger("local_stack.schedules")
Handler = Callable[[dict[str, Any], Any], Any]
TICK_SEC = 5.0


class ScheduleSource(Protocol):
    """Where the loop reads the schedules (the DynamoDB store's scan)."""

    def all_schedules(self) -> list[Schedule]:
        """Every schedule."""
        ...


class DeferredFirings(Protocol):
    """Where the loop finds the firings refused for capacity that are due again."""

    def take_due(self, now: datetime) -> list[tuple[str, datetime]]:
        """The (schedule id, firing time) of each retry due by ``now``, removed as they are
        handed over (Scheduler deletes a one-time schedule once it ran)."""
        ...


class Clock:
    """Wall time plus an offset that only grows (``advance``): the loop's idea of now."""

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._now = now
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The current time, advanced."""
        with self._lock:
            return self._now() + self._offset

    def advance(self, seconds: float) -> datetime:
        """Move the clock ``seconds`` ahead; the new now."""
        with self._lock:
            self._offset += timedelta(seconds=seconds)
        return self.now()

    @property
    def offset(self) -> timedelta:
        """How far ahead of wall time it is (what the API's clock reads)."""
        with self._lock:
            return self._offset


@dataclass
class _Pending:
    schedule_id: str
    scheduled_for: datetime
    attempts: int = 0
    # When it is delivered: its time, plus its place in the schedule's flexible window.
    arrives_at: datetime | None = None


class ScheduleLoop:
    """Fires due schedules through ``handler`` (the schedule function's ``lambda_handler``)."""

    def __init__(
        self,
        store: ScheduleSource,
        handler: Handler,
        clock: Clock,
        dead_letter: Callable[[dict[str, Any]], None] | None = None,
        deferred: DeferredFirings | None = None,
    ) -> None:
        self._store = store
        self._handler = handler
        self._clock = clock
        self._dead_letter = dead_letter
        self._deferred = deferred
        # Firings due but not yet arrived (each waits for its instant in the window).
        self._spreading: list[_Pending] = []
        # Per schedule: its window, as of the version it was measured for.
        self._windows: dict[str, tuple[int, timedelta]] = {}
        self._started = clock.now()
        # Per schedule: the instant up to which its firings were handed over.
        self._cursor: dict[str, datetime] = {}
        self._retry: list[_Pending] = []
        # The clock's lead over wall time when the loop last looked: a schedule first seen now was
        # created (stamped with wall time by the API) while the clock was that far ahead.
        self._looked_offset = clock.offset
        self._tick_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[dict[str, Any]]:
        """Invoke every firing due up to the clock's now (and the retries); what was invoked."""
        with self._tick_lock:
            now = self._clock.now()
            due = self._retry
            self._retry = []
            if self._deferred is not None:
                due += [_Pending(schedule_id, firing) for schedule_id, firing in self._deferred.take_due(now)]
            for schedule in self._store.all_schedules():
                since = self._cursor.get(schedule.schedule_id)
                if since is None:
                    # First seen: from its creation (Scheduler's rate fires at its start), in the
                    # loop's time (the API stamps schedules with wall time).
                    created = schedule.anchor_at + self._looked_offset
                    since = max(self._started, created) - timedelta(microseconds=1)
                self._cursor[schedule.schedule_id] = now
                if not schedule.is_active:
                    continue  # Scheduler's schedule is DISABLED: nothing fires, nothing is caught up
                window = self._window(schedule)
                for firing in recurrence_of(schedule).firings(since):
                    if firing > now:
                        break
                    arrives = firing + spread_offset(schedule.schedule_id, firing, window)
                    self._spreading.append(_Pending(schedule.schedule_id, firing, arrives_at=arrives))
            arrived = [pending for pending in self._spreading if pending.arrives_at and pending.arrives_at <= now]
            self._spreading = [pending for pending in self._spreading if pending not in arrived]
            due += arrived
            self._looked_offset = self._clock.offset
            return [self._invoke(pending) for pending in sorted(due, key=lambda p: p.scheduled_for)]

    def _window(self, schedule: Schedule) -> timedelta:
        """The schedule's flexible window, measured again only when the schedule changed."""
        known = self._windows.get(schedule.schedule_id)
        if known is None or known[0] != schedule.version:
            known = (schedule.version, spread_window(schedule))
            self._windows[schedule.schedule_id] = known
        return known[1]

    def advance(self, seconds: float) -> datetime:
        """Move the loop's clock ``seconds`` ahead; the new now."""
        return self._clock.advance(seconds)

    def _invoke(self, pending: _Pending) -> dict[str, Any]:
        event = {
            "schedule_id": pending.schedule_id,
            "scheduled_time": pending.scheduled_for.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "execution_id": str(uuid.uuid4()),
        }
        try:
            result = self._handler(event, LocalLambdaContext("exports-schedule", Schedules.FUNCTION_TIMEOUT_SEC))
        except Exception as error:  # the function's fault, at the edge Scheduler would see it
            pending.attempts += 1
            logger.warning("a firing failed (attempt %d): %s", pending.attempts, error)
            if pending.attempts <= SCHEDULE_TARGET_RETRY.retries:
                self._retry.append(pending)
            elif self._dead_letter is not None:
                self._dead_letter({**event, "error": str(error)})
            return {**event, "outcome": "failed", "error": str(error)}
        logger.info("fired %s for %s: %s", pending.schedule_id, event["scheduled_time"], json.dumps(result))
        return {**event, **(result if isinstance(result, dict) else {})}

    def start(self, interval_sec: float = TICK_SEC) -> None:
        """Tick on wall time in a daemon thread until :meth:`stop`."""

        def run() -> None:
            while not self._stop.wait(interval_sec):
                try:
                    self.tick()
                except Exception:  # keep the loop alive, as Scheduler would
                    logger.exception("the schedule loop's tick failed")

        self._thread = threading.Thread(target=run, name="schedule-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=TICK_SEC + 1)
