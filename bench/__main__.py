"""``make bench``: our export pipelines and writers next to their peers, in the same run, with
every goal of :mod:`bench.goals` printed against its ratio.

Each case runs alone in a fresh process (``python -m bench.cases``; the DuckDB peer in
``.venv-duckdb``'s interpreter, ``bench/duckdb_peer.py``), so one case's memory does not count
for the next and peak RSS is that case's own. Cases run in rounds (every case once per round, in
the same order, interleaved); for each measure (wall seconds, the case process's CPU seconds,
with the PostgreSQL backends' CPU added for "total CPU") the least of the rounds is kept: the
machine may be shared, and the least disturbed round is the one that took least. The 1-minute
load average is read before and after each round; a ratio whose rounds ran at a load above the
core count is printed as "not a result".

Prints: the goals as defined; per case and size the kept measures; the rounds' load; each goal's
ratios at every size, MET or MISSED at the largest; peak RSS at the largest size against the
smallest. Then the fan-out case (:mod:`bench.fan_out`) and the cold-start case
(:mod:`bench.cold_start`: each handler's import as packaged against the stack's floor).

Cases: ``gen``, ``bare_*`` and the generated-orders pipelines (``bench/cases.py``), ``mixed_*``
(``bench/mixed.py``), ``pg_*`` (``bench/postgres.py``), ``my_*`` (``bench/mysql.py``: ``--cases
my_csv,my_client`` runs the MySQL goal alone), ``fan_out``, ``cold_start``; by default
the goals' cases and peers, ``pdf``, ``csv.gz`` and ``jsonl.gz`` (their memory), fan-out and cold
start. Options: ``--sizes 100000,1000000`` ``--rounds 3`` ``--json results.json``
``--cases pg_copy,pg_csv`` (any of the cases above).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import goals, mixed, mysql, postgres
from bench.child import run_child
from bench.goals import GOALS, Goal, Measure

COLD_START = "cold_start"
FAN_OUT = "fan_out"
ORDER = (
    "gen",
    "bare_csv",
    "csv",
    "bare_csv_gz",
    "csv.gz",
    "bare_xlsx",
    "xlsx_openpyxl",
    "bare_xlsx_stream",
    "xlsx",
    "pdf",
    "jsonl",
    "jsonl.gz",
    "parquet",
    *mixed.CASES,
    *postgres.CASES,
    *mysql.CASES,
)
# The goals of issues 34 and 47 (their cases and peers), and the formats whose memory only a pipeline
# case shows.
DEFAULT_CASES = (
    *{name: None for goal in GOALS if goal.issue in ("34", "47") for name in (goal.peer, goal.case)},
    "pdf",
    "csv.gz",
    "jsonl.gz",
)
# How long a PostgreSQL case's backends get to exit after its process, before the server's CPU
# is read.
SERVER_SETTLE_SEC = 0.5
MEASURES: dict[Measure, Callable[[dict[str, Any]], float]] = {
    Measure.WALL: lambda result: float(result["seconds"]),
    Measure.CPU: lambda result: float(result["cpu_seconds"]),
    Measure.TOTAL_CPU: lambda result: float(result["cpu_seconds"] + result.get("server_cpu_seconds", 0.0)),
}
Runs = dict[tuple[str, int], list[dict[str, Any]]]
# The database servers of the cases that read one (PostgreSQL's, MariaDB's).
Servers = postgres.BenchDatabases | mysql.BenchMariaDB


def run_case(case: str, rows: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one case in a fresh process (with ``env``, else this one's); its JSON result."""
    what = f"case {case} at {rows} rows"
    with tempfile.TemporaryDirectory(prefix="exports-bench-") as folder:
        if case == postgres.DUCKDB_PEER:
            if not postgres.DUCKDB_PYTHON.exists():
                raise SystemExit(f"{what}: no {postgres.DUCKDB_PYTHON} (make .venv-duckdb/.installed-stamp builds it)")
            # Built in a child too: this process stays small, as a child's ru_maxrss starts from
            # its parent's RSS (Linux keeps the high-water mark across fork and exec).
            statement = run_child("bench.postgres", [], env, "the DuckDB peer's statement")["statement"]
            arguments = [str(rows), folder, statement]
            return run_child("bench.duckdb_peer", arguments, env, what, python=str(postgres.DUCKDB_PYTHON))
        return run_child("bench.cases", [case, str(rows), folder], env, what)


