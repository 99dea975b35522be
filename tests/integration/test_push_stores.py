"""The push channel's stores on moto, and the push function fed from the tasks table's real
stream (moto keeps it): tickets are single use and expire, subscriptions find their
connections, a gone connection is forgotten, another user's connection gets nothing."""

import os
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from exports.core.aws.dynamodb_tasks import DynamoTaskRepository
from exports.core.config.names import Names
from exports.core.task import claim, record_progress
from exports.push.dynamodb_connections import DynamoConnections, DynamoTickets
from exports.push.model import ConnectionGone, Subscription, Viewer
from exports.push.service import PushDependencies
from functions.push.handler import handle
from local_stack.embedded_aws import REGION
from tests.integration.conftest import STREAMS_ENDPOINT
from tests.unit.builders import LEASE, make_task

NOW = datetime.now(UTC)
ALICE = Viewer("alice", {"sub": "alice"})
BOB = Viewer("bob", {"sub": "bob"})


class RecordingPoster:
    """Keeps what it was given; connections named in ``gone`` are gone."""

    def __init__(self, gone=()):
        self.posts = []
        self.gone = set(gone)

    def post(self, connection_id, message):
        if connection_id in self.gone:
            raise ConnectionGone(connection_id)
        self.posts.append((connection_id, message))


@pytest.fixture
def dynamodb(aws):
    return boto3.client("dynamodb", region_name=REGION)


def test_a_ticket_is_used_once(dynamodb):
    tickets = DynamoTickets(dynamodb, Names.CONNECTIONS_TABLE)
    tickets.issue("t1", ALICE, NOW, 60)
    assert tickets.redeem("t1", NOW) == ALICE
    assert tickets.redeem("t1", NOW) is None
    assert tickets.redeem("never-issued", NOW) is None


def test_an_expired_ticket_is_refused_though_ttl_has_not_deleted_it(dynamodb):
    tickets = DynamoTickets(dynamodb, Names.CONNECTIONS_TABLE)
    tickets.issue("t2", ALICE, NOW, 60)
    assert tickets.redeem("t2", NOW + timedelta(seconds=61)) is None


def test_the_table_holds_no_usable_ticket(dynamodb):
    DynamoTickets(dynamodb, Names.CONNECTIONS_TABLE).issue("secret-ticket", ALICE, NOW, 60)
    items = dynamodb.scan(TableName=Names.CONNECTIONS_TABLE)["Items"]
    assert "secret-ticket" not in str(items)


def test_subscribers_and_close(dynamodb):
    connections = DynamoConnections(dynamodb, Names.CONNECTIONS_TABLE)
    task = make_task()
    connections.open("c1", ALICE, NOW)
    connections.open("c2", ALICE, NOW)
    connections.subscribe(Subscription("c1", ALICE, task.task_id), NOW)
    connections.subscribe(Subscription("c2", ALICE, None), NOW)
    assert sorted(s.connection_id for s in connections.subscribers(task)) == ["c1", "c2"]
    connections.close("c1")
    assert [s.connection_id for s in connections.subscribers(task)] == ["c2"]
    assert connections.viewer("c1") is None
    connections.unsubscribe("c2", None)
    assert connections.subscribers(task) == []


def stream_records(dynamodb_streams, stream_arn, iterator):
    page = dynamodb_streams.get_records(ShardIterator=iterator)
    return page["Records"]


def test_the_push_function_sends_task_writes_to_the_owner_and_forgets_gone_connections(aws, dynamodb):
    from local_stack.stream_poller import as_lambda_record, is_task_record

    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)
    shard = streams.describe_stream(StreamArn=aws.tasks_stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=aws.tasks_stream_arn, ShardId=shard, ShardIteratorType="LATEST")[
        "ShardIterator"
    ]
    connections = DynamoConnections(dynamodb, Names.CONNECTIONS_TABLE)
    for connection, viewer in (("alice-1", ALICE), ("alice-gone", ALICE), ("bob-1", BOB)):
        connections.open(connection, viewer, NOW)
        connections.subscribe(Subscription(connection, viewer, None), NOW)
    # Given a task created, claimed and making progress (three conditional writes)
    tasks = DynamoTaskRepository(dynamodb, Names.TASKS_TABLE)
    task = make_task(created_at=NOW, expires_at=NOW + timedelta(hours=1))
    tasks.create(task, max_active=5)
    running = claim(task, NOW, LEASE)
    tasks.update(task, running)
    tasks.record_progress(record_progress(running, 10, 5, NOW, LEASE))
    records = [
        as_lambda_record(r, aws.tasks_stream_arn) for r in stream_records(streams, aws.tasks_stream_arn, iterator)
    ]
    task_records = [record for record in records if is_task_record(record)]
    assert len(task_records) == 3  # the quota counter's writes are filtered out
    poster = RecordingPoster(gone={"alice-gone"})
    from exports.core.aws.s3_results import S3ResultStore
    from exports.core.config.settings import PushSettings
    from exports.export_types.registry import ExportTypeRegistry
    from exports.push.task_stream import DynamoTaskVersions
    from tests.unit.export_fakes import FakeMetrics

    deps = PushDependencies(
        settings=PushSettings.from_env(os.environ),
        connections=connections,
        tickets=DynamoTickets(dynamodb, Names.CONNECTIONS_TABLE),
        tasks=DynamoTaskVersions(dynamodb, Names.TASKS_TABLE),
        poster=poster,
        results=S3ResultStore(boto3.client("s3", region_name=REGION), aws.bucket),
        registry=ExportTypeRegistry([]),
        metrics=FakeMetrics(),
    )
    # When the push function gets the batch
    assert handle(task_records, deps) == {"batchItemFailures": []}
    # Then alice's live connection got pending, running, progress with seq 1, 2, 3; bob nothing
    assert {connection for connection, _ in poster.posts} == {"alice-1"}
    assert [(m["type"], m["seq"]) for _, m in poster.posts] == [
        ("export.pending", 1),
        ("export.running", 2),
        ("export.progress", 3),
    ]
    # and the gone connection is forgotten
    assert connections.viewer("alice-gone") is None
