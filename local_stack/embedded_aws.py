"""An in-process moto server and the resources the CDK app would create, by the same names."""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
from boto3.dynamodb.types import TypeSerializer
from moto import backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.config import DefaultConfig
from moto.dynamodb.models import dynamodb_backends
from moto.server import ThreadedMotoServer
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

from exports.core.config.audit import AuditTable
from exports.core.config.env import Env
from exports.core.config.events import Events
from exports.core.config.fan_out import FanOut
from exports.core.config.names import Names
from exports.core.config.push import Push
from exports.core.config.queues import LANES, Queue
from exports.core.config.retry import MESSAGE_RETRY
from exports.core.config.tables import CustomersTable, DestinationsTable, OrdersTable, SchedulesTable, TaskTable
from exports.core.config.worker import Worker
from exports.core.workflows import fan_out_definition, lifecycle_definition, redelivery_definition
from local_stack import lambda_runtime, moto_item_responses, moto_transactions, thread_safety
from local_stack.lambda_runtime import HANDLER_MODULES
from local_stack.moto_patch import BOTOCORE, MOTO, CountedPatch

REGION = "us-east-1"
# The verified SES sender of local mode's run mail (the embedded SES keeps what is sent).
LOCAL_MAIL_SENDER = "reports@exports.localhost"
# The domains local mode mails (the demo tenants' and the banner's example; EXPORTS_MAIL_ALLOWED_DOMAINS
# replaces them): as on AWS, any other address is refused unless it is the caller's own verified one.
LOCAL_MAIL_ALLOWED_DOMAINS = "example.com,acme.example,globex.example,initech.example"
MOTO_CONFIG: DefaultConfig = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}


@dataclass(frozen=True)
class Resources:
    """Where the local resources are."""

    endpoint_url: str
    tasks_table: str
    orders_table: str
    queue_urls: dict[str, str]
    dlq_urls: dict[str, str]
    bucket: str
    state_machine_arn: str
    fan_out_state_machine_arn: str = ""
    # The workflow that tries a FAILED delivery again on request (docs/destinations.md).
    redelivery_state_machine_arn: str = ""
    customers_table: str = Names.CUSTOMERS_TABLE
    # The fan-out Map's MaxConcurrency and the worker's EXPORTS_MAX_PARTITIONS, as on AWS.
    max_partitions: int = FanOut.MAX_PARTITIONS_DEFAULT
    # The push channel's table, and the tasks table's stream that feeds the push function.
    connections_table: str = Names.CONNECTIONS_TABLE
    tasks_stream_arn: str = ""
    # Scheduled exports: the schedules table, the Scheduler group (moto stores its schedules,
    # local_stack.schedule_loop fires them), the schedule function, the role and the DLQ.
    schedules_table: str = Names.SCHEDULES_TABLE
    schedule_group: str = Names.SCHEDULE_GROUP
    schedule_target_arn: str = ""
    scheduler_role_arn: str = ""
    schedule_dlq_arn: str = ""
    mail_sender: str = LOCAL_MAIL_SENDER
    # The audit trail (docs/audit.md), fed by the tasks table's stream like the push function.
    audit_table: str = Names.AUDIT_TABLE
    mail_allowed_domains: str = LOCAL_MAIL_ALLOWED_DOMAINS
    # The lifecycle events' bus (docs/events.md), and the queue a rule copies every event to (what
    # a developer, or a test, reads them from).
    event_bus: str = Names.EVENT_BUS
    events_queue_url: str = ""
    # Delivery destinations (docs/destinations.md): their table, and the role the customers' S3
    # roles trust (here a role of the embedded account).
    destinations_table: str = Names.DESTINATIONS_TABLE
    destination_principal_arn: str = ""

    def function_environment(self) -> dict[str, str]:
        """The variables the CDK app gives the functions, pointing at the local resources."""
        return {
            Env.TASKS_TABLE: self.tasks_table,
            Env.ORDERS_TABLE: self.orders_table,
            Env.CUSTOMERS_TABLE: self.customers_table,
            Env.TASK_QUEUE_URLS: json.dumps(self.queue_urls),
            Env.RESULTS_BUCKET: self.bucket,
            Env.LIFECYCLE_STATE_MACHINE_ARN: self.state_machine_arn,
            Env.FAN_OUT_STATE_MACHINE_ARN: self.fan_out_state_machine_arn,
            Env.REDELIVERY_STATE_MACHINE_ARN: self.redelivery_state_machine_arn,
            Env.MAX_PARTITIONS: str(self.max_partitions),
            Env.CONNECTIONS_TABLE: self.connections_table,
            Env.SCHEDULES_TABLE: self.schedules_table,
            Env.SCHEDULE_GROUP: self.schedule_group,
            Env.SCHEDULE_TARGET_ARN: self.schedule_target_arn,
            Env.SCHEDULER_ROLE_ARN: self.scheduler_role_arn,
            Env.SCHEDULE_DLQ_ARN: self.schedule_dlq_arn,
            Env.MAIL_SENDER: self.mail_sender,
            Env.AUDIT_TABLE: self.audit_table,
            Env.MAIL_ALLOWED_DOMAINS: self.mail_allowed_domains,
            Env.EVENT_BUS: self.event_bus,
            Env.DESTINATIONS_TABLE: self.destinations_table,
            Env.DESTINATION_PRINCIPAL_ARN: self.destination_principal_arn,
        }


