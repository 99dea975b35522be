"""The worker function: SQS batches of task messages, each run once, failures reported per record;
and the steps of the fan-out workflow, told apart from a batch by :class:`WorkerEvent`."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools import Logger, Metrics
from pydantic import BaseModel, ConfigDict, Field

from exports.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.services.dependencies import WorkerDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()
# The event models are built at the first event, not at import (pydantic's schema build).
_DEFERRED = ConfigDict(defer_build=True)


@cache
def dependencies() -> WorkerDependencies:
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.composition import PowertoolsMetrics, compose_worker

    return compose_worker(PowertoolsMetrics(metrics))


@tracer.capture_method(capture_response=False)
def handle_record(record: SQSRecord, lambda_context: LambdaContext) -> str:
    """Run one task message. Raising marks the record failed, so SQS delivers it again. The batch
    processor passes ``lambda_context`` (by this name): long exports hand over to a new
    invocation before this one runs out of time."""
    from exports.adapters.sqs_queue import decode_message
    from exports.ports import Delivery
    from exports.services.deliveries import process_delivery

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


class PartitionStep(BaseModel):
    """Write one partition of a split export (``workflows.PARTITION_ACTION``)."""

    model_config = _DEFERRED

    action: Literal["fan_out_partition"]
    task_id: str
    attempt: int
    partition: int


class AssembleStep(BaseModel):
    """Assemble a split export's file and end its task (``workflows.ASSEMBLE_ACTION``)."""

    model_config = _DEFERRED

    action: Literal["fan_out_assemble"]
    task_id: str
    attempt: int


class StepError(BaseModel):
    """What a Catch put in ``$.error``: the error's name (and its cause, unread here)."""

    model_config = _DEFERRED

    Error: str = ""


class AbandonStep(BaseModel):
    """Clean up a split export that stopped or failed (``workflows.ABANDON_ACTION``)."""

    model_config = _DEFERRED

    action: Literal["fan_out_abandon"]
    task_id: str
    attempt: int
    error: StepError | None = None


FanOutStep = Annotated[PartitionStep | AssembleStep | AbandonStep, Field(discriminator="action")]


class SqsBatch(BaseModel):
    """A batch of task messages from the SQS event source (its records are read by the batch
    processor)."""

    model_config = _DEFERRED

    Records: list[dict[str, object]]


class WorkerEvent(BaseModel):
    """What the worker function is invoked with: a step of the fan-out workflow, or an SQS batch."""

    # Built on first use, not at import: most cold starts serve an SQS batch at once anyway, but
    # the import stays as cheap as the other handlers'.
    model_config = ConfigDict(defer_build=True)

    event: FanOutStep | SqsBatch


def fan_out_step(step: PartitionStep | AssembleStep | AbandonStep, context: LambdaContext) -> dict[str, str]:
    """One step of a split export; what it came to is its result (the workflow reads a
    partition's ``status``), and only a fault raises (retried or caught by the workflow). A
    partition's query is bounded by the invocation's time."""
    # Imported here: an SQS batch, what most invocations serve, never loads the steps' modules.
    from exports.fan_out.workflow import abandon_fan_out, finish_fan_out, partition_step

    logger.append_keys(correlation_id=step.task_id, task_id=step.task_id, action=step.action)
    if isinstance(step, PartitionStep):
        remaining_ms = context.get_remaining_time_in_millis
        return {"status": partition_step(step.task_id, step.attempt, step.partition, dependencies(), remaining_ms)}
    if isinstance(step, AssembleStep):
        return {"outcome": finish_fan_out(step.task_id, step.attempt, dependencies()).value}
    error = step.error.Error if step.error is not None else ""
    return {"outcome": abandon_fan_out(step.task_id, step.attempt, error, dependencies()).value}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse | dict[str, str]:
    """Entry point: SQS batches (partial batch failures, which the event source reports to
    SQS), or a step of the fan-out workflow."""
    parsed = WorkerEvent.model_validate({"event": event}).event
    if not isinstance(parsed, SqsBatch):
        return fan_out_step(parsed, context)
    # Imported at the first batch: the fan-out steps never load Powertools' batch utilities.
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    # A processor per invocation: it holds the batch's state, which concurrent invocations in
    # one process (local mode) must not share.
    processor = BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(event=event, record_handler=handle_record, processor=processor, context=context)
