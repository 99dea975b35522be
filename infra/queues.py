"""SQS: the task queue and its dead-letter queue, encrypted and reachable over TLS only."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from exports.config import Queue


class TaskQueues(Construct):
    """Tasks wait here for the worker; messages that keep crashing it end in the DLQ."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
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
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=Queue.MAX_RECEIVE_COUNT, queue=self.dead_letters),
        )
