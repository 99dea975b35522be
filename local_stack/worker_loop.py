"""What Lambda's SQS event source mapping does, locally: long-poll, hand batches to the worker,
delete the records it did not report as failed."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from local_stack.lambda_context import LocalLambdaContext

logger = logging.getLogger("local_stack.worker")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def to_sqs_event(messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The SQS event Lambda would deliver for ``messages``."""
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": {
                    name: {
                        "stringValue": value.get("StringValue"),
                        "binaryValue": value.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": value["DataType"],
                    }
                    for name, value in message.get("MessageAttributes", {}).items()
                },
                "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


class WorkerLoop:
    """``concurrency`` pollers, like the event source mapping's maximum concurrency."""

    def __init__(
        self, sqs: Any, queue_url: str, handler: Handler, batch_size: int, concurrency: int = 2, wait_sec: int = 1
    ) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._handler = handler
        self._batch_size = batch_size
        self._wait_sec = wait_sec
        self._stop = threading.Event()
        # How many pollers are processing a batch: stopping waits for them, not for long polls.
        self._busy = 0
        self._idle = threading.Condition()
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
        self._queue_arn = attributes["QueueArn"]
        self._region = self._queue_arn.split(":")[3]
        self._threads = [
            threading.Thread(target=self._poll, name=f"worker-{n}", daemon=True) for n in range(concurrency)
        ]

    def start(self) -> None:
        """Start polling."""
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop after the current batches and long polls."""
        self.request_stop()
        deadline = time.monotonic() + self._wait_sec + 30
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def request_stop(self) -> None:
        """Let every poller stop after its current batch, without waiting for it."""
        self._stop.set()

    def wait_for_batches(self, timeout_sec: float) -> None:
        """Wait up to ``timeout_sec`` for the batches being processed, not for long polls (the
        pollers are daemon threads: one still polling, or an export still running after, ends
        with the process)."""
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout=timeout_sec)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:  # the loop must outlive any one failure, as Lambda's poller does
                if self._stop.is_set():
                    return  # the embedded AWS is going away under it
                logger.exception("worker poll failed")
                self._stop.wait(1)

    def poll_once(self) -> int:
        """Receive one batch and process it; returns how many messages it got."""
        messages = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=self._batch_size,
            WaitTimeSeconds=self._wait_sec,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return 0
        with self._idle:
            if self._stop.is_set():
                return 0  # received while stopping: left to the queue, as a stopped poller would
            self._busy += 1
        try:
            self._process(messages)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()
        return len(messages)

    def _process(self, messages: list[dict[str, Any]]) -> None:
        event = to_sqs_event(messages, self._queue_arn, self._region)
        result = self._handler(event, LocalLambdaContext("exports-worker"))
        failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)],
            )
