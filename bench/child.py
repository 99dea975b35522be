"""Running one measurement in a fresh interpreter: timings and peak RSS of one case do not mix
with another's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]


def run_child(module: str, arguments: list[str], env: dict[str, str] | None, what: str) -> dict[str, Any]:
    """``python -m module *arguments`` from the repository; its last output line, as JSON.
    A child that fails stops the benchmark with ``what`` and the child's error output."""
    done = subprocess.run(
        [sys.executable, "-m", module, *arguments],
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
