"""What the schedule bodies take: any instant the schema allows, in UTC, including those at the
ends of the calendar whose UTC time Python cannot hold."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from exports.schedules.api_models import SchedulePatch


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("2026-01-05T08:00:00+01:00", datetime(2026, 1, 5, 7, tzinfo=UTC)),
        ("0001-01-01T00:00:00+00:01", datetime.min.replace(tzinfo=UTC)),
        ("9999-12-31T23:59:59-00:01", datetime.max.replace(tzinfo=UTC)),
    ],
)
def test_an_instant_is_taken_in_utc_even_past_the_calendar_python_holds(given: str, taken: datetime) -> None:
    patch = SchedulePatch.model_validate({"start_at": given, "end_at": given})
    assert patch.start_at == taken and patch.end_at == taken
    assert patch.start_at is not None and patch.start_at.utcoffset() is not None
