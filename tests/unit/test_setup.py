"""The set-up `make run` and `make test` do on a fresh machine: uv from the package index with
the machine's pip, then a virtualenv that follows the committed uv.lock exactly."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (REPO_ROOT / "Makefile").read_text()
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
LOCK = tomllib.loads((REPO_ROOT / "uv.lock").read_text())


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions() -> dict[str, str]:
    return {normalized(package["name"]): package["version"] for package in LOCK["package"] if "version" in package}


def test_uv_is_bootstrapped_at_a_pinned_version_with_the_machines_pip():
    (version,) = re.findall(r"^UV_VERSION := (\d+\.\d+\.\d+)$", MAKEFILE, flags=re.MULTILINE)
    assert "$(PYTHON) -m pip install" in MAKEFILE
    assert "uv==$(UV_VERSION)" in MAKEFILE
    assert version
    # Never an interpreter of uv's own downloading, and the project's .venv.
    assert "export UV_PYTHON_DOWNLOADS := never" in MAKEFILE
    assert "export UV_PROJECT_ENVIRONMENT := $(VENV)" in MAKEFILE


def test_the_virtualenv_is_synced_from_the_lock_and_nothing_else():
    (recipe,) = re.findall(r"^\$\(STAMP\): (.+)\n((?:\t.+\n)+)", MAKEFILE, flags=re.MULTILINE)
    prerequisites, commands = recipe
    assert {"$(UV)", "pyproject.toml", "uv.lock", "client/pyproject.toml"} <= set(prerequisites.split())
    assert "$(UV) sync --quiet --locked --extra dev" in commands
    assert "pip install" not in commands
    assert not (REPO_ROOT / "constraints.txt").exists()


def test_every_pin_of_pyproject_is_the_locked_version():
    versions = locked_versions()
    pins = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["project"]["optional-dependencies"]["dev"]]

    for pin in pins:
        name, version = re.match(r"([A-Za-z0-9._-]+)(?:\[[^]]*\])?==(\S+)", pin).groups()
        assert versions[normalized(name)] == version, pin


def test_the_client_is_part_of_the_lock_as_an_editable_path():
    (client,) = [package for package in LOCK["package"] if package["name"] == "exports-client"]

    assert client["source"] == {"editable": "client"}
    assert PYPROJECT["tool"]["uv"]["default-groups"] == ["client"]
