"""Settings every test shares (no real AWS, quiet Powertools, no X-Ray daemon, moto and botocore
made cheaper to start), the groups of the parallel run, and the local stacks modules share."""

import gc
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_stack.embedded_aws import SPEED_UPS
from local_stack.stack import GC_THRESHOLDS
from tests.stack_process import SPEED_UPS_OFF, WEBHOOK_SECRET, Stack, running_stack
from tests.xdist_groups import mark_groups

# Set before any handler module is imported: Powertools reads them when its objects are made.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "exports",
        "POWERTOOLS_METRICS_NAMESPACE": "Exports",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)
# In-process suites run declared types on moto's DynamoDB (orders, customers; sales_report is the
# example plugin); the PostgreSQL suites load the repository's exports.toml themselves.
os.environ["EXPORTS_CONFIG"] = str(Path(__file__).parent / "declarations" / "dynamodb_demo.toml")
# A stray endpoint would send in-process moto tests to a real server.
os.environ.pop("AWS_ENDPOINT_URL", None)

# local mode's speed-ups of moto and botocore (local_stack/embedded_aws.py), for the whole session:
# every test's mock_aws() is a new boto3 session, which parsed botocore's models again; tests of
# many tasks were quadratic in moto's transactions; moto validated the same definitions again and
# serialised its answers about items by walking botocore's shapes. With SPEED_UPS_OFF set to "1"
# moto runs as it ships: tests/integration/test_moto_patch.py runs the port contracts so once, so
# the speed-ups cannot hide a difference between the fakes and moto.
if os.environ.get(SPEED_UPS_OFF) != "1":
    for patch in SPEED_UPS:
        patch.install()
# The collector walked the process's large long-lived heap every few seconds.
gc.set_threshold(*GC_THRESHOLDS)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say when the session ran without the speed-ups."""
    if os.environ.get(SPEED_UPS_OFF) == "1":
        terminalreporter.write_line("local_stack speed-ups off: moto as it ships")


# First: pytest-xdist's own hook of the same name turns the marks into the groups it schedules by.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for ``make test``'s parallel run (``--dist loadgroup``): one per module, which keeps
    a module's tests (and its module-scoped stack or database) in one worker; one per suite of
    :data:`tests.xdist_groups.SHARED_SUITES`; one per shared stack of
    :data:`tests.xdist_groups.SHARED_STACKS`."""
    mark_groups(items, Path(__file__).parent)


@pytest.fixture
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own as :func:`tempfile.gettempdir`: other test processes
    write temporary files too, so "nothing left behind" can only be checked in a private folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# Local stacks several end-to-end modules share (tests/xdist_groups.py runs every test using one
# in one worker, so each starts once per run).


@pytest.fixture(scope="session")
def dynamodb_stack() -> Iterator[Stack]:
    """The DynamoDB demo types, 1,000 orders, a webhook secret the tests know."""
    with running_stack(demo_orders=1000, environment={"EXPORTS_WEBHOOK_SECRET": WEBHOOK_SECRET}) as running:
        yield running


@pytest.fixture(scope="session")
def postgres_stack() -> Iterator[Stack]:
    """`make run`'s own declaration on its embedded PostgreSQL, 2,000 orders."""
    with running_stack(demo_orders=2000, postgres=True) as running:
        yield running