def measure(sizes: list[int], rounds: int, cases: tuple[str, ...]) -> tuple[Runs, list[dict[str, Any]]]:
    """Every case at every size, ``rounds`` times, interleaved: every round's result of each,
    and each round's load. The PostgreSQL cases share one embedded server, loaded with each
    size's orders before it."""
    with contextlib.ExitStack() as stack:
        servers: list[Servers] = []
        if set(cases) & set(postgres.CASES):
            servers.append(stack.enter_context(postgres.BenchDatabases()))
        if set(cases) & set(mysql.CASES):
            servers.append(stack.enter_context(mysql.BenchMariaDB()))
        return _measure(sizes, rounds, cases, servers)


def _measure(
    sizes: list[int], rounds: int, cases: tuple[str, ...], servers: list[Servers]
) -> tuple[Runs, list[dict[str, Any]]]:
    runs: Runs = {}
    loads: list[dict[str, Any]] = []
    for size in sizes:
        for server in servers:
            server.environ(size)  # loaded before the round, not in a case's time
        for round_number in range(1, rounds + 1):
            before = os.getloadavg()[0]
            done = []
            for case in cases:
                databases = next((server for server in servers if case in server.cases), None)
                env = databases.environ(size) if databases is not None else None
                result = _run_measured(case, size, env, databases)
                print(
                    f"  round {round_number}  {case:<19} {size:>9,} rows  {result['seconds']:7.2f} s"
                    f"  cpu {result['cpu_seconds']:7.2f} s  server cpu {result.get('server_cpu_seconds', 0):6.2f} s"
                    f"  {result['peak_rss_mib']:6.1f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
                runs.setdefault((case, size), []).append(result)
                done.append(result)
            after = os.getloadavg()[0]
            loads.append({"rows": size, "round": round_number, "before": before, "after": after})
            print(f"  round {round_number} at {size:,} rows: load {before:.2f} -> {after:.2f}", file=sys.stderr)
            for result in done:
                result["load"] = max(before, after)
    return runs, loads


def _run_measured(case: str, size: int, env: dict[str, str] | None, databases: Servers | None) -> dict[str, Any]:
    """One case; a database case also with the CPU its server took."""
    if databases is None:
        return run_case(case, size)
    before = databases.server_cpu_seconds()
    result = run_case(case, size, env)
    # The case's backends exit when its process does; the postmaster reaps them at once.
    time.sleep(SERVER_SETTLE_SEC)
    return {**result, "server_cpu_seconds": databases.server_cpu_seconds() - before}


def kept(runs: Runs, case: str, size: int, how: Measure) -> dict[str, Any]:
    """The round of ``case`` at ``size`` that took least by ``how``."""
    return min(runs[(case, size)], key=MEASURES[how])


def verdict(goal: Goal, runs: Runs, size: int, checked: bool) -> tuple[str, str]:
    """The goal's ratios at ``size`` (one per measure, and the file's) and its verdict: MET,
    MISSED, "not a result (load X)" when a kept round ran above the core count, or "shown"
    where it is not ``checked``."""
    shown, met, load = [], True, 0.0
    for how in goal.measures:
        ours, theirs = kept(runs, goal.case, size, how), kept(runs, goal.peer, size, how)
        ratio = MEASURES[how](ours) / MEASURES[how](theirs)
        shown.append(f"{ratio:.2f}x {how}")
        met &= ratio <= goal.most
        load = max(load, ours["load"], theirs["load"])
    if goal.file_no_larger:
        ratio = runs[(goal.case, size)][0]["bytes"] / runs[(goal.peer, size)][0]["bytes"]
        shown.append(f"{ratio:.2f}x its file")
        met &= ratio <= 1.0
    if not checked:
        return ", ".join(shown), "shown"
    if load > goals.CORES:
        return ", ".join(shown), f"not a result (load {load:.2f})"
    return ", ".join(shown), "MET" if met else "MISSED"


def report(runs: Runs, loads: list[dict[str, Any]], sizes: list[int], cases: tuple[str, ...]) -> bool:
    """Print the tables; whether every goal that ran is met (at a load that makes it a result)."""
    print()
    print("| case | rows | wall s | CPU s | server CPU s | total CPU s | peak RSS MiB | file MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        for case in cases:
            wall, cpu, total = (MEASURES[how](kept(runs, case, size, how)) for how in MEASURES)
            server = f"{total - cpu:.2f}" if case in (*postgres.CASES, *mysql.CASES) else ""
            result = runs[(case, size)][0]
            rss = min(run["peak_rss_mib"] for run in runs[(case, size)])
            print(
                f"| {case} | {size:,} | {wall:.2f} | {cpu:.2f} | {server} | {total:.2f} | {rss:.1f} |"
                f" {result['bytes'] / 2**20:.1f} |"
            )
    print()
    print(f"Load average (1 min) per round, {goals.CORES} cores:")
    print()
    print("| rows | round | load before | load after |")
    print("| ---: | ---: | ---: | ---: |")
    for load in loads:
        print(f"| {load['rows']:,} | {load['round']} | {load['before']:.2f} | {load['after']:.2f} |")
    passed = True
    largest = max(sizes)
    print()
    print(f"Goals (checked at {largest:,} rows, the run's largest; each measure's least round kept):")
    print()
    print("| work | our case | peer | rows | ratio | goal | verdict |")
    print("| --- | --- | --- | ---: | --- | --- | --- |")
    for goal in GOALS:
        if goal.case not in cases or goal.peer not in cases:
            continue
        for size in sizes:
            ratios, said = verdict(goal, runs, size, size == largest)
            passed &= said in ("MET", "shown")
            print(f"| {goal.work} | {goal.case} | {goal.peer} | {size:,} | {ratios} | {goal.limit()} | {said} |")
    if len(sizes) > 1:
        passed &= _memory(runs, sizes, cases)
    print()
    print("every goal met" if passed else "GOALS NOT MET (see the verdicts above)")
    return passed


def _memory(runs: Runs, sizes: list[int], cases: tuple[str, ...]) -> bool:
    small, large = min(sizes), max(sizes)
    passed = True
    print()
    print(f"| case | peak RSS MiB at {small:,} | at {large:,} | ratio | goal | verdict |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for case in cases:
        low = min(run["peak_rss_mib"] for run in runs[(case, small)])
        high = min(run["peak_rss_mib"] for run in runs[(case, large)])
        checked = case in goals.RSS_CHECKED
        said = ("MET" if high / low <= goals.RSS_LIMIT else "MISSED") if checked else ""
        passed &= said != "MISSED"
        limit = f"<= {goals.RSS_LIMIT:.2f}x" if checked else ""
        print(f"| {case} | {low:.1f} | {high:.1f} | {high / low:.2f}x | {limit} | {said} |")
    return passed


def main() -> None:
    """Parse the options, print the goals, measure, print the results."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="row counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of every case; the least counts")
    parser.add_argument("--json", type=Path, help="also write every round's results and the loads here")
    parser.add_argument(
        "--cases", default=",".join((*DEFAULT_CASES, FAN_OUT, COLD_START)), help="cases to run, comma-separated"
    )
    parser.add_argument("--fan-out-rows", type=int, default=5_000_000, help="rows of the fan-out case's export")
    parser.add_argument("--cold-start-rounds", type=int, default=5, help="samples per cold-start measurement")
    options = parser.parse_args()
    sizes = [int(size) for size in options.sizes.split(",")]
    chosen = options.cases.split(",")
    unknown = set(chosen) - {*ORDER, FAN_OUT, COLD_START}
    if unknown:
        parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
    cases = tuple(case for case in ORDER if case in chosen)
    print("\n".join(goals.goal_table()))
    passed = True
    if cases:
        runs, loads = measure(sizes, options.rounds, cases)
        passed = report(runs, loads, sizes, cases)
        if options.json:
            dump = {"results": [run for results in runs.values() for run in results], "loads": loads}
            options.json.write_text(json.dumps(dump, indent=2) + "\n", encoding="utf-8")
    if FAN_OUT in chosen:
        from bench import fan_out

        fan_out.report(fan_out.measure(options.fan_out_rows))
    if COLD_START in chosen:
        from bench import cold_start

        passed &= cold_start.report(cold_start.measure(options.cold_start_rounds), options.cold_start_rounds)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
