"""Task ids: ``exp_`` + a ULID, so ids sort by creation time."""

from __future__ import annotations

import re
from datetime import datetime

TASK_ID_PREFIX = "exp_"
# A ULID: 26 Crockford base32 characters, the first at most 7 (48-bit timestamp).
TASK_ID_PATTERN = re.compile(r"exp_[0-7][0-9A-HJKMNP-TV-Z]{25}")
# The same, anchored, as the OpenAPI document states it (a page's next_token is a task id).
TASK_ID_SCHEMA_PATTERN = f"^{TASK_ID_PATTERN.pattern}$"


def new_task_id(now: datetime) -> str:
    """A new globally unique, time-sortable task id for a task created at ``now``."""
    # Imported here: only the functions that create tasks ship python-ulid; the others (the
    # worker's task store among them) only recognise ids (infra/functions.py).
    from ulid import ULID

    return f"{TASK_ID_PREFIX}{ULID.from_datetime(now)}"


def is_task_id(value: str) -> bool:
    """Whether ``value`` has the shape of a task id."""
    return bool(TASK_ID_PATTERN.fullmatch(value))
