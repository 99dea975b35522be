"""A batch of the SQS event source, record by record, with partial batch failures (the event
source mapping's ``ReportBatchItemFailures``).

Our own loop, not Powertools' ``BatchProcessor``: with pydantic loaded, importing
``aws_lambda_powertools.utilities.batch`` builds Powertools' parser models of every event source
it supports (SQS, DynamoDB, Kinesis, Kafka) and imports asyncio, a fifth of the worker
function's cold import for a loop of a few lines (docs/performance.md, "Cold starts")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SqsRecord:
    """What the worker reads of one record of an SQS event."""

    message_id: str
    body: str
    receipt_handle: str
    event_source_arn: str
    receive_count: int

    @classmethod
    def from_event(cls, record: Mapping[str, Any]) -> SqsRecord:
        """One record of the event; KeyError or ValueError if it lacks what the worker reads."""
        return cls(
            message_id=record["messageId"],
            body=record["body"],
            receipt_handle=record["receiptHandle"],
            event_source_arn=record["eventSourceARN"],
            receive_count=int(record["attributes"]["ApproximateReceiveCount"]),
        )


class ItemFailure(TypedDict):
    """A record the event source delivers again."""

    itemIdentifier: str


class BatchResponse(TypedDict):
    """The partial batch response: every record not named here is deleted from the queue."""

    batchItemFailures: list[ItemFailure]


class BatchFailed(Exception):
    """Every record of the batch failed. The invocation fails, so SQS delivers them all again
    and Lambda scales the event source's pollers down, as on any failed invocation (what
    Powertools' processor does too)."""


def process_batch(event: Mapping[str, Any], handle: Callable[[SqsRecord], object]) -> BatchResponse:
    """Call ``handle`` on each record of ``event``, in order; a record whose call raises (or
    that cannot be read) is reported failed, the others go on. BatchFailed if all failed."""
    records: list[Mapping[str, Any]] = event["Records"]
    failed: list[ItemFailure] = []
    for record in records:
        try:
            handle(SqsRecord.from_event(record))
        except Exception:  # one record's fault fails that record only
            logger.exception("task message failed; SQS delivers it again")
            failed.append({"itemIdentifier": str(record.get("messageId", ""))})
    if records and len(failed) == len(records):
        raise BatchFailed(f"all {len(records)} records of the batch failed")
    return {"batchItemFailures": failed}
