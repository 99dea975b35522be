"""How exports split into partitions: counts, keyset ranges, runs of days (pure)."""

from datetime import date

import pytest
from pydantic import ValidationError

from exports.core.config.env import Env
from exports.core.config.fan_out import FanOut
from exports.core.config.settings import WorkerSettings
from exports.core.partitions import (
    PartitionSpec,
    day_runs,
    group_runs,
    keyset_ranges,
    partition_count,
)
from tests.unit.running.test_export_run_xlsx import ENVIRONMENT


@pytest.mark.parametrize(
    ("rows", "size", "most", "expected"),
    [
        (0, 10, 4, 1),
        (10, 10, 4, 1),
        (11, 10, 4, 2),
        (35, 10, 4, 4),
        (1000, 10, 4, 4),
        (100_000_000, 10_000_000, 50, 10),
    ],
)
def test_an_export_splits_in_one_partition_per_size_up_to_the_limit(
    rows: int, size: int, most: int, expected: int
) -> None:
    assert partition_count(rows, size, most) == expected


def test_keyset_ranges_run_from_boundary_to_boundary_with_their_counts() -> None:
    specs = keyset_ranges([((3, "a"), 10), ((5, "b"), 20), ((9, "z"), 25)])

    assert [(spec.rows, spec.after, spec.until) for spec in specs] == [
        (10, None, [3, "a"]),
        (10, [3, "a"], [5, "b"]),
        (5, [5, "b"], [9, "z"]),
    ]
    assert keyset_ranges([]) == []
    assert PartitionSpec.from_json(specs[1].to_json()) == specs[1]


def test_days_are_cut_in_even_runs_that_cover_the_range_once() -> None:
    runs = day_runs(date(2025, 1, 1), date(2025, 1, 10), 3)

    assert runs == [
        (date(2025, 1, 1), date(2025, 1, 3)),
        (date(2025, 1, 4), date(2025, 1, 6)),
        (date(2025, 1, 7), date(2025, 1, 10)),
    ]
    assert day_runs(date(2025, 1, 1), date(2025, 1, 2), 10) == [
        (date(2025, 1, 1), date(2025, 1, 1)),
        (date(2025, 1, 2), date(2025, 1, 2)),
    ]


@pytest.mark.parametrize(
    ("counts", "groups", "expected"),
    [
        ([5, 5, 5, 5], 2, [[0, 1], [2, 3]]),
        ([1, 1, 1, 9], 2, [[0, 1, 2], [3]]),
        ([9, 0, 0, 1], 2, [[0], [1, 2, 3]]),
        ([3, 3], 5, [[0], [1]]),
        ([0, 0, 0], 2, [[0], [1, 2]]),
        ([7], 1, [[0]]),
    ],
)
def test_runs_of_days_group_in_partitions_of_about_equal_rows(
    counts: list[int], groups: int, expected: list[list[int]]
) -> None:
    result = group_runs(counts, groups)

    assert [list(group) for group in result] == expected
    assert [index for group in result for index in group] == list(range(len(counts)))


def test_the_rows_per_partition_are_a_setting_of_the_deployment() -> None:
    assert WorkerSettings.from_env(ENVIRONMENT).partition_rows == FanOut.PARTITION_ROWS
    assert WorkerSettings.from_env({**ENVIRONMENT, Env.PARTITION_ROWS: "1250000"}).partition_rows == 1_250_000
    with pytest.raises(ValidationError):
        WorkerSettings.from_env({**ENVIRONMENT, Env.PARTITION_ROWS: "0"})
