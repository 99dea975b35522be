"""``make bench``'s machinery at a tiny size, so that it does not rot: the goals printed as
defined, a PostgreSQL case and its peers (plain COPY, DuckDB's postgres scanner in its own
interpreter), a rows → file case and its peer (orjson), the rounds' load, each goal's ratio and
verdict, and the memory table; and the verdict rules on given results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import goals
from bench.__main__ import verdict
from bench.goals import GOALS

ROOT = Path(__file__).resolve().parents[2]
CASES = ("pg_copy", "pg_csv", "pg_duckdb_parquet", "pg_parquet", "mixed_orjson_jsonl", "mixed_jsonl")
VERDICTS = ("MET", "MISSED", "not a result (load")


def test_a_tiny_bench_prints_every_goal_of_its_cases_with_a_ratio_and_a_verdict(tmp_path):
    results = tmp_path / "results.json"
    command = [sys.executable, "-m", "bench", "--sizes", "1000,2000", "--rounds", "1", "--cases", ",".join(CASES)]
    done = subprocess.run(
        [*command, "--json", str(results)], cwd=ROOT, capture_output=True, text=True, check=False, timeout=240
    )

    # Goals unmet at this size (or taken on a loaded machine) fail the run, nothing else does.
    assert done.returncode in (0, 1), done.stderr
    out = done.stdout.splitlines()
    assert out[: len(goals.goal_table())] == goals.goal_table()
    rows = {(cells[1], cells[4]): cells for line in out if len(cells := [c.strip() for c in line.split("|")]) == 9}
    for work in ("PostgreSQL → CSV", "PostgreSQL → Parquet", "JSONL (rows → file)"):
        assert rows[(work, "1,000")][7] == "shown"
        assert rows[(work, "2,000")][7].startswith(VERDICTS)
    assert "x total CPU, " in rows[("PostgreSQL → CSV", "2,000")][5]
    assert "x its file" in rows[("PostgreSQL → Parquet", "2,000")][5]
    memory = {cells[1]: cells[6] for line in out if len(cells := [c.strip() for c in line.split("|")]) == 8}
    assert memory["pg_parquet"] in ("MET", "MISSED") and memory["mixed_jsonl"] in ("MET", "MISSED")
    assert memory["pg_copy"] == ""  # a peer's memory is shown, not checked
    written = json.loads(results.read_text())
    assert [(load["rows"], load["round"]) for load in written["loads"]] == [(1_000, 1), (2_000, 1)]
    kept = written["results"]
    assert {(result["case"], result["rows"]) for result in kept} == {(c, n) for c in CASES for n in (1_000, 2_000)}
    duckdb = next(r for r in kept if r["case"] == "pg_duckdb_parquet" and r["rows"] == 2_000)
    assert duckdb["bytes"] > 0 and duckdb["server_cpu_seconds"] >= 0
    # A case's peak RSS is its own: the bench's process stays small (a child's ru_maxrss starts
    # from its parent's RSS), so the 2,000-row JSONL run, after the 1,000-row PostgreSQL cases,
    # peaks where the 1,000-row one did.
    jsonl = {r["rows"]: r["peak_rss_mib"] for r in kept if r["case"] == "mixed_jsonl"}
    assert jsonl[2_000] <= 1.1 * jsonl[1_000]


def _runs(
    ours: dict[str, Any], theirs: dict[str, Any], goal: goals.Goal
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    return {(goal.case, 10): [ours], (goal.peer, 10): [theirs]}


def _result(
    cpu: float, server: float = 0.0, seconds: float = 1.0, size: int = 100, load: float = 0.5
) -> dict[str, Any]:
    return {"cpu_seconds": cpu, "server_cpu_seconds": server, "seconds": seconds, "bytes": size, "load": load}


@pytest.mark.parametrize(
    ("ours", "expected"),
    [
        (_result(cpu=1.0, server=1.2, seconds=1.1), "MET"),
        # Within the goal in CPU, not in wall time: both measures count.
        (_result(cpu=1.0, server=1.2, seconds=1.2), "MISSED"),
        (_result(cpu=1.0, server=1.4, seconds=1.0), "MISSED"),
        (
            _result(cpu=1.0, server=1.0, seconds=1.0, load=goals.CORES + 0.5),
            f"not a result (load {goals.CORES + 0.5:.2f})",
        ),
    ],
)
def test_a_goal_is_met_in_every_measure_at_a_load_within_the_cores(ours, expected):
    goal = next(goal for goal in GOALS if goal.case == "pg_csv")  # total CPU and wall, at most 1.15x
    peer = _result(cpu=0.5, server=1.5, seconds=1.0)

    ratios, said = verdict(goal, _runs(ours, peer, goal), 10, checked=True)

    assert said == expected
    assert ratios.endswith("x wall")


def test_a_goal_with_a_file_size_is_missed_by_a_larger_file():
    goal = next(goal for goal in GOALS if goal.case == "pg_parquet")

    ratios, said = verdict(goal, _runs(_result(cpu=1.0, size=101), _result(cpu=1.0), goal), 10, checked=True)

    assert (ratios, said) == ("1.00x total CPU, 1.01x its file", "MISSED")
