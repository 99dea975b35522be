"""When a schedule fires: a 5-field cron expression or a fixed interval (``every``), evaluated
in the schedule's IANA time zone, following EventBridge Scheduler's rules (docs/schedules.md,
"Time zones and daylight saving time"):

- A cron time that does not exist locally (the hour the clocks skip in spring) fires once, at
  the first instant after the gap (03:00 in Berlin and New York, 02:30 on Lord Howe): a *moved*
  firing. Several times inside one gap are one firing, and one that coincides with a time the
  expression names anyway is that firing. Scheduler itself skips such times, so the service adds
  a one-time Scheduler schedule for each moved firing (exports/schedules/eventbridge_scheduler.py).
- A cron time that exists twice (the hour repeated in autumn) fires once, at its first
  occurrence (the earlier instant, still on summer time).
- An interval is a fixed duration (a day is 24 hours), counted from its anchor in UTC: local
  wall times shift by the DST change, as with Scheduler's ``rate``.

cronsim evaluates the expressions on local wall time (no parser of our own); this module only
refuses what Scheduler cannot run and maps cronsim's wall times to instants with the two DST
rules above.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from exports.core.errors import InvalidRequest
from exports.core.zones import UnknownZone, canonical_zone
from exports.schedules.model import Every, Schedule

if TYPE_CHECKING:
    # Imported where a cron is evaluated: the API's cold start does not pay for it otherwise.
    from cronsim import CronSim

CRON_FIELDS = 5
# Shortest-interval checks look this far ahead (a year and a day: both DST changes): at the next
# GAP_MAX_FIRINGS firings, and at every firing within GAP_DST_WINDOW of each change of the zone's
# offset in that time (where a gap can be shorter than the expression's wall-clock gaps).
GAP_HORIZON = timedelta(days=366)
GAP_MAX_FIRINGS = 2_000
GAP_DST_WINDOW = timedelta(days=2)
# A moved firing is at the end of a gap: within the hour before the instant offset_changes names.
_CHANGE_PRECISION = timedelta(hours=1)
# Cron firings are looked for from this long before ``after`` (more than any DST shift), then
# those not after it dropped: none is missed whether ``after`` is in a repeated hour or not.
_WALL_MARGIN = timedelta(hours=4)
# Leap days: a cron of 29 February fires once in four years; its next runs need 20 years.
_SEARCH_YEARS = 30


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` under the rule of an export's zone (exports.core.zones): a 422
    on ``timezone`` saying which names are accepted."""
    try:
        return ZoneInfo(canonical_zone(name))
    except UnknownZone as error:
        raise InvalidRequest(str(error), field="timezone") from None


def parse_cron(expression: str) -> CronSim:
    """cronsim's reading of a 5-field expression (minute hour day-of-month month day-of-week);
    a 422 on ``cron`` for anything else (6 fields, a bad field, a day that never comes)."""
    fields = expression.split()
    if len(fields) != CRON_FIELDS:
        raise InvalidRequest(
            "give 5 fields: minute hour day-of-month month day-of-week (e.g. '0 8 * * 1')",
            field="cron",
            code="INVALID_CRON",
        )
    from cronsim import CronSim, CronSimError

    try:
        return CronSim(expression, datetime(2000, 1, 1))
    except (CronSimError, ValueError) as error:
        raise InvalidRequest(f"invalid cron expression: {error}", field="cron", code="INVALID_CRON") from None


@dataclass(frozen=True)
class Recurrence:
    """A schedule's timing: ``cron`` or ``every`` (exactly one), its zone, its anchor (where
    ``every`` counts from) and its optional window of validity."""

    cron: str | None
    every: Every | None
    timezone: str
    anchor: datetime
    start_at: datetime | None = None
    end_at: datetime | None = None

    def firings(self, after: datetime) -> Iterator[datetime]:
        """Every firing strictly after ``after``, as aware UTC datetimes, in order, within
        ``start_at`` (inclusive) and ``end_at`` (exclusive); moved firings included."""
        return (firing.instant for firing in self._marked_firings(after))

    def next_moved_firing(self, after: datetime, within: timedelta) -> datetime | None:
        """The first moved firing (a cron time in a DST gap, fired at the gap's end) strictly
        after ``after`` and no later than ``after + within``; None when there is none."""
        if self.cron is None:
            return None
        end = after + within
        tz = zone(self.timezone)
        for change in offset_changes(self.timezone, after, end):
            if _offset(change, tz) <= _offset(change - _CHANGE_PRECISION, tz):
                continue  # clocks go back: no gap
            for firing in self._marked_firings(max(after, change - _CHANGE_PRECISION)):
                if firing.instant > min(change, end):
                    break
                if firing.moved:
                    return firing.instant
        return None

    def _marked_firings(self, after: datetime) -> Iterator[_Firing]:
        begin = after if self.start_at is None or self.start_at <= after else self.start_at - timedelta(microseconds=1)
        source = self._cron_firings(begin) if self.cron is not None else self._interval_firings(begin)
        for firing in source:
            if self.end_at is not None and firing.instant >= self.end_at:
                return
            yield firing

    def next_runs(self, after: datetime, count: int) -> list[datetime]:
        """The next ``count`` firings after ``after`` (fewer when the schedule ends first)."""
        return list(islice(self.firings(after), count))

    def shortest_gap(self, after: datetime, floor: timedelta | None = None) -> timedelta | None:
        """The shortest time between two consecutive firings over the next year: among the next
        ``GAP_MAX_FIRINGS`` firings and those around each DST change of the zone in that year;
        None when it fires less than twice in that time. With ``floor``, the first gap shorter
        than it is answered at once (it is short enough to refuse)."""
        end = after + GAP_HORIZON
        starts = [after, *(change - GAP_DST_WINDOW for change in offset_changes(self.timezone, after, end))]
        shortest: timedelta | None = None
        for start in starts:
            previous: datetime | None = None
            stop = end if start == after else min(end, start + 2 * GAP_DST_WINDOW)
            for firing in islice(self._marked_firings(max(start, after)), GAP_MAX_FIRINGS):
                if firing.instant > stop:
                    break
                # A moved firing stands in, once a year, for one the expression spaced as it
                # spaces all the others: the gaps measured are those between its own times.
                if firing.moved:
                    continue
                if previous is not None:
                    gap = firing.instant - previous
                    shortest = gap if shortest is None else min(shortest, gap)
                    if floor is not None and shortest < floor:
                        return shortest
                previous = firing.instant
        return shortest

    def _cron_firings(self, after: datetime) -> Iterator[_Firing]:
        """cronsim's wall times mapped to instants: a repeated one at its first occurrence, one
        in a gap at the gap's end (moved); equal instants are one firing, moved only when
        every wall time it stands for is."""
        assert self.cron is not None
        tz = zone(self.timezone)
        parsed = parse_cron(self.cron)
        limit = after + timedelta(days=366 * _SEARCH_YEARS)
        # Wall times map to instants in order (never backwards): start early, drop the early ones.
        start = (after - _WALL_MARGIN).astimezone(tz).replace(tzinfo=None)
        pending: _Firing | None = None
        for wall in type(parsed)(self.cron, start):
            firing = _instant_of(wall, tz)
            if firing.instant <= after:
                continue
            if pending is not None and firing.instant == pending.instant:
                pending = _Firing(pending.instant, pending.moved and firing.moved)
                continue
            if pending is not None:
                yield pending
            if firing.instant > limit:
                return
            pending = firing
        if pending is not None:
            yield pending

    def _interval_firings(self, after: datetime) -> Iterator[_Firing]:
        assert self.every is not None
        step = timedelta(seconds=self.every.seconds)
        anchor = self.start_at or self.anchor
        # The first k with anchor + k * step > after (k >= 0: an interval fires at its anchor).
        k = 0 if after < anchor else (after - anchor) // step + 1
        while True:
            yield _Firing((anchor + k * step).astimezone(UTC))
            k += 1


