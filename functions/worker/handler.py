"""The worker function: SQS batches of task messages, each run once, failures reported per record."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from exports.adapters.sqs_queue import decode_message
from exports.composition import PowertoolsMetrics, compose_worker
from exports.ports import Delivery
from exports.services.dependencies import WorkerDependencies
from exports.services.worker import abandon_fan_out, finish_fan_out, partition_step, process_delivery
from exports.tracing import lazy_tracer
from exports.workflows import ABANDON_ACTION, ASSEMBLE_ACTION, PARTITION_ACTION

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()


@cache
def dependencies() -> WorkerDependencies:
    """This function's adapters, built on first use from its own variables of the environment."""
    return compose_worker(PowertoolsMetrics(metrics))


@tracer.capture_method(capture_response=False)
def handle_record(record: SQSRecord, lambda_context: LambdaContext) -> str:
    """Run one task message. Raising marks the record failed, so SQS delivers it again. The batch
    processor passes ``lambda_context`` (by this name): long exports hand over to a new
    invocation before this one runs out of time."""
    message = decode_message(record.body)
    # Per thread: local mode runs several invocations of this function at once in one process.
    logger.thread_safe_clear_keys()
    logger.thread_safe_append_keys(
        correlation_id=message.task_id,
        task_id=message.task_id,
        receive_count=record.attributes.approximate_receive_count,
    )
    delivery = Delivery(
        queue_arn=record.event_source_arn,
        receipt_handle=record.receipt_handle,
        receive_count=int(record.attributes.approximate_receive_count),
    )
    outcome = process_delivery(message, delivery, dependencies(), lambda_context.get_remaining_time_in_millis)
    logger.info("task message processed", extra={"outcome": outcome.value})
    return outcome.value


def fan_out_step(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One step of a split export; what it came to is its result (the workflow reads a
    partition's ``status``), and only a fault raises (retried or caught by the workflow). A
    partition's query is bounded by the invocation's time."""
    task_id, attempt = str(event["task_id"]), int(event["attempt"])
    logger.append_keys(correlation_id=task_id, task_id=task_id, action=event["action"])
    if event["action"] == PARTITION_ACTION:
        partition, remaining_ms = int(event["partition"]), context.get_remaining_time_in_millis
        return {"status": partition_step(task_id, attempt, partition, dependencies(), remaining_ms)}
    if event["action"] == ASSEMBLE_ACTION:
        return {"outcome": finish_fan_out(task_id, attempt, dependencies()).value}
    if event["action"] == ABANDON_ACTION:
        error = event.get("error") or {}
        return {"outcome": abandon_fan_out(task_id, attempt, str(error.get("Error", "")), dependencies()).value}
    raise ValueError(f"unknown action {event['action']!r}")


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse | dict[str, Any]:
    """Entry point: SQS batches (partial batch failures, which the event source reports to
    SQS), or a step of the fan-out workflow (``action``)."""
    if "action" in event:
        return fan_out_step(event, context)
    # A processor per invocation: it holds the batch's state, which concurrent invocations in
    # one process (local mode) must not share.
    processor = BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(event=event, record_handler=handle_record, processor=processor, context=context)
