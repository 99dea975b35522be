"""The codes the docs name are codes the service has: a reader who matches on `VALIDATION_ERROR`
must find it in the answers (the docs once said `INVALID_REQUEST`, which no answer carried)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = ["exports", "functions", "infra", "local_stack", "client/src"]
# Upper-case names the docs quote that are not codes nor names of ours: other tools' variables
# and constants, and names from the tests' and benchmarks' harness.
NOT_OURS = {
    "UV_CACHE_DIR",
    "PIP_NO_CACHE_DIR",
    "TEST_WORKERS",
    "GC_THRESHOLDS",
    "SHA256_CTX",
    "CALLBACK_URL",
    "Z_SYNC_FLUSH",
    "Z_FINISH",
    "IPV4_RULES",
    "IPV6_RULES",
    "AWS_SERVICES",
    "EXPORTS_FAULT_TASKS",
    "EXPORTS_FAULT_SEED",
    "LATEST_DATE",
    "SSL_CERT_FILE",
    "LAMBDA_TASK_ROOT",
    # The bench's imports before the clock (bench/postgres.py).
    "ARROW_IMPORTS",
    # The message attributes of EventBridge Scheduler's dead letters.
    "ERROR_CODE",
    "ERROR_MESSAGE",
    # MySQL's sql_mode flags (docs/mysql-8-and-aurora.md).
    "NO_ZERO_DATE",
    "NO_ZERO_IN_DATE",
}
_QUOTED_NAME = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")


def test_every_code_the_docs_name_is_one_the_service_has() -> None:
    source = "\n".join(path.read_text(encoding="utf-8") for root in SOURCES for path in (ROOT / root).rglob("*.py"))
    named = {
        (name, doc.name)
        for doc in DOCS
        for name in _QUOTED_NAME.findall(doc.read_text(encoding="utf-8"))
        if name not in NOT_OURS
    }

    def ours(name: str) -> bool:
        """A string the service sends or reads, or a constant it defines (``Limits.X: Final = …``)."""
        return f'"{name}"' in source or f"'{name}'" in source or re.search(rf"\b{name}\b\s*[:=]", source) is not None

    unknown = sorted((name, doc) for name, doc in named if not ours(name))

    assert unknown == []
    assert ("VALIDATION_ERROR", "README.md") in named
    assert not ours("INVALID_REQUEST")
