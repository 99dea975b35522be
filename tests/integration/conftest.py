"""moto in-process with the same resources local mode and the CDK app define."""

import functools
import time
from collections.abc import Iterator
from datetime import date

import boto3
import pytest
from moto import mock_aws
from types_boto3_stepfunctions.type_defs import ExecutionListItemTypeDef

from exports.core.aws.clients import aws_client
from exports.core.config.env import Env
from exports.core.status import TERMINAL, TaskStatus
from functions.audit import handler as audit
from functions.callback import handler as callback
from functions.lifecycle import handler as lifecycle
from functions.schedule import handler as schedule
from functions.submit import handler as api
from functions.worker import handler as worker
from local_stack import lambda_runtime, thread_safety
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import MOTO_CONFIG, REGION, Resources, create_resources, put_items
from tests.builders import FakeContext
from tests.stack_process import WEBHOOK_SECRET

SEED_DAY = date(2025, 3, 31)
SEED_ORDERS = 400
# moto answers DynamoDB Streams calls on the service's classic host name only.
STREAMS_ENDPOINT = f"https://streams.dynamodb.{REGION}.amazonaws.com"


def _clear_caches() -> None:
    aws_client.cache_clear()
    for function in (api, worker, lifecycle, callback, schedule, audit):
        function.dependencies.cache_clear()
    # Built on the API's dependencies: rebuilt with them.
    api.schedule_dependencies.cache_clear()
    api.destination_dependencies.cache_clear()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resources]:
    """Fresh tables, queues and bucket in moto; handlers rebuilt against them."""
    with mock_aws():
        resources = create_resources(functools.partial(boto3.client, region_name=REGION))
        for name, value in resources.function_environment().items():
            monkeypatch.setenv(name, value)
        _clear_caches()
        yield resources
        _clear_caches()


@pytest.fixture
def orders(aws: Resources) -> Resources:
    """The demo orders (90 days up to SEED_DAY) in the orders table."""
    put_items(aws.orders_table, demo_orders(SEED_ORDERS, SEED_DAY))
    return aws


RETRY_TIME_SCALE = 0.05


class CompressedRetryClock:
    """Step Functions Retry sleeps and Wait states, recorded at full length and slept 20x shorter."""

    def __init__(self) -> None:
        self.intervals: list[float] = []
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.intervals.append(seconds)
        time.sleep(seconds * RETRY_TIME_SCALE)

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds * RETRY_TIME_SCALE)


@pytest.fixture
def retry_clock(monkeypatch: pytest.MonkeyPatch) -> CompressedRetryClock:
    """Compress the workflow's retry and Wait states' waits (test harness only: the definition
    is unchanged)."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

    clock = CompressedRetryClock()
    monkeypatch.setattr(retrier_decl, "time", clock)
    monkeypatch.setattr(WaitFunction, "_wait_interval", lambda self, env, wait_seconds: clock.wait(wait_seconds))
    return clock


@pytest.fixture
def running_aws(monkeypatch: pytest.MonkeyPatch, retry_clock: CompressedRetryClock) -> Iterator[Resources]:
    """Like ``aws``, but state machines execute and Lambda functions run our handlers."""
    with mock_aws(config=MOTO_CONFIG):
        lambda_runtime.install()
        # The workflow runs our functions in moto's threads, next to the test's own: serialise the
        # process's shared state, as the local stack does.
        serialise_shared_state(monkeypatch)
        try:
            resources = create_resources(functools.partial(boto3.client, region_name=REGION))
            for name, value in resources.function_environment().items():
                monkeypatch.setenv(name, value)
            monkeypatch.setenv(Env.WEBHOOK_SECRET, WEBHOOK_SECRET)
            monkeypatch.setenv(Env.ALLOW_LOCAL_CALLBACKS, "true")
            _clear_caches()
            yield resources
            _wait_for_executions(resources)
        finally:
            lambda_runtime.uninstall()
            _clear_caches()


def _wait_for_executions(resources: Resources, grace_sec: float = 3, limit_sec: float = 30) -> None:
    """Executions run in threads; let them end before the mock goes away. One still running after
    ``grace_sec`` waits for a task the test left unended (its deadline may be an hour away): that
    task is expired as its workflow's deadline would, which ends the execution."""
    sfn = boto3.client("stepfunctions", region_name=REGION)

    def running() -> list[ExecutionListItemTypeDef]:
        machines = [
            arn
            for arn in (
                resources.state_machine_arn,
                resources.fan_out_state_machine_arn,
                resources.redelivery_state_machine_arn,
            )
            if arn
        ]
        return [
            execution
            for arn in machines
            for execution in sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"]
        ]

    expire_at, deadline = time.monotonic() + grace_sec, time.monotonic() + limit_sec
    expired = False
    while running() and time.monotonic() < deadline:
        if not expired and time.monotonic() >= expire_at:
            _expire_unended_tasks(resources)
            expired = True
        time.sleep(0.2)


def _expire_unended_tasks(resources: Resources) -> None:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for page in dynamodb.get_paginator("scan").paginate(TableName=resources.tasks_table):
        for item in page["Items"]:
            status = item.get("status", {}).get("S")
            if "user_id" in item and status and TaskStatus(status) not in TERMINAL:
                lifecycle.lambda_handler({"action": "expire", "task_id": item["task_id"]["S"]}, FakeContext())


@pytest.fixture
def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB checks a condition and writes atomically; moto does not lock, so two threads can
    both pass a check. Serialising moto's operations (as the local stack does) restores it."""
    serialise_shared_state(monkeypatch)


def serialise_shared_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """``local_stack.thread_safety`` for one test (undone with its other patches)."""
    for methods in thread_safety.SHARED_STATE:
        for name in methods.names:
            monkeypatch.setattr(methods.owner, name, methods.locked(getattr(methods.owner, name)))