# moto's server lists its package's folders on every request, to match the host name against
# service names (about 7% of a local stack's CPU); they do not change while it runs.
LISTED_ONCE = CountedPatch(
    backends, "list_of_moto_modules", lambda original: functools.cache(lambda: tuple(original())), verified_on=MOTO
)

# Each botocore session parses botocore's JSON service models again with a loader of its own,
# and moto makes sessions of its own (a service's backend asks one for its regions), as does every
# test under mock_aws(): one loader per data path for the whole process parses each model once
# (json.loads was 8% of a local stack's CPU, and about a third of the in-process moto suites').
SHARED_LOADER = CountedPatch(botocore.session, "create_loader", functools.cache, verified_on=BOTOCORE)

# moto parses a new state machine's definition to validate it (some 30 ms with its ANTLR parser),
# and the in-process tests create the same two machines a couple of hundred times: a definition
# once accepted is accepted again (one refused is parsed, and refused, every time).
VALIDATED_ONCE = CountedPatch(
    StepFunctionsParserBackend,
    "_validate_definition",
    lambda original: staticmethod(functools.cache(original)),
    verified_on=MOTO,
)

# What makes an in-process moto cheaper, in local mode and for the whole test session alike
# (tests/conftest.py); the server adds LISTED_ONCE.
SPEED_UPS = (SHARED_LOADER, VALIDATED_ONCE, moto_transactions.ROLLBACK, moto_item_responses.JSON_ITEMS)


class EmbeddedAws:
    """A moto server on 127.0.0.1 (``port`` 0 picks a free one)."""

    def __init__(self, port: int = 0) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint_url = ""

    def start(self) -> str:
        """Start the server; every boto3 client made afterwards in this process talks to it."""
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        for patch in (LISTED_ONCE, *SPEED_UPS):
            patch.install()
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        # Run state machines for real, and Lambda functions without Docker (our handlers, in-process).
        request = urllib.request.Request(
            f"{self.endpoint_url}/moto-api/config",
            data=json.dumps(MOTO_CONFIG).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=10).close()
        lambda_runtime.install()
        thread_safety.install()  # after SPEED_UPS: it wraps the transactions installed above
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
        """Stop the server (nothing to do when it never started: start-up stopped before)."""
        if not self.endpoint_url:
            return
        self._server.stop()
        lambda_runtime.uninstall()
        thread_safety.uninstall()
        for patch in reversed((LISTED_ONCE, *SPEED_UPS)):
            patch.uninstall()


def client(service: str, endpoint_url: str) -> Any:
    """A client for the embedded AWS (untyped: local mode and the tests call every service)."""
    return boto3.client(
        service,  # type: ignore[call-overload]  # the stubs type only literal service names
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def put_items(table: str, items: Iterable[dict[str, Any]]) -> int:
    """Write ``items`` (plain Python values) straight into ``table`` of this process's moto: the
    embedded server's, or a test's ``mock_aws``. Returns how many were written. Demo data skips
    the server's HTTP API, moto's request parsing and its answers: about 4 ms an item that way,
    a tenth of it here."""
    serializer = TypeSerializer()
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION]
    written = 0
    with thread_safety.MOTO_DYNAMODB.lock:
        for item in items:
            backend.put_item(table, {name: serializer.serialize(value) for name, value in item.items()})
            written += 1
    return written


