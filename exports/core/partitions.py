"""How one export is split into partitions (pure: no I/O). See docs/fan-out.md.

An export expected to have more than ``rows_per_partition`` rows is split into
``min(ceil(rows / rows_per_partition), max_partitions)`` partitions, each a contiguous run of
the rows in the file's order: a keyset range of the order key (SQL types) or a run of days of
the export's date range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any


def partition_count(rows: int, rows_per_partition: int, max_partitions: int) -> int:
    """How many partitions an export of ``rows`` rows is written in (1: not split)."""
    if rows_per_partition < 1 or max_partitions < 1:
        raise ValueError("rows_per_partition and max_partitions must be positive")
    return max(1, min(math.ceil(rows / rows_per_partition), max_partitions))


@dataclass(frozen=True)
class PartitionSpec:
    """One partition's rows, as JSON-ready values: a keyset range (after ``after``, exclusive,
    up to ``until``, inclusive; None: open) or the filters that replace the export's (a run of
    days), and its row count at planning time."""

    rows: int
    after: Sequence[Any] | None = None
    until: Sequence[Any] | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The spec as it is staged in the plan."""
        return {"rows": self.rows, "after": self.after, "until": self.until, "filters": dict(self.filters)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionSpec:
        """A spec read back from the plan."""
        return cls(data["rows"], data.get("after"), data.get("until"), data.get("filters") or {})


def keyset_ranges(boundaries: Sequence[tuple[Sequence[Any], int]]) -> list[PartitionSpec]:
    """Keyset ranges from the boundaries (the key of a range's last row, and that row's number
    in key order, 1-based, ascending); the last boundary is the last row's."""
    specs = []
    after: Sequence[Any] | None = None
    before = 0
    for key, number in boundaries:
        specs.append(PartitionSpec(number - before, after, list(key)))
        after, before = list(key), number
    return specs


def day_runs(start: date, end: date, runs: int) -> list[tuple[date, date]]:
    """``start``..``end`` (inclusive) cut into at most ``runs`` consecutive runs of whole days,
    as even as whole days allow."""
    days = (end - start).days + 1
    count = max(1, min(runs, days))
    cuts = [start + timedelta(days=days * index // count) for index in range(count + 1)]
    return [(cuts[index], cuts[index + 1] - timedelta(days=1)) for index in range(count)]


def group_runs(counts: Sequence[int], groups: int) -> list[range]:
    """Consecutive runs of ``counts`` (indexes) in at most ``groups`` groups of about equal sums:
    a group ends where the rows so far, with half the next run's, reach its share of the total."""
    total = sum(counts)
    groups = max(1, min(groups, len(counts)))
    result: list[range] = []
    start = 0
    so_far = 0
    for index, count in enumerate(counts):
        so_far += count
        if (
            len(result) < groups - 1
            and index + 1 < len(counts)
            and (2 * so_far + counts[index + 1]) * groups >= 2 * total * (len(result) + 1)
        ):
            result.append(range(start, index + 1))
            start = index + 1
    result.append(range(start, len(counts)))
    return result
