"""A schedule's filters with their relative window resolved for one firing."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from exports.domain.errors import InvalidRequest
from exports.export_types.base import WindowParameters
from exports.schedules.windows import RelativeWindow, WindowKind, parse_relative, resolve


def _relative(name: str, value: Any) -> RelativeWindow | None:
    try:
        return parse_relative(value)
    except ValueError as error:
        raise InvalidRequest(str(error), field=f"filters.{name}") from None


def resolved_filters(
    filters: dict[str, Any], window: WindowParameters | None, firing: datetime, zone: ZoneInfo
) -> dict[str, Any]:
    """``filters`` for the firing at ``firing``: a relative value on the window's start (the end
    omitted or the same value) becomes both ends' values, as JSON (dates, or aware local
    date-times). A relative value on any other parameter, or on the end alone, is a 422 naming
    it (``filters.<name>``)."""
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