def create_resources(
    make_client: Callable[[str], Any], endpoint_url: str = "", max_partitions: int = FanOut.MAX_PARTITIONS_DEFAULT
) -> Resources:
    """Tables, queues, bucket and workflows as the CDK app defines them (keys, indexes, redrive;
    the fan-out Map runs at most ``max_partitions`` partitions at once).

    ``make_client`` builds a client by service name, so tests can use moto in-process."""
    dynamodb = make_client("dynamodb")
    _create_indexed_table(
        dynamodb,
        Names.TASKS_TABLE,
        TaskTable.PARTITION_KEY,
        TaskTable.USER_INDEX,
        TaskTable.USER_INDEX_PARTITION_KEY,
        TaskTable.USER_INDEX_SORT_KEY,
        # As the CDK app's: the push function reads the task writes from the stream.
        stream={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    stream_arn = dynamodb.describe_table(TableName=Names.TASKS_TABLE)["Table"]["LatestStreamArn"]
    dynamodb.create_table(
        TableName=Names.CONNECTIONS_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": Push.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": Push.SORT_KEY, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": Push.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": Push.SORT_KEY, "KeyType": "RANGE"},
        ],
    )
    dynamodb.update_time_to_live(
        TableName=Names.CONNECTIONS_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": Push.TTL_ATTRIBUTE},
    )
    dynamodb.update_time_to_live(
        TableName=Names.TASKS_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TaskTable.TTL_ATTRIBUTE},
    )
    _create_indexed_table(
        dynamodb,
        Names.ORDERS_TABLE,
        OrdersTable.PARTITION_KEY,
        OrdersTable.DAY_INDEX,
        OrdersTable.DAY_INDEX_PARTITION_KEY,
        OrdersTable.DAY_INDEX_SORT_KEY,
    )
    _create_indexed_table(
        dynamodb,
        Names.CUSTOMERS_TABLE,
        CustomersTable.PARTITION_KEY,
        CustomersTable.DAY_INDEX,
        CustomersTable.DAY_INDEX_PARTITION_KEY,
        CustomersTable.DAY_INDEX_SORT_KEY,
    )
    dynamodb.create_table(
        TableName=Names.AUDIT_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": AuditTable.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": AuditTable.SORT_KEY, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": AuditTable.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": AuditTable.SORT_KEY, "KeyType": "RANGE"},
        ],
    )
    dynamodb.update_time_to_live(
        TableName=Names.AUDIT_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": AuditTable.TTL_ATTRIBUTE},
    )
    create_destinations_table(dynamodb)
    principal = make_client("iam").create_role(
        RoleName=LOCAL_DELIVERY_ROLE, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []})
    )["Role"]["Arn"]
    sqs = make_client("sqs")
    queue_urls, dlq_urls = {}, {}
    for lane in LANES:
        dlq_urls[lane.name] = sqs.create_queue(
            QueueName=lane.dlq_name, Attributes={"MessageRetentionPeriod": str(Queue.DLQ_RETENTION_SEC)}
        )["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_urls[lane.name], AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MESSAGE_RETRY.attempts)}
        queue_urls[lane.name] = sqs.create_queue(
            QueueName=lane.queue_name,
            Attributes={
                "VisibilityTimeout": str(Queue.VISIBILITY_TIMEOUT_SEC),
                "MessageRetentionPeriod": str(Queue.RETENTION_SEC),
                "RedrivePolicy": json.dumps(redrive),
            },
        )["QueueUrl"]
    make_client("s3").create_bucket(Bucket=Names.RESULTS_BUCKET)
    state_machine_arn, fan_out_arn, redelivery_arn = _create_workflows(make_client, max_partitions)
    scheduling = _create_scheduling(make_client)
    events_queue_url = _create_event_bus(make_client)
    return Resources(
        endpoint_url=endpoint_url,
        tasks_table=Names.TASKS_TABLE,
        orders_table=Names.ORDERS_TABLE,
        queue_urls=queue_urls,
        dlq_urls=dlq_urls,
        bucket=Names.RESULTS_BUCKET,
        state_machine_arn=state_machine_arn,
        fan_out_state_machine_arn=fan_out_arn,
        redelivery_state_machine_arn=redelivery_arn,
        max_partitions=max_partitions,
        tasks_stream_arn=stream_arn,
        events_queue_url=events_queue_url,
        destination_principal_arn=principal,
        **scheduling,
    )


# The role file deliveries run as locally: the principal of an S3 destination's trust policy.
LOCAL_DELIVERY_ROLE = "exports-delivery-local"


def create_destinations_table(dynamodb: Any, name: str = Names.DESTINATIONS_TABLE) -> None:
    """The destinations table (docs/destinations.md): the tenant's partition, the destination's
    id (or its count) as the sort key."""
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": DestinationsTable.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": DestinationsTable.SORT_KEY, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": DestinationsTable.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": DestinationsTable.SORT_KEY, "KeyType": "RANGE"},
        ],
    )


