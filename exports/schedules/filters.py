"""A schedule's filters with their relative window resolved for one firing."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from exports.core.errors import InvalidRequest
from exports.core.export_type import ChangeWindow, WindowParameters
from exports.schedules.feed import SINCE_LAST_RUN
from exports.schedules.windows import RelativeWindow, WindowKind, parse_relative, resolve


def _relative(name: str, value: Any) -> RelativeWindow | None:
    try:
        return parse_relative(value)
    except ValueError as error:
        raise InvalidRequest(str(error), field=f"filters.{name}") from None


def feed_filters(
    filters: dict[str, Any], changes: ChangeWindow | None, span: tuple[datetime, datetime]
) -> dict[str, Any]:
    """``filters`` with ``since_last_run`` on the change window's start replaced by ``span``
    (UTC instants: the start included, the end excluded). ``since_last_run`` on a type that
    declares no change column (a ``created_at`` window is no change feed), on another parameter,
    or with the end given too, is a 422 naming it."""
    asked = [name for name, value in filters.items() if value == SINCE_LAST_RUN]
    if not asked:
        return dict(filters)
    for name in asked:
        if changes is None:
            raise InvalidRequest(
                "since_last_run needs an export type that declares when a row last changed (changes = ...);"
                " this one does not, so it cannot be a change feed",
                field=f"filters.{name}",
            )
        if name != changes.start:
            raise InvalidRequest(
                f"since_last_run goes on {changes.start} (the start of the change window on {changes.column})",
                field=f"filters.{name}",
            )
    assert changes is not None
    if filters.get(changes.end) is not None:
        raise InvalidRequest(
            f"leave {changes.end} out: since_last_run sets the whole change window", field=f"filters.{changes.end}"
        )
    return {**filters, changes.start: span[0].isoformat(), changes.end: span[1].isoformat()}


def resolved_filters(
    filters: dict[str, Any], window: WindowParameters | None, firing: datetime, zone: ZoneInfo
) -> dict[str, Any]:
    """``filters`` for the firing at ``firing``: a relative value on the window's start (the end
    omitted or the same value) becomes both ends' values, as JSON (dates, or aware local
    date-times). A relative value on any other parameter, or on the end alone, is a 422 naming
    it (``filters.<name>``). ``since_last_run`` is :func:`feed_filters`'."""
    relative = {name: found for name, value in filters.items() if (found := _relative(name, value)) is not None}
    if not relative:
        return dict(filters)
    for name in relative:
        if window is None or name not in (window.start, window.end):
            where = f"its window parameters {window.start}/{window.end}" if window else "none: it has no date range"
            raise InvalidRequest(
                f"a relative window (previous_week, ...) goes only on the export type's window ({where})",
                field=f"filters.{name}",
            )
    assert window is not None
    chosen = relative.get(window.start)
    if chosen is None:
        raise InvalidRequest(
            f"give the relative window on {window.start} (the start of the range)", field=f"filters.{window.end}"
        )
    end_value = filters.get(window.end)
    if end_value is not None and relative.get(window.end) != chosen:
        raise InvalidRequest(
            f"leave {window.end} out (or give the same relative value): {window.start} sets the whole range",
            field=f"filters.{window.end}",
        )
    start, end = resolve(chosen, firing, zone, WindowKind(window.kind))
    return {**filters, window.start: start.isoformat(), window.end: end.isoformat()}
