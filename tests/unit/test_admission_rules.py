"""The pure admission rules: dedup keys, lanes, token buckets, throughput and estimates."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from exports.config.limits import Capacity
from exports.config.queues import LANES
from exports.domain.admission import (
    Bucket,
    Throughput,
    date_span_days,
    dedup_key,
    expected_task_rows,
    lane_for,
    take_token,
    updated_throughput,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_dedup_key_ignores_key_order_and_separates_everything_else() -> None:
    base = dedup_key("alice", "orders", "csv", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, False)
    assert base == dedup_key("alice", "orders", "csv", {"date_to": "2025-01-31", "date_from": "2025-01-01"}, False)
    others = {
        dedup_key("bob", "orders", "csv", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, False),
        dedup_key("alice", "customers", "csv", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, False),
        dedup_key("alice", "orders", "xlsx", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, False),
        dedup_key("alice", "orders", "csv", {"date_from": "2025-01-02", "date_to": "2025-01-31"}, False),
        dedup_key("alice", "orders", "csv", {"date_from": "2025-01-01", "date_to": "2025-01-31"}, True),
    }
    assert base not in others and len(others) == 5


@pytest.mark.parametrize(
    ("priority", "lane"), [(1, "high"), (3, "high"), (4, "normal"), (7, "normal"), (8, "low"), (10, "low")]
)
def test_every_priority_has_exactly_one_lane(priority: int, lane: str) -> None:
    assert lane_for(priority).name == lane


def test_lanes_cover_one_to_ten_and_share_the_global_worker_limit() -> None:
    covered = [p for lane in LANES for p in range(lane.highest, lane.lowest + 1)]
    assert sorted(covered) == list(range(1, 11))
    assert sum(lane.max_concurrency for lane in LANES) == Capacity.WORKER_MAX_CONCURRENCY
    assert all(lane.max_concurrency >= 2 for lane in LANES)  # SQS event sources accept 2..1000
    with pytest.raises(ValueError, match="priority 11"):
        lane_for(11)


def test_a_new_bucket_allows_a_burst_then_refills_at_the_rate() -> None:
    bucket = None
    for _ in range(3):
        allowed, bucket, wait = take_token(bucket, NOW, rate_per_sec=0.5, burst=3)
        assert (allowed, wait) == (True, 0.0)
    allowed, bucket, wait = take_token(bucket, NOW, rate_per_sec=0.5, burst=3)
    assert (allowed, wait) == (False, 2.0)  # one token takes 2 s at 0.5/s
    allowed, _, _ = take_token(bucket, NOW + timedelta(seconds=2), rate_per_sec=0.5, burst=3)
    assert allowed


def test_a_bucket_never_holds_more_than_its_burst() -> None:
    idle = Bucket(tokens=0, updated_at=NOW - timedelta(days=1))
    allowed, after, _ = take_token(idle, NOW, rate_per_sec=10, burst=4)
    assert allowed and after.tokens == 3


def test_throughput_starts_from_the_first_run_then_moves_smoothly() -> None:
    first = updated_throughput(None, rows=1000, seconds=10, smoothing=0.3, days=10)
    assert first == Throughput(
        rows_per_sec=100, task_sec=10, rows_per_task=1000, rows_squared=1e6, rows_times_sec=1e4, rows_per_day=100
    )
    second = updated_throughput(first, rows=4000, seconds=10, smoothing=0.3)
    assert second.rows_per_sec == pytest.approx(0.3 * 400 + 0.7 * 100)
    assert second.rows_per_task == pytest.approx(0.3 * 4000 + 0.7 * 1000)
    assert second.rows_per_day == 100  # that run had no date range: the average stays


def test_runs_of_different_sizes_separate_the_start_up_from_the_time_per_row() -> None:
    # Runs take 2 s plus 1 ms per row: the fit finds both, so a small and a large task differ.
    measured = None
    for rows in [100, 10_000, 500, 8_000, 2_000, 100, 10_000]:
        measured = updated_throughput(measured, rows=rows, seconds=2 + rows / 1000, smoothing=0.3)
    assert measured is not None
    assert measured.run_sec(0) == pytest.approx(2, abs=0.01)
    assert measured.run_sec(20_000) == pytest.approx(22, abs=0.01)


def test_runs_of_one_size_scale_with_rows() -> None:
    measured = Throughput(rows_per_sec=200, task_sec=6, rows_per_task=1000)  # statistics of old
    assert measured.run_sec(1000) == 6
    assert measured.run_sec(4000) == 24


def test_small_runs_whose_time_does_not_grow_with_rows_estimate_their_mean_run() -> None:
    # A burst of one-day exports: most days empty, the others ~180 rows, every run 0.3-1.7 s
    # whatever its rows (the start-up is the run). A streak of empty runs must not make the next
    # 131-row export look a hundred times longer than any run was (it was not begun for that).
    rng = random.Random(0)
    measured = None
    worst = 0.0
    for _ in range(600):
        rows = 0 if rng.random() < 0.7 else rng.randint(150, 210)
        measured = updated_throughput(measured, rows=rows, seconds=rng.uniform(0.3, 1.7), smoothing=0.1, days=1)
        worst = max(worst, measured.run_sec(131))
    assert worst < 2 * 1.7


def test_runs_of_different_sizes_that_took_no_longer_for_their_rows_estimate_the_mean_run() -> None:
    measured = None
    for rows, seconds in [(0, 1.0), (200, 0.8), (0, 1.2), (180, 0.9)]:
        measured = updated_throughput(measured, rows=rows, seconds=seconds, smoothing=0.5)
    assert measured is not None
    assert measured.run_sec(5_000) == measured.task_sec


def test_empty_runs_measure_no_rows_cost_so_estimate_their_mean_run() -> None:
    measured = Throughput(rows_per_sec=0, task_sec=0.8, rows_per_task=0, rows_squared=0, rows_times_sec=0)
    assert measured.run_sec(131) == 0.8


def test_a_tasks_size_comes_from_its_type_then_its_date_range_then_the_mean() -> None:
    measured = Throughput(rows_per_sec=100, task_sec=10, rows_per_task=1000, rows_per_day=50)
    assert expected_task_rows(measured, known_rows=7, span_days=30) == 7
    assert expected_task_rows(measured, known_rows=None, span_days=30) == 1500
    assert expected_task_rows(measured, known_rows=None, span_days=None) == 1000
    assert date_span_days({"date_from": "2025-01-01", "date_to": "2025-01-31", "status": "paid"}) == 31
    assert date_span_days({"date_from": "2025-01-01"}) is None
    assert date_span_days({"a": "2025-01-01", "b": "2025-01-02", "c": "2025-01-03"}) is None
