"""The TypeScript client's own tests (node's test runner) and the export console's real-browser
tests (Playwright driving Debian's Chromium), against one local stack on free ports; and the
tests that need no stack: the client's and the console's unit tests (a scripted fetch; the ETA,
the console's words) and the console's Schedules page against the scripted API of
tests/client/fake_api.py served over HTTP.

Both suites are npm workspaces (clients/typescript, clients/console); this module builds them with
``tsc --strict`` and runs them, so ``make test`` runs them with the rest of the suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.fake_api import (
    TOKEN,
    FakeApi,
    FakeSchedules,
    error_response,
    json_response,
    mail_json,
    serving,
    serving_types,
)
from tests.e2e.test_destinations_e2e import banner_posts
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


def _build() -> None:
    """The client, then the console bundled on it (``dist/``)."""
    assert (ROOT / "node_modules" / "@exports" / "client").exists(), "run `make node_modules/.package-lock.json`"
    for workspace in (CLIENT, CONSOLE):
        built = _npm(workspace, "build")
        assert built.returncode == 0, built.stdout + built.stderr


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """The DynamoDB demo types, with the console built first (the gateway serves its files)."""
    _build()
    with running_stack(demo_orders=1000) as running:
        yield running


def _environment(stack: Stack) -> dict[str, str]:
    sftp, s3, _ = banner_posts(stack.output())
    return {
        "EXPORTS_API_URL": stack.url,
        "EXPORTS_TOKEN_ALICE": TOKENS["alice"],
        "EXPORTS_TOKEN_BOB": TOKENS["bob"],
        # carol manages initech's destinations; the banner's targets are the stack's SFTP
        # server and the customer's bucket (clients/console/test/destinations.test.ts).
        "EXPORTS_TOKEN_CAROL": TOKENS["carol"],
        "EXPORTS_SFTP_TARGET": json.dumps(sftp["target"]),
        "EXPORTS_S3_TARGET": json.dumps(s3["target"]),
        "CHROMIUM": str(CHROMIUM),
    }


def _assert_all_passed(run: subprocess.CompletedProcess[str]) -> None:
    """node's test runner exited 0, and ran tests (its spec reporter's summary)."""
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"^\N{INFORMATION SOURCE} pass (\d+)$", run.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) > 0, run.stdout
    assert re.search(r"^\N{INFORMATION SOURCE} fail 0$", run.stdout, re.MULTILINE), run.stdout


def test_typescript_client(stack: Stack) -> None:
    """Given the local stack, when the client's end-to-end tests run, then they all pass."""
    run = _npm(CLIENT, "test:e2e", _environment(stack))
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


def test_typescript_client_unit() -> None:
    """Given no stack, when the client's unit tests run (a scripted fetch: the schedule calls and
    the backoff), then they all pass."""
    _assert_all_passed(_npm(CLIENT, "test:unit"))


def test_console_unit() -> None:
    """Given no stack and no browser, when the console's node tests run (the ETA on the recorded
    export, the words of facts and errors), then they all pass."""
    built = _npm(CLIENT, "build")  # the console's tests import the client's built package
    assert built.returncode == 0, built.stdout + built.stderr
    _assert_all_passed(_npm(CONSOLE, "test:unit"))


def test_console_schedules_page_against_the_fake_api() -> None:
    """Given the console served with the scripted API (FakeSchedules, the contract's routes), when
    Playwright drives Chromium through the Schedules page, then every browser test passes and the
    schedules it created are those the form showed (as the fake API received them)."""
    assert CHROMIUM.exists(), "Chromium is missing: `make test` installs Debian's chromium package"
    _build()
    backend = FakeSchedules()
    backend.MAX_PER_USER = 100  # the page's tests create more than the fake's usual cap
    backend.mail += [mail_json("msg_1"), mail_json("msg_2", subject="Weekly orders: failed", text="It failed.")]
    api = (
        serving_types(FakeApi(backend))
        .on("POST", "/v1/stream-tickets", error_response(404, "NOT_FOUND"))
        # The console asks who is signed in first (its header line): a user with no bound values.
        .on("GET", "/v1/me", json_response(200, {"user_id": "alice", "bound": {}}))
    )
    with serving(api, CONSOLE / "dist") as url:
        run = _npm(
            CONSOLE,
            "test:fake",
            {
                "EXPORTS_FAKE_API_URL": url,
                "EXPORTS_FAKE_TOKEN_ALICE": TOKEN,
                "EXPORTS_FAKE_TOKEN_BOB": "bob-token",
                "CHROMIUM": str(CHROMIUM),
            },
        )
    _assert_all_passed(run)
    weekly = [schedule for schedule in backend.schedules.values() if schedule["name"] == "Weekly orders"]
    assert [(item["filters"], item["timezone"], item["cron"]) for item in weekly] == [
        ({"date_from": "previous_week", "status": "delivered"}, "Europe/Berlin", "0 8 * * 1")
    ]
    assert all(owner in {TOKEN, "bob-token"} for owner in backend.owners.values())
