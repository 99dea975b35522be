"""Move dead-lettered task messages back to their lane's queue, once the cause is fixed.

    .venv/bin/python scripts/redrive.py --stack exports-dev              # AWS: your credentials and region
    .venv/bin/python scripts/redrive.py --endpoint-url http://127.0.0.1:4566   # make run's embedded AWS
    .venv/bin/python scripts/redrive.py ... --lane high --max 100 --dry-run

The queues come from the stack's outputs (``TaskQueueUrl<Lane>``, ``DeadLetterQueueUrl<Lane>``)
with ``--stack``, and otherwise from the local names (``exports-tasks-<lane>`` and its ``-dlq``)
at ``--endpoint-url`` or ``AWS_ENDPOINT_URL`` (``make run`` prints it as "embedded AWS").

Where SQS offers it, the move is SQS's own redrive (``StartMessageMoveTask``: the DLQ back to its
source queue, at most ``--rate`` messages a second). Where the endpoint does not implement it
(moto, hence ``make run``), or with ``--copy``, messages are moved in batches: received, sent to
the lane's queue with their message attributes, and only then deleted from the DLQ, so an
interruption can duplicate a message (harmless: the worker acknowledges a task it already ran)
but never lose one. A redriven message starts with a fresh receive count.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import ClientError, NoCredentialsError

from exports.core.config.queues import LANES

# What endpoints answer for an action they do not implement.
_UNSUPPORTED_CODES = frozenset({"InvalidAction", "UnsupportedOperation", "NotImplemented", "InternalFailure"})
_BATCH = 10


@dataclass(frozen=True)
class LaneQueues:
    """A lane's queue and its dead-letter queue."""

    lane: str
    queue_url: str
    dlq_url: str


@dataclass
class Moved:
    """What happened to one lane's dead letters."""

    lane: str
    waiting: int
    moved: int = 0
    failed: int = 0
    move_task: str | None = None


def lane_queues_from_stack(cloudformation: Any, stack: str, lanes: Sequence[str]) -> list[LaneQueues]:
    """The lanes' queue URLs from the stack's outputs."""
    outputs = {
        output["OutputKey"]: output["OutputValue"]
        for output in cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    found = []
    for lane in lanes:
        name = lane.capitalize()
        try:
            found.append(LaneQueues(lane, outputs[f"TaskQueueUrl{name}"], outputs[f"DeadLetterQueueUrl{name}"]))
        except KeyError as missing:
            raise SystemExit(f"stack {stack} has no output {missing}; is it an exports stack?") from None
    return found


def local_lane_queues(sqs: Any, lanes: Sequence[str]) -> list[LaneQueues]:
    """The lanes' queues by the names local mode gives them."""
    by_name = {lane.name: lane for lane in LANES}
    return [
        LaneQueues(
            lane,
            sqs.get_queue_url(QueueName=by_name[lane].queue_name)["QueueUrl"],
            sqs.get_queue_url(QueueName=by_name[lane].dlq_name)["QueueUrl"],
        )
        for lane in lanes
    ]


def waiting(sqs: Any, queue_url: str) -> int:
    """Approximate number of messages in ``queue_url`` (visible and in flight)."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def _arn(sqs: Any, queue_url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def start_move_task(sqs: Any, queues: LaneQueues, rate: int | None) -> str | None:
    """SQS's own redrive; None where the endpoint does not implement it."""
    request: dict[str, Any] = {"SourceArn": _arn(sqs, queues.dlq_url), "DestinationArn": _arn(sqs, queues.queue_url)}
    if rate:
        request["MaxNumberOfMessagesPerSecond"] = rate
    try:
        return str(sqs.start_message_move_task(**request)["TaskHandle"])
    except NotImplementedError:  # moto in-process
        return None
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if error.response.get("Error", {}).get("Code") in _UNSUPPORTED_CODES or status in (500, 501):
            return None
        raise


def _attributes(message: dict[str, Any]) -> dict[str, Any]:
    """A received message's attributes as ``SendMessage`` takes them."""
    keep = ("DataType", "StringValue", "BinaryValue")
    return {
        name: {key: value[key] for key in keep if key in value}
        for name, value in message.get("MessageAttributes", {}).items()
    }


def copy_back(sqs: Any, queues: LaneQueues, limit: int | None, wait_sec: int = 1) -> tuple[int, int]:
    """Move up to ``limit`` messages by receive, send, delete. Returns (moved, failed)."""
    moved = failed = 0
    while limit is None or moved + failed < limit:
        count = _BATCH if limit is None else min(_BATCH, limit - moved - failed)
        messages = sqs.receive_message(
            QueueUrl=queues.dlq_url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=wait_sec,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            break
        sent = sqs.send_message_batch(
            QueueUrl=queues.queue_url,
            Entries=[
                {"Id": str(n), "MessageBody": m["Body"], "MessageAttributes": _attributes(m)}
                for n, m in enumerate(messages)
            ],
        )
        done = [messages[int(entry["Id"])] for entry in sent.get("Successful", [])]
        if done:
            # Deleted only once sent: a crash here duplicates a message, never loses one.
            sqs.delete_message_batch(
                QueueUrl=queues.dlq_url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)],
            )
        moved += len(done)
        failed += len(sent.get("Failed", []))
        if sent.get("Failed"):
            break  # they stay in the DLQ (visible again in a minute); report and stop
    return moved, failed


