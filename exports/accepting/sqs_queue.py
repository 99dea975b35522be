"""The task queue on SQS."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING

from exports.core.aws.errors import translated
from exports.core.config.limits import Admission
from exports.core.config.queues import Queue, lane_for
from exports.core.errors import ExportsError
from exports.core.ports import Receipt, TaskMessage

if TYPE_CHECKING:
    from types_boto3_sqs import SQSClient

# SQS caps DelaySeconds at 15 minutes.
MAX_DELAY_SEC = 900


def encode_message(message: TaskMessage) -> str:
    """The JSON body of a queue message."""
    return json.dumps(asdict(message), separators=(",", ":"))


def decode_message(body: str) -> TaskMessage:
    """A queue message body back as :class:`TaskMessage`; ValueError if it is not one."""
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("task_id"), str):
        raise ValueError("queue message has no task_id")
    return TaskMessage(
        task_id=data["task_id"],
        export_type=str(data.get("export_type", "")),
        priority=int(data.get("priority", 5)),
        requeues=int(data.get("requeues", 0)),
    )


class SqsTaskQueue:
    """:class:`exports.core.ports.TaskQueue` over one SQS queue per priority lane."""

    def __init__(
        self, client: SQSClient, queue_urls: Mapping[str, str], cache_sec: float = Admission.BACKLOG_CACHE_SEC
    ) -> None:
        self._client = client
        self._urls = dict(queue_urls)
        self._cache_sec = cache_sec
        self._depths: dict[str, int] = {}
        self._measured_at = -math.inf

    def send(self, message: TaskMessage, delay_sec: int = 0) -> None:
        """Enqueue ``message`` on its priority's lane; the task id travels as an attribute too."""
        with translated("enqueue task"):
            self._client.send_message(
                QueueUrl=self._urls[lane_for(message.priority).name],
                MessageBody=encode_message(message),
                DelaySeconds=max(0, min(delay_sec, MAX_DELAY_SEC)),
                MessageAttributes={"task_id": {"DataType": "String", "StringValue": message.task_id}},
            )
        lane = lane_for(message.priority).name
        if lane in self._depths:
            # Until the next reading, count what this instance queued itself: a burst of submits
            # within the cache period sees each other.
            self._depths[lane] += 1

    def retry_later(self, receipt: Receipt, delay_sec: int) -> None:
        """Shorten the failed receipt's visibility timeout to ``delay_sec``."""
        queue_name = receipt.queue_arn.rsplit(":", 1)[-1]
        url = next((url for url in self._urls.values() if url.rsplit("/", 1)[-1] == queue_name), None)
        if url is None:
            raise ExportsError(f"not one of the task queues: {receipt.queue_arn}")
        with translated("delay redelivery"):
            self._client.change_message_visibility(
                QueueUrl=url,
                ReceiptHandle=receipt.receipt_handle,
                VisibilityTimeout=max(0, min(delay_sec, Queue.VISIBILITY_TIMEOUT_SEC)),
            )

    def depths(self) -> dict[str, int]:
        """Approximate visible messages per lane, re-read at most every ``cache_sec``."""
        self._measure()
        return dict(self._depths)

    def _measure(self) -> None:
        if time.monotonic() - self._measured_at < self._cache_sec:
            return
        depths = {}
        for lane, url in self._urls.items():
            with translated("read queue depth"):
                attributes = self._client.get_queue_attributes(
                    QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
                )["Attributes"]
            depths[lane] = int(attributes["ApproximateNumberOfMessages"])
        self._depths, self._measured_at = depths, time.monotonic()
