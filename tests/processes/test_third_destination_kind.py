"""A destination kind is one module and its registry line (docs/how-to/add-a-destination-kind.md):
a third kind, registered by the test alone in a fresh interpreter (the resource's models are
built from the registry when they are imported), is created, shown, changed, verified and
delivered to by the shipped models and service."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_a_third_kind_registered_alone_works_end_to_end() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "tests.processes.third_kind.scenario"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "ok"