def redrive(
    sqs: Any, lanes: Sequence[LaneQueues], *, dry_run: bool, copy: bool, limit: int | None, rate: int | None
) -> list[Moved]:
    """Redrive every lane's dead letters; what was done per lane."""
    report = []
    for queues in lanes:
        result = Moved(queues.lane, waiting(sqs, queues.dlq_url))
        report.append(result)
        if dry_run or result.waiting == 0:
            continue
        if not copy and limit is None:
            result.move_task = start_move_task(sqs, queues, rate)
            if result.move_task is not None:
                continue
        result.moved, result.failed = copy_back(sqs, queues, limit)
    return report


def _is_loopback(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def session(endpoint_url: str | None) -> boto3.session.Session:
    """Your credentials; for an endpoint on this machine (``make run``) any will do."""
    current = boto3.session.Session()
    if current.get_credentials() is None and _is_loopback(endpoint_url):
        return boto3.session.Session(
            aws_access_key_id="local", aws_secret_access_key="local", region_name=current.region_name or "us-east-1"
        )
    return current


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", help="the deployed stack (e.g. exports-dev): queues from its outputs")
    parser.add_argument("--endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL"), help="e.g. make run's")
    parser.add_argument("--lane", action="append", choices=[lane.name for lane in LANES], help="default: all")
    parser.add_argument("--max", type=int, dest="limit", help="move at most this many per lane (batch copy)")
    parser.add_argument("--rate", type=int, help="messages per second for SQS's move task")
    parser.add_argument("--copy", action="store_true", help="receive/send/delete even where SQS could move")
    parser.add_argument("--dry-run", action="store_true", help="only count the dead letters")
    args = parser.parse_args(argv)

    lanes = args.lane or [lane.name for lane in LANES]
    aws = session(args.endpoint_url)
    sqs = aws.client("sqs", endpoint_url=args.endpoint_url)
    try:
        if args.stack:
            queues = lane_queues_from_stack(
                aws.client("cloudformation", endpoint_url=args.endpoint_url), args.stack, lanes
            )
        else:
            queues = local_lane_queues(sqs, lanes)
        report = redrive(sqs, queues, dry_run=args.dry_run, copy=args.copy, limit=args.limit, rate=args.rate)
    except NoCredentialsError:
        print("no AWS credentials: configure them, or pass make run's --endpoint-url", file=sys.stderr)
        return 2
    for result in report:
        if args.dry_run or result.waiting == 0:
            print(f"{result.lane}: {result.waiting} dead-lettered")
        elif result.move_task:
            print(f"{result.lane}: {result.waiting} dead-lettered, SQS is moving them back (task {result.move_task})")
        else:
            print(f"{result.lane}: {result.waiting} dead-lettered, {result.moved} moved back, {result.failed} failed")
    return 1 if any(result.failed for result in report) else 0


if __name__ == "__main__":
    sys.exit(main())
