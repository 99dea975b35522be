"""How ``make test`` groups tests for pytest-xdist's ``--dist loadgroup`` (tests/conftest.py).

No import of the suite's fixtures here: tests/processes/test_test_groups.py runs these rules on a
synthetic suite in a few processes of their own."""

from collections.abc import Iterable
from pathlib import Path

import pytest

# Suites whose session-scoped fixtures are expensive (a synthesized CDK app): each runs in one
# xdist worker, so they start once. (The PostgreSQL suite's server starts in about a second: its
# modules spread over the workers.)
SHARED_SUITES = frozenset({"infra"})
# Session-scoped local stacks several end-to-end modules use (tests/conftest.py): every test
# using one runs in one worker, so it starts once.
SHARED_STACKS = ("dynamodb_stack", "postgres_stack")


def xdist_group(parts: tuple[str, ...], fixturenames: Iterable[str]) -> str:
    """The group of a test at ``parts`` (its path below tests/) using ``fixturenames``."""
    if parts[0] in SHARED_SUITES:
        return parts[0]
    shared = [name for name in SHARED_STACKS if name in fixturenames]
    return f"stack:{shared[0]}" if shared else "/".join(parts)


# The order workers take groups in (make test passes --no-loadscope-reorder, else pytest-xdist
# orders them by their number of tests): the long ones first, so the many short ones fill the
# workers in at the end. The shared groups come first, then modules by how long their suite's
# tests usually take.
SUITES_BY_LENGTH = (
    "e2e",
    "packaged",
    "reliability",
    "postgres",
    "mysql",
    "integration",
    "security",
    "contract",
    "client",
    "processes",
    "unit",
)


def schedule_rank(parts: tuple[str, ...], group: str) -> int:
    """Where a test at ``parts`` in ``group`` comes in the order workers take groups."""
    if group in SHARED_SUITES or group.startswith("stack:"):
        return 0
    return 1 + SUITES_BY_LENGTH.index(parts[0]) if parts[0] in SUITES_BY_LENGTH else len(SUITES_BY_LENGTH) + 1


def mark_groups(items: list[pytest.Item], root: Path) -> None:
    """Mark each of ``items`` (tests below ``root``) with its group, and order them by
    :func:`schedule_rank` (stable: collection order within a rank)."""
    ranks = {}
    for item in items:
        parts = item.path.relative_to(root).parts
        group = xdist_group(parts, getattr(item, "fixturenames", ()))
        item.add_marker(pytest.mark.xdist_group(group))
        ranks[item] = schedule_rank(parts, group)
    items.sort(key=ranks.__getitem__)
