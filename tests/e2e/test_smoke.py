"""`make smoke` run against `make run`'s stack (a separate process over real HTTP), with a real
callback receiver on loopback: every step passes, and a broken deployment fails it."""

import base64
import hashlib
import hmac
import json
import re
from pathlib import Path

import pytest

from scripts import smoke
from tests.receiver import receiver
from tests.stack_process import WEBHOOK_SECRET, Stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(dynamodb_stack: Stack) -> Stack:
    return dynamodb_stack


def test_every_step_of_the_walkthrough_passes_and_the_callback_is_signed(stack: Stack, capsys) -> None:
    with receiver([204]) as hook:
        code = smoke.main(["--url", stack.url, "--token", stack.tokens["alice"], "--callback-url", hook.url])
        calls = hook.wait_for(1)

    out = capsys.readouterr().out
    assert code == 0, out
    for name, _ in smoke.STEPS:
        assert f"PASS  {name}" in out, out
    assert f"smoke: {len(smoke.STEPS)} passed, 0 failed" in out
    # The callback the receiver got is the one the service signed with the stack's secret.
    (call,) = calls
    key = base64.b64decode(WEBHOOK_SECRET.removeprefix("whsec_"))
    signed = f"{call.headers['webhook-id']}.{call.headers['webhook-timestamp']}.".encode() + call.body
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert call.headers["webhook-signature"] == expected
    event = json.loads(call.body)
    assert event["type"] == "export.completed" and event["data"]["status"] == "COMPLETED"


def test_without_a_callback_url_that_step_is_skipped(stack: Stack, capsys) -> None:
    code = smoke.main(["--url", stack.url, "--token", stack.tokens["alice"], "--wait", "120"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "SKIP  signed callback" in out
    assert f"smoke: {len(smoke.STEPS) - 1} passed, 0 failed" in out


def test_a_wrong_token_fails_the_smoke(stack: Stack, capsys) -> None:
    code = smoke.main(["--url", stack.url, "--token", "not-a-token", "--wait", "5"])

    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  export types" in out
    assert "AuthenticationError" in out


def test_a_callback_the_receiver_refuses_fails_that_step(stack: Stack, capsys) -> None:
    with receiver([500]) as hook:
        code = smoke.main(["--url", stack.url, "--token", stack.tokens["alice"], "--callback-url", hook.url])

    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL  signed callback" in out
    assert "callback FAILED" in out


def test_the_deploy_guide_ends_with_the_smoke_check_and_the_makefile_runs_it() -> None:
    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "deploy.md").read_text()
    steps = re.findall(r"^## (\d+)\. (.+)$", guide, flags=re.MULTILINE)

    assert steps[-1][1].startswith("Check the deployment: `make smoke`")
    assert 'make smoke URL="$API" TOKEN="$TOKEN" CALLBACK_URL=' in guide
    makefile = (root / "Makefile").read_text()
    assert re.search(r"^smoke: .*\n\t.*scripts/smoke\.py --url \"\$\(URL\)\" --token \"\$\(TOKEN\)\"", makefile, re.M)
