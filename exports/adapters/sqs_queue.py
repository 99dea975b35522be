"""The task queue on SQS."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from exports.adapters.aws_errors import translated
from exports.ports import TaskMessage

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
    )


class SqsTaskQueue:
    """:class:`exports.ports.TaskQueue` on one SQS queue."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def send(self, message: TaskMessage, delay_sec: int = 0) -> None:
        """Enqueue ``message``; the task id travels as an attribute too, for tracing."""
        with translated("enqueue task"):
            self._client.send_message(
                QueueUrl=self._queue_url,
                MessageBody=encode_message(message),
                DelaySeconds=max(0, min(delay_sec, MAX_DELAY_SEC)),
                MessageAttributes={"task_id": {"DataType": "String", "StringValue": message.task_id}},
            )
