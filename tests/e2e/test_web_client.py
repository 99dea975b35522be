"""The TypeScript client's own tests (node's test runner) and the export console's real-browser
tests (Playwright driving Debian's Chromium), against one local stack on free ports.

Both suites are npm workspaces (clients/typescript, clients/console); this module builds them with
``tsc --strict`` and runs them, so ``make test`` runs them with the rest of the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stack_process import ROOT, TOKENS, Stack, running_stack

CLIENT = ROOT / "clients" / "typescript"
CONSOLE = ROOT / "clients" / "console"
CHROMIUM = Path("/usr/bin/chromium")
NPM_TIMEOUT_SEC = 600
# As clients/typescript's `npm run generate` passes them: a default does not make a field required.
GENERATOR_OPTIONS = ("--default-non-nullable", "false")


def _npm(workspace: Path, script: str, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``npm run <script>`` in ``workspace``, its output kept for the failure message."""
    npm = shutil.which("npm")
    assert npm, "npm is missing: the Makefile's prerequisites install Node 20's npm packages"
    return subprocess.run(
        [npm, "run", "--silent", script],
        cwd=workspace,
        env={**os.environ, **(environment or {})},
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_SEC,
        check=False,
    )


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """The DynamoDB demo types, with the console built first (the gateway serves its files)."""
    assert (ROOT / "node_modules" / "@exports" / "client").exists(), "run `make node_modules/.package-lock.json`"
    for workspace in (CLIENT, CONSOLE):
        built = _npm(workspace, "build")
        assert built.returncode == 0, built.stdout + built.stderr
    with running_stack(demo_orders=1000) as running:
        yield running


def _environment(stack: Stack) -> dict[str, str]:
    return {
        "EXPORTS_API_URL": stack.url,
        "EXPORTS_TOKEN_ALICE": TOKENS["alice"],
        "EXPORTS_TOKEN_BOB": TOKENS["bob"],
        "CHROMIUM": str(CHROMIUM),
    }


def _assert_all_passed(run: subprocess.CompletedProcess[str]) -> None:
    """node's test runner exited 0, and ran tests (its spec reporter's summary)."""
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"^\N{INFORMATION SOURCE} pass (\d+)$", run.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) > 0, run.stdout
    assert re.search(r"^\N{INFORMATION SOURCE} fail 0$", run.stdout, re.MULTILINE), run.stdout


def test_typescript_client(stack: Stack) -> None:
    """Given the local stack, when the client's node tests run, then they all pass (none fails)."""
    run = _npm(CLIENT, "test", _environment(stack))
    _assert_all_passed(run)


def test_typescript_types_are_not_stale(tmp_path: Path) -> None:
    """Given docs/openapi.json, when openapi-typescript generates the types again, then they are
    the committed ones (regenerate with ``npm run generate`` in clients/typescript)."""
    fresh = tmp_path / "schema.ts"
    npx = shutil.which("npx")
    assert npx
    subprocess.run(
        [npx, "openapi-typescript", str(ROOT / "docs" / "openapi.json"), *GENERATOR_OPTIONS, "-o", str(fresh)],
        cwd=CLIENT,
        check=True,
        capture_output=True,
        timeout=NPM_TIMEOUT_SEC,
    )
    assert fresh.read_text() == (CLIENT / "src" / "schema.ts").read_text(), (
        "clients/typescript/src/schema.ts is stale: run `npm run generate` in clients/typescript"
    )


def test_console_in_chromium(stack: Stack) -> None:
    """Given the console served at /console, when Playwright drives Debian's Chromium through it,
    then every browser test passes."""
    assert CHROMIUM.exists(), "Chromium is missing: `make test` installs Debian's chromium package"
    run = _npm(CONSOLE, "test", _environment(stack))
    _assert_all_passed(run)
