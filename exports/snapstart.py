"""SnapStart's runtime hooks for the functions that run from a snapshot (the API function and the
WebSocket function, docs/performance.md "SnapStart").

Lambda initialises a SnapStart version once (the handler's import), snapshots its memory, and
resumes every new execution environment from that snapshot. What init made is then shared by
every environment: the state of :mod:`random` (each would draw the same numbers: the jitter of
retries, Powertools' log sampling) and anything unique or bound to a connection made at init.

What our handlers make at import, checked (tests/unit/test_handler_imports.py,
tests/unit/test_snapstart.py): no id, token or ticket (task ids are ULIDs made per request from
``os.urandom``; tickets from :mod:`secrets`), no AWS client, Session or connection (the clients
come from :data:`exports.adapters.clients.aws_client` at the first invocation; AWS documents boto3
clients made at init as safe to snapshot, they reconnect, and we make none there anyway), no
database connection. So the hooks are: before the snapshot, drop any client a future change might
make at init (their pooled connections would be copied into every environment); after each
restore, re-seed :mod:`random` from the operating system.

The hooks register only on Lambda, during a SnapStart init (``AWS_LAMBDA_INITIALIZATION_TYPE``
is ``snap-start``) and where the runtime's ``snapshot_restore_py`` module is there: `make run`
and the tests import the handlers without registering anything.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Final

# Lambda's variable that says how this execution environment was initialised.
INITIALIZATION_TYPE_VARIABLE: Final = "AWS_LAMBDA_INITIALIZATION_TYPE"
SNAP_START: Final = "snap-start"


def before_snapshot() -> None:
    """Drop the AWS clients and Session made so far, if the client factory was even imported (it
    is not at our handlers' import): none goes into the snapshot with its open connections."""
    clients = sys.modules.get("exports.adapters.clients")
    if clients is not None:
        clients.aws_client.cache_clear()


def after_restore() -> None:
    """Re-seed :mod:`random` from the operating system's entropy: every environment restored from
    one snapshot would otherwise draw the same sequence."""
    random.seed()


def register_hooks() -> bool:
    """Register :func:`before_snapshot` and :func:`after_restore` with Lambda's runtime during a
    SnapStart init; whether they were (never outside Lambda, nor on an on-demand init)."""
    if os.environ.get(INITIALIZATION_TYPE_VARIABLE) != SNAP_START:
        return False
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:  # a runtime without SnapStart's hooks: nothing to register with
        return False
    register_before_snapshot(before_snapshot)
    register_after_restore(after_restore)
    return True
