"""The worker's SQS batches: each record on its own, partial batch failures, a whole failed batch
failing the invocation (exports/adapters/sqs_batch.py)."""

import pytest

from exports.adapters.sqs_batch import BatchFailed, SqsRecord, process_batch

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:exports-tasks-normal"


def record(message_id: str, body: str = "{}", receive_count: str = "1") -> dict[str, object]:
    """One record as the SQS event source delivers it."""
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": body,
        "attributes": {"ApproximateReceiveCount": receive_count, "SentTimestamp": "1767225600000"},
        "messageAttributes": {},
        "md5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


def test_each_record_is_read_and_handled_in_order():
    handled: list[SqsRecord] = []

    answer = process_batch({"Records": [record("a", "one", "3"), record("b", "two")]}, handled.append)

    assert answer == {"batchItemFailures": []}
    assert handled == [
        SqsRecord(message_id="a", body="one", receipt_handle="handle-a", event_source_arn=QUEUE_ARN, receive_count=3),
        SqsRecord(message_id="b", body="two", receipt_handle="handle-b", event_source_arn=QUEUE_ARN, receive_count=1),
    ]


def test_a_failed_record_is_reported_and_the_others_go_on():
    handled: list[str] = []

    def handle(message: SqsRecord) -> None:
        if message.body == "poison":
            raise ValueError("not a task message")
        handled.append(message.message_id)

    answer = process_batch({"Records": [record("a"), record("b", "poison"), record("c")]}, handle)

    assert answer == {"batchItemFailures": [{"itemIdentifier": "b"}]}
    assert handled == ["a", "c"]


def test_a_record_that_cannot_be_read_fails_alone():
    unreadable = {**record("b"), "attributes": {}}

    answer = process_batch({"Records": [record("a"), unreadable]}, lambda _: None)

    assert answer == {"batchItemFailures": [{"itemIdentifier": "b"}]}


def test_a_batch_whose_every_record_failed_fails_the_invocation():
    def handle(_: SqsRecord) -> None:
        raise RuntimeError("the table is gone")

    with pytest.raises(BatchFailed, match="all 2 records"):
        process_batch({"Records": [record("a"), record("b")]}, handle)
