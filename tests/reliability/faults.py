"""Fault injection through botocore's event hooks on the service's own clients, and the pieces
that play SQS's event source in a test: receive, build the event, acknowledge or let go.

Faults are raised where the SDK would raise them: a throttling ``ClientError`` from the call
itself (after the SDK's own retries, which a hook on ``before-parameter-build`` skips), a plain
exception for a worker that crashes mid-export, and :class:`WorkerDied` for a process that stops
dead (a Lambda timeout or an out-of-memory kill): nothing after that point runs, not even the
batch's answer. Only the context that armed the faults is hit (its thread, and the threads that
run in a copy of its context: the worker's part sender, exports.running.writers.part_sender), so the
workflow's background threads (lifecycle and callback functions run by moto's Step Functions)
behave, and a seed replays the same fault plan.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.exceptions import ClientError
from types_boto3_sqs.type_defs import MessageTypeDef

from exports.core.aws.clients import aws_client
from exports.core.config.queues import LANES
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from local_stack.worker_loop import to_sqs_event
from tests.builders import FakeContext

# The botocore service ids (event names) of the services the functions use.
SERVICES = {"dynamodb": "dynamodb", "s3": "s3", "sqs": "sqs", "stepfunctions": "sfn"}
THROTTLE_CODES = {
    "dynamodb": "ProvisionedThroughputExceededException",
    "s3": "SlowDown",
    "sqs": "RequestThrottled",
    "sfn": "ThrottlingException",
}


class WorkerDied(BaseException):
    """The worker process stopped here; nothing after this point ran."""


class InjectedCrash(RuntimeError):
    """An unforeseen exception inside the worker (a bug, a corrupt row, a library fault)."""


def throttling_error(service: str, operation: str) -> ClientError:
    """What the SDK raises once its own retries of a throttled call are spent."""
    code = THROTTLE_CODES[service]
    status = 503 if service == "s3" else 400
    return ClientError(
        {
            "Error": {"Code": code, "Message": "Rate exceeded (injected)"},
            "ResponseMetadata": {
                "RequestId": "",
                "HostId": "",
                "HTTPStatusCode": status,
                "HTTPHeaders": {},
                "RetryAttempts": 0,
            },
        },
        operation,
    )


Predicate = Callable[[str, str, dict[str, Any]], bool]
Action = Callable[[str, str, dict[str, Any]], None]


@dataclass
class _OneShot:
    service: str
    operation: str
    action: Action
    when: Predicate = lambda service, operation, params: True
    fired: bool = False


@dataclass
class Faults:
    """Decides, call by call, whether an AWS call of the armed context fails."""

    rng: random.Random
    throttle_rate: float = 0.0
    # (service, operation) pairs never throttled (e.g. a lost SendTaskSuccess only costs time).
    spared: frozenset[tuple[str, str]] = frozenset()
    injected: Counter = field(default_factory=Counter)
    compressed_delays: list[int] = field(default_factory=list)
    _one_shots: list[_OneShot] = field(default_factory=list)
    _suspended: bool = False

    def install(self) -> None:
        """Arm the current context; hook the shared clients (the ones every handler uses)."""
        _ARMED.set(self)
        for service, event_service in SERVICES.items():
            events = aws_client(service).meta.events
            events.register(f"before-parameter-build.{event_service}", self._before_call)
        # Delays (retry backoff, deferral, hand-over) are compressed: the test decides the order.
        aws_client("sqs").meta.events.register("before-parameter-build.sqs.SendMessage", self._no_delay)

    def once(self, service: str, operation: str, action: Action, when: Predicate | None = None) -> None:
        """Run ``action`` at the next matching call of the armed thread (before the call is made)."""
        shot = _OneShot(SERVICES[service], operation, action)
        if when is not None:
            shot.when = when
        self._one_shots.append(shot)

    def disarm(self) -> None:
        """Forget one-shot actions that did not fire."""
        self._one_shots.clear()

    @contextmanager
    def throttling(self, rate: float) -> Iterator[None]:
        """Throttle calls of the armed thread at ``rate`` while the block runs."""
        before, self.throttle_rate = self.throttle_rate, rate
        try:
            yield
        finally:
            self.throttle_rate = before

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """No faults while the block runs (e.g. a concurrent actor played on the same thread)."""
        before, self._suspended = self._suspended, True
        try:
            yield
        finally:
            self._suspended = before

    def _no_delay(self, params: dict[str, Any], **_: Any) -> None:
        delay = params.get("DelaySeconds", 0)
        if delay:
            self.compressed_delays.append(delay)
            params["DelaySeconds"] = 0

    def _before_call(self, params: dict[str, Any], model: Any, event_name: str, **_: Any) -> None:
        if self._suspended or _ARMED.get() is not self:
            return
        service, operation = event_name.split(".")[1], model.name
        for shot in self._one_shots:
            matches = not shot.fired and (shot.service, shot.operation) == (service, operation)
            if matches and shot.when(service, operation, params):
                shot.fired = True
                self.injected[f"{getattr(shot.action, '__name__', 'action')}:{service}.{operation}"] += 1
                with self.suspended():
                    shot.action(service, operation, params)
                break  # one action per call: queued actions for the same call fire on later calls
        if self.throttle_rate and (service, operation) not in self.spared and self.rng.random() < self.throttle_rate:
            self.injected[f"throttle:{service}.{operation}"] += 1
            raise throttling_error(service, operation)


# The faults armed in a context (Faults.install): a thread started plainly has none.
_ARMED: ContextVar[Faults | None] = ContextVar("armed_faults", default=None)


def crash(service: str, operation: str, params: dict[str, Any]) -> None:
    """A one-shot action: the worker code blows up here."""
    raise InjectedCrash(f"injected crash before {service}.{operation}")


def die(service: str, operation: str, params: dict[str, Any]) -> None:
    """A one-shot action: the process stops here."""
    raise WorkerDied(f"worker died before {service}.{operation}")


def throttle(service: str, operation: str, params: dict[str, Any]) -> None:
    """A one-shot action: this call is throttled."""
    raise throttling_error(service, operation)


@dataclass
class Receipt:
    """What became of one invocation of the worker."""

    messages: list[MessageTypeDef]
    failed: set[str]
    died: bool = False


class Lanes:
    """The lanes' queues seen from the event source: receive, invoke the worker, acknowledge."""

    def __init__(self, resources: Resources) -> None:
        # Not the shared client: the harness's own calls are never faulted.
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.urls = dict(resources.queue_urls)
        self.dlq_urls = dict(resources.dlq_urls)
        self.arns = {
            lane: self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            for lane, url in self.urls.items()
        }

    def receive(self, lane: str, count: int = 1, visibility_sec: int = 600) -> list[MessageTypeDef]:
        """Up to ``count`` messages, invisible for ``visibility_sec`` (0: visible again at once)."""
        return self.sqs.receive_message(
            QueueUrl=self.urls[lane],
            MaxNumberOfMessages=count,
            VisibilityTimeout=visibility_sec,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])

    def invoke(self, lane: str, messages: list[MessageTypeDef]) -> Receipt:
        """Run the worker function on ``messages`` as the SQS event source would."""
        event = to_sqs_event(messages, self.arns[lane], REGION)
        try:
            result = worker.lambda_handler(event, FakeContext())
        except BatchProcessingError:
            # Every record failed: Lambda reports the invocation as failed, SQS redelivers them all.
            return Receipt(messages, {m["MessageId"] for m in messages})
        except WorkerDied:
            return Receipt(messages, {m["MessageId"] for m in messages}, died=True)
        return Receipt(messages, {item["itemIdentifier"] for item in result.get("batchItemFailures", [])})

    def settle(self, lane: str, receipt: Receipt, acknowledge: bool = True) -> None:
        """Delete what succeeded; what failed (or everything, unacknowledged) is visible again at once,
        as if its visibility timeout had passed."""
        for message in receipt.messages:
            if acknowledge and message["MessageId"] not in receipt.failed:
                self.sqs.delete_message(QueueUrl=self.urls[lane], ReceiptHandle=message["ReceiptHandle"])
            else:
                self.sqs.change_message_visibility(
                    QueueUrl=self.urls[lane], ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )

    def depth(self, dead_letters: bool = False) -> int:
        """Messages in the lanes (or their DLQs), visible or in flight."""
        total = 0
        for url in (self.dlq_urls if dead_letters else self.urls).values():
            attributes = self.sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
            total += sum(int(value) for value in attributes.values())
        return total

    def dead_letters(self, lane: str) -> list[MessageTypeDef]:
        """Every message in the lane's DLQ (received with visibility 0, so they stay there)."""
        found: dict[str, MessageTypeDef] = {}
        for _ in range(10):
            for message in self.sqs.receive_message(
                QueueUrl=self.dlq_urls[lane], MaxNumberOfMessages=10, VisibilityTimeout=0, AttributeNames=["All"]
            ).get("Messages", []):
                found[message["MessageId"]] = message
        return list(found.values())


LANE_NAMES = tuple(lane.name for lane in LANES)
