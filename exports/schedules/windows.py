"""Relative date windows: a schedule's window parameters (the export type's date range, e.g.
``date_from``/``date_to`` of the demo ``orders``) may say ``previous_week`` instead of dates,
resolved at each firing in the schedule's zone.

- ``previous_day``: the local day before the firing's.
- ``previous_week``: the ISO week (Monday to Sunday) before the firing's.
- ``previous_month``: the calendar month before the firing's.
- ``month_to_date``: from the 1st of the firing's month to the firing's day (date parameters) or
  to the firing instant (date-time parameters).
- ``last_n_days:N``: the N whole local days before the firing's day (1 <= N <= 366).

Date parameters get the first and the last local day. Date-time parameters get local midnights
as aware date-times: the first day's 00:00 and the 00:00 after the last day (so a window over a
23- or a 25-hour day spans exactly that day).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

MAX_LAST_N_DAYS = 366
_LAST_N_DAYS = re.compile(r"last_n_days:([1-9][0-9]{0,2})")


class WindowKind(StrEnum):
    """What the window's parameters take."""

    DATE = "date"
    DATETIME = "datetime"


class Relative(StrEnum):
    """The relative windows with a fixed name (``last_n_days:N`` carries its N)."""

    PREVIOUS_DAY = "previous_day"
    PREVIOUS_WEEK = "previous_week"
    PREVIOUS_MONTH = "previous_month"
    MONTH_TO_DATE = "month_to_date"
    LAST_N_DAYS = "last_n_days"


@dataclass(frozen=True)
class RelativeWindow:
    """A relative window; ``days`` for ``last_n_days``."""

    kind: Relative
    days: int = 0

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.days}" if self.kind is Relative.LAST_N_DAYS else self.kind.value


def parse_relative(value: Any) -> RelativeWindow | None:
    """The relative window ``value`` names; None when it names none (a date, anything else).
    ``ValueError`` for ``last_n_days`` with an N out of range."""
    if not isinstance(value, str):
        return None
    if value.startswith(Relative.LAST_N_DAYS.value + ":"):
        match = _LAST_N_DAYS.fullmatch(value)
        if match is None or int(match.group(1)) > MAX_LAST_N_DAYS:
            raise ValueError(f"last_n_days takes a whole number of days from 1 to {MAX_LAST_N_DAYS}")
        return RelativeWindow(Relative.LAST_N_DAYS, int(match.group(1)))
    try:
        kind = Relative(value)
    except ValueError:
        return None
    if kind is Relative.LAST_N_DAYS:
        raise ValueError(f"last_n_days takes a number of days: last_n_days:7 (1 to {MAX_LAST_N_DAYS})")
    return RelativeWindow(kind)


def window_days(window: RelativeWindow, firing_day: date) -> tuple[date, date]:
    """The first and last local day (both included) of ``window`` for a firing on ``firing_day``."""
    match window.kind:
        case Relative.PREVIOUS_DAY:
            day = firing_day - timedelta(days=1)
            return day, day
        case Relative.PREVIOUS_WEEK:
            monday = firing_day - timedelta(days=firing_day.isoweekday() - 1 + 7)
            return monday, monday + timedelta(days=6)
        case Relative.PREVIOUS_MONTH:
            last = firing_day.replace(day=1) - timedelta(days=1)
            return last.replace(day=1), last
        case Relative.MONTH_TO_DATE:
            return firing_day.replace(day=1), firing_day
        case Relative.LAST_N_DAYS:
            return firing_day - timedelta(days=window.days), firing_day - timedelta(days=1)


def resolve(window: RelativeWindow, firing: datetime, zone: ZoneInfo, kind: WindowKind) -> tuple[Any, Any]:
    """The (from, to) values of ``window`` for the firing at ``firing`` (aware) in ``zone``:
    dates, or aware local date-times (midnights; ``month_to_date`` ends at the firing)."""
    local = firing.astimezone(zone)
    first, last = window_days(window, local.date())
    if kind is WindowKind.DATE:
        return first, last
    start = datetime.combine(first, time(), tzinfo=zone)
    if window.kind is Relative.MONTH_TO_DATE:
        return start, local
    return start, datetime.combine(last + timedelta(days=1), time(), tzinfo=zone)
