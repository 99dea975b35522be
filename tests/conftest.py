"""Settings every test shares: no real AWS, quiet Powertools, no X-Ray daemon."""

import os
import tempfile
from pathlib import Path

import pytest

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
# In-process suites run the demo types as Python plugins on moto's DynamoDB; the PostgreSQL suites
# load the repository's exports.toml themselves.
os.environ["EXPORTS_CONFIG"] = str(Path(__file__).parent / "declarations" / "dynamodb_demo.toml")
# A stray endpoint would send in-process moto tests to a real server.
os.environ.pop("AWS_ENDPOINT_URL", None)

# Suites whose session-scoped fixtures are expensive (a synthesized CDK app, an embedded
# PostgreSQL, a local stack process): each runs in one xdist worker, so they start once.
_SHARED_SUITES = frozenset({"client", "infra", "postgres"})


# First: pytest-xdist's own hook of the same name turns the marks into the groups it schedules by.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for ``make test``'s parallel run (``--dist loadgroup``): one per module, which keeps
    a module's tests (and its module-scoped stack or database) in one worker, and one per suite
    of :data:`_SHARED_SUITES`."""
    root = Path(__file__).parent
    for item in items:
        parts = item.path.relative_to(root).parts
        item.add_marker(pytest.mark.xdist_group(parts[0] if parts[0] in _SHARED_SUITES else "/".join(parts)))


@pytest.fixture
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own as :func:`tempfile.gettempdir`: other test processes
    write temporary files too, so "nothing left behind" can only be checked in a private folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
