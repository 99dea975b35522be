"""A schedule's timing in EventBridge Scheduler's form: ``cron(minutes hours day-of-month month
day-of-week year)`` or ``rate(value unit)``.

The fields come from cronsim's reading of the 5-field expression (its sets of values), written
again in Scheduler's syntax: day-of-week numbered 1-7 for SUN-SAT (written as names), ``?`` in
whichever of day-of-month and day-of-week is not restricted. Scheduler cannot say "this day of
the month or that day of the week", so an expression restricting both is refused (cron would
run on either), as are forms Scheduler has no equivalent of.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from exports.core.errors import InvalidRequest
from exports.schedules.expression import parse_cron
from exports.schedules.model import Every

if TYPE_CHECKING:
    from cronsim import CronSim

# cronsim's markers in its sets of days (_LAST, _LAST_WEEKDAY), read without
# importing it here.
_LAST, _LAST_WEEKDAY = -1000, -1001

# Scheduler's day-of-week names, 1 (SUN) to 7 (SAT).
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MINUTES, _HOURS, _DAYS, _MONTHS = range(0, 60), range(0, 24), range(1, 32), range(1, 13)


def _refuse(message: str) -> InvalidRequest:
    return InvalidRequest(message, field="cron", code="INVALID_CRON")


def scheduler_expression(cron: str | None, every: Every | None) -> str:
    """``cron(...)`` or ``rate(...)`` for Scheduler; a 422 on ``cron`` for an expression it
    cannot run the same way."""
    if every is not None:
        unit, value = every.unit_and_value()
        return f"rate({value} {unit if value != 1 else unit[:-1]})"
    assert cron is not None
    parsed = parse_cron(cron)
    day_of_month, day_of_week = _day_of_month(parsed), _day_of_week(parsed)
    if day_of_month != "*" and day_of_week != "*":
        raise _refuse(
            "give a day of the month or a day of the week, not both: EventBridge Scheduler cannot run"
            " on either one (use two schedules)"
        )
    if day_of_week == "*":
        day_of_week = "?"
    else:
        day_of_month = "?"
    fields = (
        _numbers(parsed.minutes, _MINUTES),
        _numbers(parsed.hours, _HOURS),
        day_of_month,
        _numbers(parsed.months, _MONTHS),
        day_of_week,
        "*",
    )
    return f"cron({' '.join(fields)})"


def _day_of_month(parsed: CronSim) -> str:
    days = set(parsed.days)
    if days == {_LAST}:
        return "L"
    if _LAST in days or _LAST_WEEKDAY in days:
        raise _refuse("EventBridge Scheduler takes L (last day of the month) only on its own; LW is not supported")
    return _numbers(days, _DAYS)


def _day_of_week(parsed: CronSim) -> str:
    plain = {item for item in parsed.weekdays if isinstance(item, int)}
    special = [item for item in parsed.weekdays if not isinstance(item, int)]
    if special:
        if plain or len(special) != 1:
            raise _refuse("EventBridge Scheduler takes a # or L day of the week only on its own")
        day, which = special[0]
        # Scheduler's examples write these with numbers: 6L (the last Friday), 2#1 (the first Monday).
        number = day % 7 + 1
        return f"{number}L" if which == _LAST else f"{number}#{which}"
    # cron's 0 and 7 are both Sunday; Scheduler numbers SUN-SAT 1-7.
    numbers = {day % 7 + 1 for day in plain}
    if numbers == set(range(1, 8)):
        return "*"
    return ",".join(
        DAY_NAMES[start - 1] if start == end else f"{DAY_NAMES[start - 1]}-{DAY_NAMES[end - 1]}"
        for start, end in _runs(numbers)
    )


def _numbers(values: Iterable[int], full: range) -> str:
    """``*`` for every value, ``start/step`` for a progression to the field's end, else runs
    (``1-5``) and single values joined by commas."""
    chosen = sorted(set(values))
    if chosen == list(full):
        return "*"
    if len(chosen) >= 3:
        step = chosen[1] - chosen[0]
        if step > 1 and chosen == list(range(chosen[0], full[-1] + 1, step)):
            return f"{chosen[0]}/{step}"
    return ",".join(str(start) if start == end else f"{start}-{end}" for start, end in _runs(chosen))


def _runs(values: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive values as (first, last) runs; runs of two are two single values."""
    runs: list[tuple[int, int]] = []
    for value in sorted(values):
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    split: list[tuple[int, int]] = []
    for start, end in runs:
        split.extend([(start, start), (end, end)] if end == start + 1 else [(start, end)])
    return split