def _create_event_bus(make_client: Callable[[str], Any]) -> str:
    """The lifecycle events' bus, and a rule that copies every event of ours to a queue (moto
    delivers matched events to SQS targets); the queue's URL."""
    sqs = make_client("sqs")
    queue_url = sqs.create_queue(QueueName=Names.EVENTS_QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events = make_client("events")
    events.create_event_bus(Name=Names.EVENT_BUS)
    events.put_rule(
        Name=Names.EVENTS_QUEUE,
        EventBusName=Names.EVENT_BUS,
        EventPattern=json.dumps({"source": [Events.SOURCE]}),
        State="ENABLED",
    )
    events.put_targets(
        Rule=Names.EVENTS_QUEUE, EventBusName=Names.EVENT_BUS, Targets=[{"Id": "local-queue", "Arn": queue_arn}]
    )
    return str(queue_url)


def _create_indexed_table(
    dynamodb: Any,
    name: str,
    partition_key: str,
    index: str,
    index_partition_key: str,
    index_sort_key: str,
    stream: dict[str, Any] | None = None,
) -> None:
    """An on-demand table keyed by ``partition_key`` with one index (all attributes projected)."""
    keys = dict.fromkeys((partition_key, index_partition_key, index_sort_key), "S")
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": kind} for key, kind in keys.items()],
        KeySchema=[{"AttributeName": partition_key, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": index_partition_key, "KeyType": "HASH"},
                    {"AttributeName": index_sort_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        **({"StreamSpecification": stream} if stream else {}),
    )


def _create_scheduling(make_client: Callable[[str], Any]) -> dict[str, str]:
    """The schedules table (keys, user index, TTL as the CDK app's), the Scheduler group, the
    role Scheduler would assume, the target's DLQ, and the verified SES sender."""
    dynamodb = make_client("dynamodb")
    keys = dict.fromkeys(
        (
            SchedulesTable.PARTITION_KEY,
            SchedulesTable.SORT_KEY,
            SchedulesTable.USER_INDEX_PARTITION_KEY,
            SchedulesTable.USER_INDEX_SORT_KEY,
        ),
        "S",
    )
    dynamodb.create_table(
        TableName=Names.SCHEDULES_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": kind} for key, kind in keys.items()],
        KeySchema=[
            {"AttributeName": SchedulesTable.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SchedulesTable.SORT_KEY, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": SchedulesTable.USER_INDEX,
                "KeySchema": [
                    {"AttributeName": SchedulesTable.USER_INDEX_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": SchedulesTable.USER_INDEX_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    dynamodb.update_time_to_live(
        TableName=Names.SCHEDULES_TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": SchedulesTable.TTL_ATTRIBUTE},
    )
    make_client("scheduler").create_schedule_group(Name=Names.SCHEDULE_GROUP)
    role = make_client("iam").create_role(
        RoleName="exports-scheduler-local",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    sqs = make_client("sqs")
    dlq_url = sqs.create_queue(QueueName=Names.SCHEDULE_DLQ)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    make_client("ses").verify_email_identity(EmailAddress=LOCAL_MAIL_SENDER)
    target = make_client("lambda").get_function(FunctionName=Names.SCHEDULE_FUNCTION)["Configuration"]["FunctionArn"]
    return {"schedule_target_arn": target, "scheduler_role_arn": role, "schedule_dlq_arn": dlq_arn}


def _create_workflows(make_client: Callable[[str], Any], max_partitions: int) -> tuple[str, str, str]:
    """The functions the workflows invoke and the lifecycle, fan-out and redelivery workflows themselves,
    from the shared definitions (moto runs the fan-out's Distributed Map too)."""
    role = make_client("iam").create_role(
        RoleName="exports-local",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        # moto wants code; what runs is ours (local_stack.lambda_runtime).
        archive.writestr("handler.py", "def lambda_handler(event, context):\n    return event\n")
    lambda_client = make_client("lambda")
    arns = {}
    for name in HANDLER_MODULES:
        arns[name] = lambda_client.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="handler.lambda_handler",
            Code={"ZipFile": code.getvalue()},
            Timeout=Worker.FUNCTION_TIMEOUT_SEC,
        )["FunctionArn"]
    definitions = {
        Names.LIFECYCLE_STATE_MACHINE: lifecycle_definition(
            arns[Names.LIFECYCLE_FUNCTION], arns[Names.CALLBACK_FUNCTION]
        ),
        Names.FAN_OUT_STATE_MACHINE: fan_out_definition(arns[Names.WORKER_FUNCTION], max_partitions),
        Names.REDELIVERY_STATE_MACHINE: redelivery_definition(arns[Names.CALLBACK_FUNCTION]),
    }
    lifecycle, fan_out, redelivery = (
        make_client("stepfunctions").create_state_machine(name=name, definition=json.dumps(body), roleArn=role)[
            "stateMachineArn"
        ]
        for name, body in definitions.items()
    )
    return lifecycle, fan_out, redelivery
