"""Stopping local mode's worker loop (Ctrl-C of ``make run``): it waits for the batch being
processed, never for a poller's long poll on an empty queue."""

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_stack.embedded_aws import REGION
from local_stack.worker_loop import WorkerLoop

LONG_POLL_SEC = 3


@pytest.fixture
def queue() -> Iterator[tuple[Any, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        yield sqs, sqs.create_queue(QueueName="tasks")["QueueUrl"]


def test_an_idle_loop_stops_without_waiting_for_its_long_polls(queue):
    sqs, url = queue
    loop = WorkerLoop(sqs, url, lambda event, context: {}, batch_size=1, concurrency=2, wait_sec=LONG_POLL_SEC)
    loop.start()
    time.sleep(0.5)  # both pollers are in their long poll
    loop.request_stop()
    started = time.monotonic()

    loop.wait_for_batches(LONG_POLL_SEC * 2)

    assert time.monotonic() - started < LONG_POLL_SEC / 2
    loop.stop()  # the polls end before the queue goes away


def test_stopping_waits_for_the_batch_in_flight_and_it_completes(queue):
    sqs, url = queue
    sqs.send_message(QueueUrl=url, MessageBody="task")
    running, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        running.set()
        release.wait(10)
        seen.extend(record["body"] for record in event["Records"])
        return {"batchItemFailures": []}

    loop = WorkerLoop(sqs, url, handler, batch_size=1, concurrency=1, wait_sec=1)
    loop.start()
    assert running.wait(10)
    loop.request_stop()
    waiting = threading.Thread(target=loop.wait_for_batches, args=(10,))
    waiting.start()

    waiting.join(0.5)
    assert waiting.is_alive()  # the batch is still being processed
    release.set()
    waiting.join(5)
    assert not waiting.is_alive()
    assert seen == ["task"]
    loop.stop()
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"  # processed, then deleted
