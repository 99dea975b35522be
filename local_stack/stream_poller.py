"""Local mode's event source mappings of the tasks table's stream: moto keeps the stream (in
server mode too), and a poller reads it as Lambda's mapping would, filters it to task items,
and hands a batch (at most ``Push.BATCH_SIZE`` records gathered for ``Push.BATCHING_WINDOW_SEC``)
to its function (the push function, the audit function: one poller each, as one mapping each on
AWS); a reported failure is retried from that record, its mapping's retries times, then skipped
(on AWS it goes to the on-failure queue)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from exports.core.config.names import Names
from exports.core.config.push import Push
from exports.core.config.retry import PUSH_BATCH_RETRY
from exports.core.config.tables import TaskTable
from exports.core.ids import TASK_ID_PREFIX
from local_stack.lambda_context import LocalLambdaContext

logger = logging.getLogger("local_stack.stream")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def is_task_record(record: dict[str, Any]) -> bool:
    """The mapping's filter: records of task items only (their key starts with ``exp_``)."""
    key = record.get("dynamodb", {}).get("Keys", {}).get(TaskTable.PARTITION_KEY, {}).get("S", "")
    return isinstance(key, str) and key.startswith(TASK_ID_PREFIX)


def as_lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record as the event source mapping gives it (epoch seconds, the stream's ARN)."""
    stream = dict(record["dynamodb"])
    created = stream.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        stream["ApproximateCreationDateTime"] = created.timestamp()
    return {**record, "dynamodb": stream, "eventSource": "aws:dynamodb", "eventSourceARN": stream_arn}


class StreamPoller:
    """Reads every shard of ``stream_arn`` from its latest record and feeds ``handler`` (the
    function ``function_name``, whose mapping retries a failed batch ``retries`` times)."""

    def __init__(
        self,
        streams: Any,
        stream_arn: str,
        handler: Handler,
        function_name: str = Names.PUSH_FUNCTION,
        retries: int = PUSH_BATCH_RETRY.retries,
    ) -> None:
        self._streams = streams
        self._arn = stream_arn
        self._handler = handler
        self._function_name = function_name
        self._retries = retries
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tasks-stream-{function_name}", daemon=True)
        self._iterators: dict[str, str] = {}
        self._pending: list[dict[str, Any]] = []
        self._attempts = 0

    def start(self) -> None:
        """Start from the stream's current end."""
        for shard in self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]:
            self._iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                StreamArn=self._arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
            )["ShardIterator"]
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(Push.BATCHING_WINDOW_SEC):
            try:
                self.poll_once()
            except Exception:  # the poller must outlive a fault, as the mapping does
                logger.exception("reading the tasks stream failed")

    def poll_once(self) -> None:
        """Read what is new and hand it over, a batch at a time."""
        for shard, iterator in list(self._iterators.items()):
            page = self._streams.get_records(ShardIterator=iterator)
            self._iterators[shard] = page["NextShardIterator"]
            self._pending.extend(
                as_lambda_record(record, self._arn) for record in page.get("Records", []) if is_task_record(record)
            )
        while self._pending:
            batch = self._pending[: Push.BATCH_SIZE]
            result = self._handler({"Records": batch}, LocalLambdaContext(self._function_name, timeout_sec=30))
            failures = [failure["itemIdentifier"] for failure in result.get("batchItemFailures", [])]
            if not failures:
                self._pending = self._pending[len(batch) :]
                self._attempts = 0
                continue
            first = next(i for i, r in enumerate(batch) if r["dynamodb"]["SequenceNumber"] == failures[0])
            self._attempts += 1
            skip = first + 1 if self._attempts > self._retries else first
            if skip > first:
                logger.error("%s failed %d times; record %s skipped", self._function_name, self._attempts, failures[0])
                self._attempts = 0
            self._pending = self._pending[skip:]
            return

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
