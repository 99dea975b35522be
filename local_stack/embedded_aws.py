"""An in-process moto server and the resources the CDK app would create, by the same names."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from exports.config import Env, Names, OrdersTable, Queue, TaskTable

REGION = "us-east-1"


@dataclass(frozen=True)
class Resources:
    """Where the local resources are."""

    endpoint_url: str
    tasks_table: str
    orders_table: str
    queue_url: str
    dlq_url: str
    bucket: str

    def function_environment(self) -> dict[str, str]:
        """The variables the CDK app gives the functions, pointing at the local resources."""
        return {
            Env.TASKS_TABLE: self.tasks_table,
            Env.ORDERS_TABLE: self.orders_table,
            Env.TASK_QUEUE_URL: self.queue_url,
            Env.RESULTS_BUCKET: self.bucket,
        }


class EmbeddedAws:
    """A moto server on 127.0.0.1 (``port`` 0 picks a free one)."""

    def __init__(self, port: int = 0) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint_url = ""

    def start(self) -> str:
        """Start the server; every boto3 client made afterwards in this process talks to it."""
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        os.environ.update(
            {
                "AWS_ENDPOINT_URL": self.endpoint_url,
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
                "AWS_DEFAULT_REGION": REGION,
                "AWS_REGION": REGION,
                # Step Functions tasks in moto call back into the server on this port.
                "MOTO_PORT": str(port),
            }
        )
        return self.endpoint_url

    def stop(self) -> None:
        """Stop the server."""
        self._server.stop()


def client(service: str, endpoint_url: str) -> Any:
    """A client for the embedded AWS."""
    return boto3.client(
        service,
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def create_resources(make_client: Callable[[str], Any], endpoint_url: str = "") -> Resources:
    """Tables, queues and bucket as the CDK app defines them (keys, indexes, redrive).

    ``make_client`` builds a client by service name, so tests can use moto in-process."""
    dynamodb = make_client("dynamodb")
    dynamodb.create_table(
        TableName=Names.TASKS_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": TaskTable.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": TaskTable.USER_INDEX_PARTITION_KEY, "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": TaskTable.PARTITION_KEY, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": TaskTable.USER_INDEX,
                "KeySchema": [
                    {"AttributeName": TaskTable.USER_INDEX_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": TaskTable.USER_INDEX_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    dynamodb.update_time_to_live(
        TableName=Names.TASKS_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TaskTable.TTL_ATTRIBUTE},
    )
    dynamodb.create_table(
        TableName=Names.ORDERS_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": OrdersTable.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": OrdersTable.DAY_INDEX_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": OrdersTable.DAY_INDEX_SORT_KEY, "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": OrdersTable.PARTITION_KEY, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": OrdersTable.DAY_INDEX,
                "KeySchema": [
                    {"AttributeName": OrdersTable.DAY_INDEX_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": OrdersTable.DAY_INDEX_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    sqs = make_client("sqs")
    dlq_url = sqs.create_queue(
        QueueName=Names.TASK_DLQ, Attributes={"MessageRetentionPeriod": str(Queue.DLQ_RETENTION_SEC)}
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue_url = sqs.create_queue(
        QueueName=Names.TASK_QUEUE,
        Attributes={
            "VisibilityTimeout": str(Queue.VISIBILITY_TIMEOUT_SEC),
            "MessageRetentionPeriod": str(Queue.RETENTION_SEC),
            "RedrivePolicy": f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{Queue.MAX_RECEIVE_COUNT}"}}',
        },
    )["QueueUrl"]
    make_client("s3").create_bucket(Bucket=Names.RESULTS_BUCKET)
    return Resources(
        endpoint_url=endpoint_url,
        tasks_table=Names.TASKS_TABLE,
        orders_table=Names.ORDERS_TABLE,
        queue_url=queue_url,
        dlq_url=dlq_url,
        bucket=Names.RESULTS_BUCKET,
    )
