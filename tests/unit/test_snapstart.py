"""SnapStart's restore hooks (exports/snapstart.py): registered with the runtime's
``snapshot_restore_py`` during a SnapStart init only, and what they change when the runtime runs
them. Each case imports the handler in a fresh interpreter, as Lambda's init does, then runs the
hooks the runtime holds, as Lambda does before the snapshot and after a restore."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Lambda's init of a SnapStart version, then its snapshot and restore: the runtime's registries
# read and run in order; what each hook changed printed.
_INIT_SNAPSHOT_RESTORE = """
import json, random, sys
import functions.{function}.handler
import snapshot_restore_py as runtime
from exports.adapters.clients import aws_client

aws_client("sqs")  # a client made during init, as a future change might
before = [hook.__qualname__ for hook, _, _ in runtime.get_before_snapshot()]
after = [hook.__qualname__ for hook, _, _ in runtime.get_after_restore()]
for hook, args, kwargs in runtime.get_before_snapshot():
    hook(*args, **kwargs)
clients_in_snapshot = list(aws_client.services())
random.seed(7)  # every environment restored from one snapshot holds this same state
snapshot_state = random.getstate()
for hook, args, kwargs in runtime.get_after_restore():
    hook(*args, **kwargs)
print(json.dumps([before, after, clients_in_snapshot, random.getstate() != snapshot_state]))
"""


def _run(code: str, **environment: str) -> list:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PATH": "", **environment},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("function", ["submit", "stream"])
def test_a_snapstart_init_registers_the_hooks_and_a_restore_reseeds_random(function):
    # Given Lambda's SnapStart init of the function
    before, after, clients_in_snapshot, reseeded = _run(
        _INIT_SNAPSHOT_RESTORE.format(function=function), AWS_LAMBDA_INITIALIZATION_TYPE="snap-start"
    )

    # Then one hook each way is registered; the snapshot holds no client; a restore re-seeds random
    assert before == ["before_snapshot"]
    assert after == ["after_restore"]
    assert clients_in_snapshot == []
    assert reseeded


@pytest.mark.parametrize("initialization", ["", "on-demand", "provisioned-concurrency"])
def test_no_hook_is_registered_outside_a_snapstart_init(initialization):
    # Given make run, the tests, or an on-demand init on Lambda
    environment = {"AWS_LAMBDA_INITIALIZATION_TYPE": initialization} if initialization else {}
    before, after, _, _ = _run(_INIT_SNAPSHOT_RESTORE.format(function="submit"), **environment)

    # Then the runtime holds no hook of ours
    assert before == [] and after == []


def test_a_runtime_without_the_hooks_module_still_imports_the_handlers():
    # Given a SnapStart init where snapshot_restore_py cannot be imported
    code = (
        "import json, sys; sys.modules['snapshot_restore_py'] = None; "
        "import functions.submit.handler, functions.stream.handler; "
        "from exports.snapstart import register_hooks; print(json.dumps([register_hooks()]))"
    )

    # Then both handlers import, and nothing registers
    assert _run(code, AWS_LAMBDA_INITIALIZATION_TYPE="snap-start") == [False]


def test_two_restores_of_one_snapshot_draw_different_numbers():
    # Given the state random has in a snapshot, restored twice (two execution environments)
    code = (
        "import json, random; from exports.snapstart import after_restore; "
        "random.seed(7); state = random.getstate(); draws = []\n"
        "for _ in range(2):\n    random.setstate(state); after_restore(); draws.append(random.random())\n"
        "print(json.dumps(draws))"
    )
    first, second = _run(code)

    # Then each environment draws its own numbers
    assert first != second
