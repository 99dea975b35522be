"""The translation of 5-field cron and ``every`` into EventBridge Scheduler's expressions."""

from __future__ import annotations

import pytest

from exports.core.errors import InvalidRequest
from exports.schedules.model import Every
from exports.schedules.scheduler_expression import scheduler_expression


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 8 * * 1", "cron(0 8 ? * MON *)"),
        ("0 8 * * MON", "cron(0 8 ? * MON *)"),
        ("0 8 * * 0", "cron(0 8 ? * SUN *)"),
        ("0 8 * * 7", "cron(0 8 ? * SUN *)"),
        ("0 8 * * 1-5", "cron(0 8 ? * MON-FRI *)"),
        ("0 8 * * mon-fri", "cron(0 8 ? * MON-FRI *)"),
        ("0 8 * * 0,6", "cron(0 8 ? * SUN,SAT *)"),
        ("0 8 * * 6,0", "cron(0 8 ? * SUN,SAT *)"),
        ("0 8 * * 1,3,5", "cron(0 8 ? * MON,WED,FRI *)"),
        ("0 8 * * 5-7", "cron(0 8 ? * SUN,FRI,SAT *)"),
        ("0 8 * * 0-6", "cron(0 8 * * ? *)"),
        ("0 8 * * */1", "cron(0 8 * * ? *)"),
        ("0 8 * * MON#2", "cron(0 8 ? * 2#2 *)"),
        ("0 8 * * 5L", "cron(0 8 ? * 6L *)"),
        ("30 2 * * *", "cron(30 2 * * ? *)"),
        ("*/15 * * * *", "cron(0/15 * * * ? *)"),
        ("5/15 * * * *", "cron(5/15 * * * ? *)"),
        ("1-59/2 * * * *", "cron(1/2 * * * ? *)"),
        ("0 */6 * * *", "cron(0 0/6 * * ? *)"),
        ("0 9-17 * * 1-5", "cron(0 9-17 ? * MON-FRI *)"),
        ("0,30 9,17 * * *", "cron(0,30 9,17 * * ? *)"),
        ("0 9 1 * *", "cron(0 9 1 * ? *)"),
        ("0 9 1,15 * *", "cron(0 9 1,15 * ? *)"),
        ("0 9 L * *", "cron(0 9 L * ? *)"),
        ("0 0 29 2 *", "cron(0 0 29 2 ? *)"),
        ("0 0 1 JAN-MAR *", "cron(0 0 1 1-3 ? *)"),
        ("0 0 1 */3 *", "cron(0 0 1 1/3 ? *)"),
        ("15 10 * 6 *", "cron(15 10 * 6 ? *)"),
        ("0 0 * * *", "cron(0 0 * * ? *)"),
        ("* * * * *", "cron(* * * * ? *)"),
        ("0-4 0 * * *", "cron(0-4 0 * * ? *)"),
    ],
)
def test_cron_becomes_schedulers_six_fields(cron, expected):
    assert scheduler_expression(cron, None) == expected


@pytest.mark.parametrize(
    "cron",
    [
        "0 8 1 * 1",  # day of month or day of week: Scheduler cannot say "either"
        "0 8 1-7 * MON",
        "0 8 L,15 * *",
        "0 8 LW * *",
        "0 8 * * MON#2,FRI",
    ],
)
def test_what_scheduler_cannot_run_the_same_way_is_refused_on_cron(cron):
    with pytest.raises(InvalidRequest) as refused:
        scheduler_expression(cron, None)

    assert refused.value.field == "cron"


@pytest.mark.parametrize(
    ("every", "expected"),
    [
        (Every(minutes=1), "rate(1 minute)"),
        (Every(minutes=30), "rate(30 minutes)"),
        (Every(hours=1), "rate(1 hour)"),
        (Every(hours=6), "rate(6 hours)"),
        (Every(days=1), "rate(1 day)"),
        (Every(days=7), "rate(7 days)"),
    ],
)
def test_every_becomes_a_rate(every, expected):
    assert scheduler_expression(None, every) == expected


def test_the_markers_of_last_days_are_cronsims() -> None:
    from cronsim import CronSim

    from exports.schedules import scheduler_expression as module

    assert (module._LAST, module._LAST_WEEKDAY) == (CronSim.LAST, CronSim.LAST_WEEKDAY)
