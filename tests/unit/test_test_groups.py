"""`make test` runs in parallel by groups (tests/conftest.py): a module's tests, and each shared
suite, in one worker, so a module- or session-scoped local stack or database starts once. If
pytest-xdist stops honouring the groups (pytest 9.2 made it, silently), every worker starts its
own copy and the suite takes several times as long."""

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.xdist_groups import schedule_rank, xdist_group

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULES = ("tests/unit/test_ids.py", "tests/unit/test_status.py")


def test_each_modules_tests_run_in_one_worker_under_their_group():
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-v", *MODULES],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module, group in re.findall(r"^\[(gw\d+)\].* PASSED (\S+?)::\S*@(\S+)", run.stdout, re.MULTILINE):
        assert group == module.removeprefix("tests/")
        workers[module].add(worker)
    assert set(workers) == set(MODULES)
    assert all(len(ran_in) == 1 for ran_in in workers.values()), dict(workers)


def test_modules_that_use_a_shared_stack_run_in_its_group():
    assert xdist_group(("e2e", "test_smoke.py"), ["dynamodb_stack", "stack"]) == "stack:dynamodb_stack"
    assert xdist_group(("e2e", "test_fan_out_e2e.py"), ["split", "whole", "postgres_stack"]) == "stack:postgres_stack"
    assert xdist_group(("e2e", "test_local_stack.py"), ["stack"]) == "e2e/test_local_stack.py"
    assert xdist_group(("client", "test_cli_e2e.py"), ["client", "stack", "dynamodb_stack"]) == "stack:dynamodb_stack"
    assert xdist_group(("infra", "test_infra_app.py"), ["dev"]) == "infra"


def test_shared_groups_are_taken_first_then_the_suites_of_long_tests():
    assert schedule_rank(("client", "test_cli_e2e.py"), "stack:dynamodb_stack") == 0
    assert schedule_rank(("infra", "test_infra_app.py"), "infra") == 0
    ranks = [schedule_rank((suite, "test_x.py"), f"{suite}/test_x.py") for suite in ("e2e", "integration", "unit")]
    assert 0 < ranks[0] < ranks[1] < ranks[2]
    assert schedule_rank(("new_suite", "test_x.py"), "new_suite/test_x.py") > ranks[2]