@dataclass(frozen=True)
class _Firing:
    instant: datetime
    # A cron time in a DST gap, fired at the gap's end (Scheduler would skip it).
    moved: bool = False


def _instant_of(wall: datetime, tz: ZoneInfo) -> _Firing:
    """The instant of the naive local ``wall`` time: its first occurrence when autumn repeats
    it; the end of the gap, moved, when spring skips it."""
    first = wall.replace(tzinfo=tz, fold=0)
    instant = first.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) == wall:
        return _Firing(instant)
    return _Firing(_gap_end(wall.replace(tzinfo=tz, fold=1).astimezone(UTC), instant, tz), moved=True)


def _offset(instant: datetime, tz: ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None  # a ZoneInfo always has one
    return offset


def _gap_end(low: datetime, high: datetime, tz: ZoneInfo) -> datetime:
    """The instant the offset changes between ``low`` (still the old offset) and ``high``: the
    first local time after the gap. To the second (zones change on whole minutes)."""
    before = _offset(low, tz)
    lo, hi = 0, int((high - low).total_seconds())
    while lo < hi:
        middle = (lo + hi) // 2
        if _offset(low + timedelta(seconds=middle), tz) == before:
            lo = middle + 1
        else:
            hi = middle
    return low + timedelta(seconds=lo)


def offset_changes(timezone: str, start: datetime, end: datetime) -> list[datetime]:
    """The instants (to the hour) at which ``timezone``'s UTC offset changes between ``start``
    and ``end``: its DST changes."""
    tz = zone(timezone)
    changes: list[datetime] = []
    instant = start.replace(minute=0, second=0, microsecond=0)
    offset = instant.astimezone(tz).utcoffset()
    while instant < end:
        following = instant + timedelta(hours=6)
        if following.astimezone(tz).utcoffset() != offset:
            # Find the hour within these six.
            for hour in range(1, 7):
                candidate = instant + timedelta(hours=hour)
                if candidate.astimezone(tz).utcoffset() != offset:
                    changes.append(candidate)
                    break
            offset = following.astimezone(tz).utcoffset()
        instant = following
    return changes


def check_interval(recurrence: Recurrence, now: datetime, minimum: timedelta) -> None:
    """A 422 ``INTERVAL_TOO_SHORT`` (field ``cron`` or ``every``) when two firings can come
    closer than ``minimum``; for cron, the shortest gap between consecutive firings over the
    next year, DST changes included."""
    field = "cron" if recurrence.cron is not None else "every"
    if recurrence.every is not None:
        gap: timedelta | None = timedelta(seconds=recurrence.every.seconds)
    else:
        gap = recurrence.shortest_gap(now, floor=minimum)
    if gap is not None and gap < minimum:
        minutes = int(minimum.total_seconds() // 60)
        raise InvalidRequest(
            f"firings would come {_describe(gap)} apart; the shortest interval allowed is {minutes} minutes",
            field=field,
            code="INTERVAL_TOO_SHORT",
        )


def _describe(gap: timedelta) -> str:
    seconds = int(gap.total_seconds())
    if seconds % 60:
        return f"{seconds} seconds"
    return "1 minute" if seconds == 60 else f"{seconds // 60} minutes"


def recurrence_of(schedule: Schedule) -> Recurrence:
    """The schedule's timing."""
    return Recurrence(
        cron=schedule.cron,
        every=schedule.every,
        timezone=schedule.timezone,
        anchor=schedule.anchor_at,
        start_at=schedule.start_at,
        end_at=schedule.end_at,
    )
