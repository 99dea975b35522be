"""Lifecycle events on EventBridge (docs/events.md) in moto, as local mode wires them: the
functions put them on the stack's bus, a rule copies them to a queue, and what arrives there is
what an operator's rule would get: created and completed for an export that completes, failed
for one that fails, each with the envelope and the detail the docs describe."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from pydantic import BaseModel

from exports.core.config.events import Events
from exports.core.config.names import Names
from exports.core.errors import RetryableError
from exports.core.export_type import Column, ColumnKind, ExportType, Row, ignore_progress
from exports.core.ids import new_task_id
from exports.core.ports import TaskMessage
from exports.core.task import ExportFormat, new_task
from exports.export_types.registry import ExportTypeRegistry
from exports.running.endings import Outcome
from exports.running.messages import process_task
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.integration.test_worker_handler import orders_request, receive, run_worker, submit, task_item


def arrived(aws: Resources) -> list[dict[str, Any]]:
    """The events the local rule copied to its queue so far, in the order they were put."""
    sqs = boto3.client("sqs", region_name=REGION)
    events: list[dict[str, Any]] = []
    while messages := sqs.receive_message(QueueUrl=aws.events_queue_url, MaxNumberOfMessages=10).get("Messages", []):
        events += [json.loads(message["Body"]) for message in messages]
        sqs.delete_message_batch(
            QueueUrl=aws.events_queue_url,
            Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)],
        )
    return events


def test_an_export_that_completes_is_created_then_completed_on_the_bus(orders: Resources) -> None:
    # Given a submitted export, When the worker runs it
    task_id = submit(orders_request("csv"))
    assert run_worker(orders, receive(orders)) == {"batchItemFailures": []}

    # Then the bus got its creation and its completion, with what the task records
    created, completed = arrived(orders)
    item = task_item(orders, task_id)
    for event, detail_type in ((created, Events.EXPORT_CREATED), (completed, Events.EXPORT_COMPLETED)):
        assert (event["source"], event["detail-type"]) == (Events.SOURCE, detail_type)
        detail = event["detail"]
        assert detail["version"] == Events.DETAIL_VERSION
        assert (detail["task_id"], detail["user_id"], detail["export_type"], detail["format"]) == (
            task_id,
            "alice",
            "orders",
            "csv",
        )
        assert datetime.fromisoformat(detail["occurred_at"]).tzinfo is not None
    assert created["detail"]["status"] == "PENDING"
    assert completed["detail"]["status"] == "COMPLETED"
    result = item["result"]
    assert (completed["detail"]["rows"], completed["detail"]["bytes"], completed["detail"]["sha256"]) == (
        result["rows"],
        result["bytes"],
        result["sha256"],
    )
    # Never the filters, the claims or a link.
    assert "filters" not in completed["detail"] and "http" not in json.dumps(completed["detail"])


class NoFilters(BaseModel):
    pass


class FailingExport(ExportType):
    """A source that is always throttled: with no retries left, the task fails."""

    name = "always_throttled"
    description = "test"
    filters_model = NoFilters

    def columns(self, filters: Any) -> list[Column]:
        return [Column("n", "N", ColumnKind.INTEGER)]

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        raise RetryableError("source throttled")
        yield (0,)

    def file_stem(self, filters: Any) -> str:
        return "failing"


@pytest.fixture
def deps(aws: Resources) -> Any:
    real = worker.dependencies()
    return replace(real, registry=ExportTypeRegistry([*real.registry, FailingExport()]), random=lambda: 0.0)


def test_an_export_that_fails_is_failed_on_the_bus_with_its_code(aws: Resources, deps: Any) -> None:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="bob",
        export_type=FailingExport.name,
        format=ExportFormat.CSV,
        filters={},
        now=now,
        retention=timedelta(hours=1),
    ).model_copy(update={"max_retries": 0})
    deps.tasks.create(task, max_active=100)

    message = TaskMessage(task_id=task.task_id, export_type=task.export_type, priority=task.priority)
    assert process_task(message, deps) is Outcome.FAILED

    (failed,) = arrived(aws)
    assert (failed["source"], failed["detail-type"]) == (Events.SOURCE, Events.EXPORT_FAILED)
    assert failed["detail"]["task_id"] == task.task_id and failed["detail"]["user_id"] == "bob"
    assert (failed["detail"]["status"], failed["detail"]["error_code"]) == ("FAILED", "TRANSIENT_ERROR")


def test_a_bus_that_refuses_costs_no_export(orders: Resources, caplog: pytest.LogCaptureFixture) -> None:
    # Given a deployment whose bus is gone
    events = boto3.client("events", region_name=REGION)
    events.remove_targets(Rule=Names.EVENTS_QUEUE, EventBusName=orders.event_bus, Ids=["local-queue"])
    events.delete_rule(Name=Names.EVENTS_QUEUE, EventBusName=orders.event_bus)
    events.delete_event_bus(Name=orders.event_bus)

    # When an export is submitted and run, Then it completes all the same, and the lost events are logged
    task_id = submit(orders_request("csv"))
    assert run_worker(orders, receive(orders)) == {"batchItemFailures": []}
    assert task_item(orders, task_id)["status"] == "COMPLETED"
    assert [r for r in caplog.records if r.getMessage() == "lifecycle events not published"]
