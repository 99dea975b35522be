"""exportctl's ETA (exports_client.eta.Pace) on the progress of a recorded 3,000,000-row CSV
export: within 25 % of the time actually left from the first tenth of its rows on. The console's
clients/console/test/unit/pace.test.ts runs the same cases on its Pace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from exports_client.eta import Pace

# Recorded on the local stack (docs/console.md, "The export console" says how): the states a client polling
# every 0.5 s saw, in seconds from the submit.
RECORDED = json.loads((Path(__file__).with_name("progress_3m_csv.json")).read_text())


def misses(pace: Pace, series: list[dict[str, Any]]) -> list[tuple[float, int | None, float]]:
    """(when, shown, actually left) of each running state from the first tenth of the rows on
    whose ETA is missing or off by more than 25 % (a second at least). A pace needs two
    percentages: counted from the first state past the first percentage with a row read (the
    worker writes one every 2 s)."""
    end = next(state["at"] for state in series if state["status"] == "COMPLETED")
    first = next(state["progress"] for state in series if state["progress"] > 0 or state["rows_written"] > 0)
    found = []
    for state in series:
        shown = pace.seconds_left(state["status"] == "RUNNING", state["progress"], state["rows_written"], state["at"])
        actual = end - state["at"]
        counted = state["status"] == "RUNNING" and state["progress"] >= max(10, first + 1)
        if counted and (shown is None or abs(shown - actual) > max(1.0, 0.25 * actual)):
            found.append((state["at"], shown, actual))
    return found


def test_the_recorded_exports_eta_is_within_a_quarter_from_the_first_tenth_on():
    assert misses(Pace(), RECORDED["series"]) == []


def test_without_the_files_finishing_the_recorded_exports_eta_reads_short_at_the_end():
    missed = misses(Pace(finish_sec_per_row=0.0), RECORDED["series"])

    assert missed, "the recording shows no finishing: it cannot test the finishing term"
    assert all(shown is not None and shown < actual for _, shown, actual in missed)


def synthetic(second: int) -> int:
    """The issue's export on a made-up clock: 0 % for 26 s (PostgreSQL sorting), rows at an even
    pace for 7 s, then 2 s finishing the file at 99 %; done at 35 s."""
    return 0 if second <= 26 else min(99, (second - 26) * 100 // 7)


def test_the_eta_is_paced_from_the_first_row_read_polled_or_pushed():
    for pushed in (False, True):
        # Polled: a state every second. Pushed: only on a change (0 % at the start, then each second).
        series: list[dict[str, Any]] = [
            {"at": float(s), "status": "RUNNING", "progress": synthetic(s), "rows_written": synthetic(s) * 30_000}
            for s in range(35)
            if not (pushed and 0 < s <= 26)
        ] + [{"at": 35.0, "status": "COMPLETED", "progress": 100, "rows_written": 3_000_000}]
        pace = Pace()
        shown = [pace.seconds_left(True, state["progress"], state["rows_written"], state["at"]) for state in series]
        # No ETA before a pace of rows read (the first row is read at 27 s), then within a quarter.
        assert all(left is None for left, state in zip(shown, series, strict=True) if state["at"] <= 27)
        assert misses(Pace(), series) == [], pushed


def test_a_task_first_seen_part_way_is_paced_from_there_and_a_retry_starts_over():
    pace = Pace(finish_sec_per_row=0.0)
    assert pace.seconds_left(True, 40, 1_200_000, 0.0) is None
    assert pace.seconds_left(True, 50, 1_500_000, 10.0) == 50
    assert pace.seconds_left(True, 50, 1_500_000, 12.0) == 48  # polled again: counts down
    assert pace.seconds_left(False, 0, 0, 13.0) is None
    assert pace.seconds_left(True, 0, 0, 14.0) is None
    assert pace.seconds_left(True, 10, 300_000, 16.0) is None
    assert pace.seconds_left(True, 20, 600_000, 18.0) == 16


def test_the_finishing_term_is_in_proportion_to_the_rows_expected():
    pace = Pace(finish_sec_per_row=1e-6)
    pace.seconds_left(True, 10, 300_000, 0.0)

    # 10 %/s: 5 s of rows left, and 3,000,000 rows expected (1,500,000 at 50 %) finish in 3 s.
    assert pace.seconds_left(True, 50, 1_500_000, 4.0) == 8
