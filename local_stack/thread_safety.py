"""What one process needs to run many Lambda invocations at once, as local mode does.

On AWS each execution environment runs one invocation at a time, and DynamoDB is atomic per
item. Local mode (and the tests that mirror it) runs the API, a worker poller per lane and the
workflow's functions as threads of one process, against moto, so two pieces of shared state
are serialised here, each under its own lock:

- moto's DynamoDB does not lock: two threads can both pass a condition check, a transaction
  deep-copies tables while another thread writes to them, and a read serialises the live item
  after the backend returned it, while another thread adds an attribute to it (``RuntimeError:
  dictionary changed size during iteration``, an occasional ``500`` under load; the last failed
  the fault-injection run in CI). Its backend methods and its request handler (parsing, backend
  call and serialising the answer) share one lock;
- Powertools keeps one metric set per process: an invocation that finds metrics to flush can
  serialise a set another invocation has just flushed and cleared, and fails with
  ``SchemaValidationError: Must contain at least one metric`` (it failed the lifecycle
  function, and with it a task's workflow and callback, in the fault-injection run). Under the
  lock an invocation may print another's metrics with its own: harmless locally.

Never installed on AWS.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.responses import DynamoHandler

from local_stack.moto_patch import MOTO, POWERTOOLS, CountedPatch


class SerialisedMethods:
    """Methods of one class, each run under one shared lock while installed (one
    :class:`CountedPatch` each, verified on ``verified_on``)."""

    def __init__(
        self,
        owner: type,
        names: tuple[str, ...],
        *,
        verified_on: tuple[str, str],
        lock: threading.RLock | None = None,
    ) -> None:
        self.owner = owner
        self.names = names
        self._lock = lock or threading.RLock()
        self._patches = tuple(CountedPatch(owner, name, self.locked, verified_on=verified_on) for name in names)

    @property
    def lock(self) -> threading.RLock:
        """The lock the methods run under (other classes' methods may share it)."""
        return self._lock

    def locked(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """``method``, run under the lock."""

        @functools.wraps(method)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return run

    def install(self) -> None:
        """Wrap the methods (once, however many installs)."""
        for patch in self._patches:
            patch.install()

    def uninstall(self) -> None:
        """Undo one :meth:`install`; the last gives the class its own methods back."""
        for patch in reversed(self._patches):
            patch.uninstall()


MOTO_DYNAMODB = SerialisedMethods(
    DynamoDBBackend,
    (
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
    ),
    verified_on=MOTO,
)
MOTO_DYNAMODB_REQUESTS = SerialisedMethods(DynamoHandler, ("call_action",), verified_on=MOTO, lock=MOTO_DYNAMODB.lock)
POWERTOOLS_METRICS = SerialisedMethods(
    AmazonCloudWatchEMFProvider,
    ("add_metric", "add_dimension", "add_metadata", "flush_metrics", "clear_metrics", "serialize_metric_set"),
    verified_on=POWERTOOLS,
)
SHARED_STATE = (MOTO_DYNAMODB, MOTO_DYNAMODB_REQUESTS, POWERTOOLS_METRICS)


def install() -> None:
    """Serialise every piece of shared state in this process (counted: see :class:`CountedPatch`)."""
    for methods in SHARED_STATE:
        methods.install()


def uninstall() -> None:
    """Undo one :func:`install`."""
    for methods in reversed(SHARED_STATE):
        methods.uninstall()
