"""`make test` runs in parallel by groups (tests/conftest.py): a module's tests, and each shared
suite, in one worker, so a module- or session-scoped local stack or database starts once. If
pytest-xdist stops honouring the groups (pytest 9.2 made it, silently), every worker starts its
own copy and the suite takes several times as long.

The end-to-end check runs the suite's grouping (:func:`tests.xdist_groups.mark_groups`) on a
synthetic suite of a few empty tests in two xdist workers: none of the real suite's conftest
(moto, local stacks) is imported, so it takes a few seconds, not the minutes of a real module."""

import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from tests.xdist_groups import schedule_rank, xdist_group

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_PER_MODULE = 3
# The synthetic suite's modules and the group each must run in: two modules of their own, and
# two that share a session-scoped stack (tests/xdist_groups.py, SHARED_STACKS).
EXPECTED_GROUPS = {
    "unit/test_first.py": "unit/test_first.py",
    "unit/test_second.py": "unit/test_second.py",
    "e2e/test_shared_one.py": "stack:dynamodb_stack",
    "e2e/test_shared_two.py": "stack:dynamodb_stack",
}
CONFTEST = """
from pathlib import Path

import pytest

from tests.xdist_groups import mark_groups


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_groups(items, Path(__file__).parent)


@pytest.fixture(scope="session")
def dynamodb_stack():
    return None
"""


def synthetic_suite(root: Path) -> Path:
    """A suite laid out like tests/, with the grouping hook of tests/conftest.py."""
    (root / "conftest.py").write_text(CONFTEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    for module in EXPECTED_GROUPS:
        fixture = "dynamodb_stack" if "shared" in module else ""
        tests = "".join(f"def test_{n}({fixture}):\n    pass\n\n\n" for n in range(TESTS_PER_MODULE))
        (root / module).parent.mkdir(exist_ok=True)
        (root / module).write_text(textwrap.dedent(tests))
    return root


def test_each_group_runs_in_one_worker_under_its_name(tmp_path):
    suite = synthetic_suite(tmp_path)
    options = ["-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-p", "no:randomly", "-v"]
    config = ["-c", str(suite / "pytest.ini"), "--rootdir", str(suite)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *config, str(suite)],
        check=False,
        cwd=suite,
        env={"PATH": "", "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers: dict[str, set[str]] = defaultdict(set)
    passed: dict[str, int] = defaultdict(int)
    for worker, module, group in re.findall(r"^\[(gw\d+)\].* PASSED (\S+?)::\S*@(\S+)", run.stdout, re.MULTILINE):
        assert group == EXPECTED_GROUPS[module]
        workers[group].add(worker)
        passed[module] += 1
    # Every test ran under its group's name (xdist appends it to the node id it schedules by)...
    assert passed == dict.fromkeys(EXPECTED_GROUPS, TESTS_PER_MODULE), run.stdout[-2000:]
    # ...and each group in one worker.
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
