"""`make test` runs in parallel by groups (tests/conftest.py): a module's tests, and each shared
suite, in one worker, so a module- or session-scoped local stack or database starts once. If
pytest-xdist stops honouring the groups (pytest 9.2 made it, silently), every worker starts its
own copy and the suite takes several times as long."""

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

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
