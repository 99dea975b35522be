"""The set-up `make run` and `make test` do on a fresh machine: uv from the package index with
the machine's pip, then a virtualenv that holds exactly the committed requirements.lock."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (REPO_ROOT / "Makefile").read_text()
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
CLIENT = tomllib.loads((REPO_ROOT / "client" / "pyproject.toml").read_text())
LOCK = (REPO_ROOT / "requirements.lock").read_text()


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions() -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", LOCK, flags=re.MULTILINE)
    return {normalized(name): version for name, version in pins}


def test_uv_is_bootstrapped_at_a_pinned_version_with_the_machines_pip():
    (version,) = re.findall(r"^UV_VERSION := (\d+\.\d+\.\d+)$", MAKEFILE, flags=re.MULTILINE)
    assert "$(PYTHON) -m pip install" in MAKEFILE
    assert "uv==$(UV_VERSION)" in MAKEFILE
    assert version
    # Never an interpreter of uv's own downloading.
    assert "export UV_PYTHON_DOWNLOADS := never" in MAKEFILE


def test_the_virtualenv_is_synced_from_the_lock_with_hashes_and_our_projects_without_dependencies():
    (recipe,) = re.findall(r"^\$\(STAMP\): (.+)\n((?:\t.+\n)+)", MAKEFILE, flags=re.MULTILINE)
    prerequisites, commands = recipe
    assert {"$(UV)", "pyproject.toml", "$(LOCK)", "client/pyproject.toml"} <= set(prerequisites.split())
    assert "LOCK := requirements.lock" in MAKEFILE
    assert "$(UV) pip sync --quiet --python $(BIN)/python --require-hashes $(LOCK)" in commands
    assert "--no-deps --editable . --editable ./client" in commands
    assert not (REPO_ROOT / "constraints.txt").exists()


def test_every_locked_package_has_hashes_and_the_lock_names_no_index():
    entries = re.split(r"\n(?=[A-Za-z0-9])", LOCK.split("\n", 2)[2])
    assert len(entries) == len(locked_versions()) > 100
    for entry in entries:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]
    assert "://" not in LOCK
    assert "--index-url" not in LOCK and "--extra-index-url" not in LOCK


def test_every_pin_of_the_pyprojects_is_the_locked_version():
    versions = locked_versions()
    pins = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["project"]["optional-dependencies"]["dev"]]

    for pin in pins:
        name, version = re.match(r"([A-Za-z0-9._-]+)(?:\[[^]]*\])?==(\S+)", pin).groups()
        assert versions[normalized(name)] == version, pin
    for requirement in CLIENT["project"]["dependencies"]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        assert normalized(name) in versions, requirement


def test_our_own_projects_are_not_in_the_lock():
    assert {"exports-service", "exports-client"}.isdisjoint(locked_versions())


def cdk_modules_imported() -> set[str]:
    """The aws_cdk modules infra/ and app.py import (``from aws_cdk import aws_x``, or deeper)."""
    found = set()
    for path in [*(REPO_ROOT / "infra").glob("*.py"), REPO_ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":
                    found.update(f"aws_cdk.{alias.name}" for alias in node.names if alias.name.startswith("aws_"))
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk")
    return found


def test_mypy_checks_every_aws_cdk_module_the_cdk_app_uses():
    # The rest of aws_cdk is skipped for speed: a module missing here would be checked as Any.
    overrides = PYPROJECT["tool"]["mypy"]["overrides"]
    checked = next(set(o["module"]) for o in overrides if o.get("follow_imports") == "normal")
    assert next(o["module"] for o in overrides if o.get("follow_imports") == "skip") == ["aws_cdk.*"]
    assert cdk_modules_imported() == checked
