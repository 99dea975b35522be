"""Retry backoff and polling advice."""

import random
from datetime import timedelta

import pytest

from exports.core.config.retry import TASK_RETRY
from exports.core.policies import Polling, has_retries_left, poll_after_sec, retry_delay_sec
from tests.unit.builders import NOW, make_task

ALMOST_ONE = 0.999_999
UNCAPPED = [n for n in range(10) if TASK_RETRY.base_sec * 4**n < TASK_RETRY.cap_sec]


@pytest.mark.parametrize(
    ("retry_count", "max_retries", "expected"),
    [(0, 3, True), (2, 3, True), (3, 3, False), (4, 3, False), (0, 0, False)],
)
def test_has_retries_left(retry_count, max_retries, expected):
    assert has_retries_left(make_task(retry_count=retry_count, max_retries=max_retries)) is expected


def test_backoff_is_base_times_four_to_the_retry_count_until_the_cap():
    assert UNCAPPED == [0, 1, 2]  # with base 15 s and a 300 s cap: 15, 60, 240
    for n in UNCAPPED:
        assert retry_delay_sec(n, random=lambda: ALMOST_ONE) == TASK_RETRY.base_sec * 4**n


@pytest.mark.parametrize("retry_count", [UNCAPPED[-1] + 1, UNCAPPED[-1] + 2, 50])
def test_backoff_is_capped(retry_count):
    assert retry_delay_sec(retry_count, random=lambda: ALMOST_ONE) == TASK_RETRY.cap_sec


def test_backoff_grows_with_each_retry():
    delays = [retry_delay_sec(n, random=lambda: ALMOST_ONE) for n in range(8)]
    assert delays == sorted(delays)
    assert len(set(delays)) == len(UNCAPPED) + 1


def test_equal_jitter_draws_the_upper_half_of_the_ceiling():
    assert retry_delay_sec(1, random=lambda: 0.5) == 45  # 30 s fixed, half of the other 30 s


@pytest.mark.parametrize("retry_count", range(6))
def test_backoff_is_never_below_half_the_ceiling(retry_count):
    ceiling = min(TASK_RETRY.cap_sec, TASK_RETRY.base_sec * 4**retry_count)
    assert retry_delay_sec(retry_count, random=lambda: 0.0) == round(ceiling / 2)


def test_backoff_stays_within_half_the_ceiling_and_the_ceiling():
    draws = random.Random(11).random
    for n in range(7):
        ceiling = min(TASK_RETRY.cap_sec, TASK_RETRY.base_sec * 4**n)
        delays = [retry_delay_sec(n, random=draws) for _ in range(200)]
        assert min(delays) >= ceiling / 2
        assert max(delays) <= ceiling


def test_the_default_retries_outlast_a_database_failover_whatever_the_draws():
    """Issue 23: 2 s * 4**n with full jitter spent three retries in 25-35 s, so a 60-second
    failover ended FAILED. Even the shortest draws now put the last retry minutes out."""
    from exports.core.config.limits import Limits

    shortest = [retry_delay_sec(n, random=lambda: 0.0) for n in range(TASK_RETRY.retries)]
    longest = [retry_delay_sec(n, random=lambda: ALMOST_ONE) for n in range(TASK_RETRY.retries)]
    assert sum(shortest) >= 150 and sum(longest) <= Limits.TIMEOUT_SEC_DEFAULT + 30


@pytest.mark.parametrize(
    ("age_sec", "expected"),
    [
        (0, 1),
        (0.5, 1),
        (1.9, 1),
        (2, 2),
        (3.9, 2),
        (4, 4),
        (8, 8),
        (16, 16),
        (31, 16),
        (32, 30),
        (600, 30),
        (86_400, 30),
    ],
)
def test_poll_after_starts_at_one_second_and_doubles_with_age_up_to_30(age_sec, expected):
    assert poll_after_sec(NOW, NOW + timedelta(seconds=age_sec)) == expected


def test_poll_after_limits_come_from_config():
    assert poll_after_sec(NOW, NOW) == Polling.MIN_DELAY_SEC == 1
    assert poll_after_sec(NOW, NOW + timedelta(days=3)) == Polling.MAX_DELAY_SEC == 30


def test_poll_after_with_a_clock_behind_creation_is_one_second():
    assert poll_after_sec(NOW, NOW - timedelta(seconds=10)) == 1


def test_poll_after_never_shrinks_as_the_task_ages():
    advice = [poll_after_sec(NOW, NOW + timedelta(seconds=half / 2)) for half in range(0, 241)]
    assert advice == sorted(advice)
