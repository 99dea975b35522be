"""Running one measurement in a fresh interpreter: timings and peak RSS of one case do not mix
with another's. Standard library only: the DuckDB peer's interpreter (``.venv-duckdb``) runs it too."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]


def run_child(
    module: str, arguments: list[str], env: dict[str, str] | None, what: str, python: str = sys.executable
) -> dict[str, Any]:
    """``python -m module *arguments`` from the repository; its last output line, as JSON.
    A child that fails stops the benchmark with ``what`` and the child's error output."""
    done = subprocess.run(
        [python, "-m", module, *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(case: str, rows: int, run: Callable[[], int]) -> dict[str, Any]:
    """Run ``run`` (which returns the bytes it wrote) once in this process: its wall seconds,
    this process's CPU seconds (user + system, every thread, and those of the programs it ran:
    a peer that is a client program; not a database server's), the process's peak RSS so far
    and the bytes."""
    before = _cpu_seconds()
    started = time.perf_counter()
    size = run()
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "case": case,
        "rows": rows,
        "seconds": seconds,
        "cpu_seconds": _cpu_seconds() - before,
        "peak_rss_mib": after.ru_maxrss / 1024,
        "bytes": size,
    }
