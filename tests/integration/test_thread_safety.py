"""Local mode's serialised shared state (``local_stack.thread_safety``): with it, conditional
writes from many threads behave as DynamoDB's do, and invocations flushing metrics at once do
not fail; uninstalling gives the classes their own methods back."""

import sys
import threading
import warnings
from collections.abc import Callable, Iterator

import boto3
import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from moto import mock_aws

from local_stack import thread_safety
from local_stack.embedded_aws import REGION

THREADS = 6


@pytest.fixture
def serialised() -> Iterator[None]:
    thread_safety.install()
    yield
    thread_safety.uninstall()


def run_in_threads(work: Callable[[], None]) -> list[BaseException]:
    """``work`` in THREADS threads started together; what they raised."""
    start = threading.Barrier(THREADS)
    raised: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            work()
        except Exception as error:
            raised.append(error)

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return raised


@pytest.fixture
def counter_table() -> Iterator[str]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="counters",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.put_item(TableName="counters", Item={"id": {"S": "c"}, "version": {"N": "0"}})
        yield "counters"


def test_every_conditional_write_that_succeeds_counts_once(counter_table: str, serialised: None) -> None:
    """Read the version, write version + 1 on condition that it is unchanged: with DynamoDB's
    atomicity the final version is exactly the number of successful writes."""
    successes: list[int] = []

    def bump() -> None:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        for _ in range(60):
            seen = dynamodb.get_item(TableName=counter_table, Key={"id": {"S": "c"}})["Item"]["version"]["N"]
            try:
                dynamodb.update_item(
                    TableName=counter_table,
                    Key={"id": {"S": "c"}},
                    UpdateExpression="SET version = :next",
                    ConditionExpression="version = :seen",
                    ExpressionAttributeValues={":seen": {"N": seen}, ":next": {"N": str(int(seen) + 1)}},
                )
                successes.append(1)
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass

    assert run_in_threads(bump) == []
    final = boto3.client("dynamodb", region_name=REGION).get_item(TableName=counter_table, Key={"id": {"S": "c"}})
    assert int(final["Item"]["version"]["N"]) == len(successes) > 0


def test_reads_never_see_an_item_while_another_thread_adds_to_it(counter_table: str, serialised: None) -> None:
    """moto serialises a read's answer after its backend returned the live item: a write adding
    an attribute meanwhile made the read raise ``dictionary changed size during iteration``
    (seen in the fault-injection run in CI)."""

    def read_and_grow() -> None:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        key, names = {"id": {"S": "c"}}, {"#attribute": threading.current_thread().name.replace("-", "_")}
        for _ in range(80):
            dynamodb.get_item(TableName=counter_table, Key=key)
            dynamodb.update_item(
                TableName=counter_table,
                Key=key,
                UpdateExpression="SET #attribute = :one",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
            dynamodb.update_item(
                TableName=counter_table, Key=key, UpdateExpression="REMOVE #attribute", ExpressionAttributeNames=names
            )

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: the race needs no luck
    try:
        assert run_in_threads(read_and_grow) == []
    finally:
        sys.setswitchinterval(switch)


def test_invocations_flushing_metrics_at_once_do_not_fail(serialised: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Each thread plays an invocation that records a metric and flushes at its end, as
    ``@metrics.log_metrics`` does; Powertools shares the metric set across the process."""
    metrics = Metrics(namespace="Test", service="threads")

    def invoke_repeatedly() -> None:
        for _ in range(300):
            metrics.add_metric(name="Handled", unit=MetricUnit.Count, value=1)
            metrics.flush_metrics()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: the race needs no luck
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invocation whose metric another one flushed has none
            assert run_in_threads(invoke_repeatedly) == []
    finally:
        sys.setswitchinterval(switch)
    printed = [line for line in capsys.readouterr().out.splitlines() if '"Handled"' in line]
    assert printed


def test_installing_twice_wraps_once_and_the_last_uninstall_restores_the_classes() -> None:
    originals = {
        (methods.owner, name): getattr(methods.owner, name)
        for methods in thread_safety.SHARED_STATE
        for name in methods.names
    }
    thread_safety.install()
    thread_safety.install()
    try:
        for (owner, name), original in originals.items():
            assert getattr(owner, name).__wrapped__ is original  # wrapped once, not twice
        thread_safety.uninstall()
        assert all(getattr(owner, name).__wrapped__ is original for (owner, name), original in originals.items())
    finally:
        thread_safety.uninstall()
    assert all(getattr(owner, name) is original for (owner, name), original in originals.items())
