"""The formats' registry (issue 35): a format is one module, ``exports/running/formats/<member>.py``, and
one registration, its :class:`ExportFormat` member; callers ask its spec and never branch on
the member; a worker loads the module of a format on its first export of it."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exports.core.task import ExportFormat
from exports.running.formats import registry
from exports.running.formats.registry import every_format, format_module, format_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
# A format compared with a member, or a table keyed by members: what a spec says instead.
BRANCH_ON_A_FORMAT = re.compile(r"(?:\bis\s+|==\s*)ExportFormat\.|ExportFormat\.\w+\s*:")


def test_every_member_has_its_module_whose_spec_is_of_that_format() -> None:
    for export_format, spec in every_format().items():
        assert spec.format is export_format
        assert importlib.import_module(format_module(export_format)).SPEC is spec
        assert spec.extension and spec.content_type


def test_a_module_without_the_members_spec_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    find = format_spec.__wrapped__  # the lookup itself, not its cache
    monkeypatch.setattr(registry, "format_module", lambda _: "exports.running.formats.lines")  # no SPEC
    with pytest.raises(LookupError):
        find(ExportFormat.CSV)
    monkeypatch.setattr(registry, "format_module", lambda _: "exports.running.formats.csv")  # CSV's SPEC
    with pytest.raises(LookupError):
        find(ExportFormat.CSV_GZ)


def test_no_module_outside_the_formats_branches_on_a_format() -> None:
    branching = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for folder in ("exports", "functions", "local_stack", "infra")
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
        if "formats" not in path.relative_to(REPO_ROOT).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if BRANCH_ON_A_FORMAT.search(line)
    ]
    assert branching == []


def test_the_worker_loads_a_formats_module_on_its_first_export_of_it() -> None:
    code = (
        "import json, sys; import functions.worker.handler; "
        "from exports.core.task import ExportFormat; from exports.running.formats.registry import format_spec; "
        "before = sorted(sys.modules); format_spec(ExportFormat.CSV_GZ); "
        "print(json.dumps([before, sorted(sys.modules)]))"
    )
    environment = {"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=True
    )
    before, after = (set(loaded) for loaded in json.loads(done.stdout.strip().splitlines()[-1]))
    modules = {format_module(export_format) for export_format in ExportFormat}
    assert before & modules == set()
    assert after & modules == {"exports.running.formats.csv", "exports.running.formats.csv_gz"}
