"""SQS: one task queue per priority lane, each with its own dead-letter queue, encrypted and
reachable over TLS only.

The lanes (names, the priorities each serves, each one's share of the workers) are
:data:`exports.core.config.queues.LANES`; the functions find the queues through ``Env.TASK_QUEUE_URLS``, a
JSON object of lane name to queue URL (:meth:`TaskQueues.urls_json`).
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from exports.core.config.queues import LANES, Lane, Queue
from exports.core.config.retry import MESSAGE_RETRY


def lane_id(lane: Lane) -> str:
    """The lane's name as construct ids, alarm names and output names spell it (``High``)."""
    return lane.name.capitalize()


class LaneQueues(Construct):
    """One lane: its tasks wait here for the worker; messages that keep crashing it end in the DLQ."""

    def __init__(self, scope: Construct, construct_id: str, *, lane: Lane) -> None:
        super().__init__(scope, construct_id)
        self.lane = lane
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.seconds(Queue.DLQ_RETENTION_SEC),
        )
        self.queue = sqs.Queue(
            self,
            "Tasks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(Queue.VISIBILITY_TIMEOUT_SEC),
            retention_period=Duration.seconds(Queue.RETENTION_SEC),
            receive_message_wait_time=Duration.seconds(Queue.LONG_POLL_SEC),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=MESSAGE_RETRY.attempts, queue=self.dead_letters),
        )


class TaskQueues(Construct):
    """The queues of every priority lane, in the order of :data:`exports.core.config.queues.LANES`."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.lanes: tuple[LaneQueues, ...] = tuple(LaneQueues(self, lane_id(lane), lane=lane) for lane in LANES)

    @property
    def task_queues(self) -> list[sqs.IQueue]:
        """Every lane's task queue (not the dead-letter queues)."""
        return [lane.queue for lane in self.lanes]

    def urls_json(self) -> str:
        """``{lane name: queue URL}`` as JSON, the value of ``Env.TASK_QUEUE_URLS``; CloudFormation
        fills in the URLs."""
        return Stack.of(self).to_json_string({lane.lane.name: lane.queue.queue_url for lane in self.lanes})
