"""DynamoDB's per-item atomicity for moto, which has no locking.

Two threads can both pass a condition check in moto, and a transaction deep-copies the tables it
touches while another thread writes to them (``RuntimeError: dictionary changed size during
iteration``). The local stack runs the API, a worker poller per lane and the workflow's functions
as threads of one process, so every operation of moto's DynamoDB backend runs under one lock:
DynamoDB's own guarantee, at the price of concurrency that moto cannot offer anyway.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

OPERATIONS = (
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "batch_write_item",
    "get_item",
    "batch_get_item",
    "transact_get_items",
    "query",
    "scan",
)
_lock = threading.RLock()
_originals: dict[str, Callable[..., Any]] = {}


def locked(operation: Callable[..., Any]) -> Callable[..., Any]:
    """``operation`` of the backend, run under the one lock."""

    @functools.wraps(operation)
    def run(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return operation(*args, **kwargs)

    return run


def install() -> None:
    """Serialise moto's DynamoDB operations in this process (idempotent)."""
    for name in OPERATIONS:
        if name not in _originals:
            _originals[name] = getattr(DynamoDBBackend, name)
            setattr(DynamoDBBackend, name, locked(_originals[name]))


def uninstall() -> None:
    """Give moto its own operations back."""
    while _originals:
        name, original = _originals.popitem()
        setattr(DynamoDBBackend, name, original)
