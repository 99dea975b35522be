"""The same rows make the same PDF, byte for byte: whatever second the font subset is saved in,
and whatever string hashing the process has (the order characters get their CIDs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exports.core.task import ExportFormat
from tests.unit.running.writers.test_zones import export

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import sys, hashlib; sys.path.insert(0, sys.argv[1]);"
    "from tests.unit.running.writers.test_zones import export; from exports.core.task import ExportFormat;"
    "print(hashlib.sha256(export(ExportFormat.PDF, 'Etc/UTC')).hexdigest())"
)


def test_the_font_subset_does_not_carry_the_second_it_was_saved_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from fontTools.ttLib.tables import _h_e_a_d

    first = export(ExportFormat.PDF, "Etc/UTC")
    monkeypatch.setattr(_h_e_a_d, "timestampNow", lambda: 3_900_000_000)  # another second, years later
    assert export(ExportFormat.PDF, "Etc/UTC") == first


def test_two_processes_with_other_string_hashing_write_the_same_pdf() -> None:
    digests = {
        subprocess.run(
            [sys.executable, "-c", PROBE, str(ROOT)],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1
