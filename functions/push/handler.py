"""The push function: the tasks table's stream (task items only, by the mapping's filter) turned
into events for the WebSocket connections that follow those tasks (docs/push.md).

A failure reports the first record not delivered (``ReportBatchItemFailures``): Lambda retries
the batch from there, bisecting, then hands it to the on-failure queue. Nothing here writes a
task: a push failure never changes an export."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from exports.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.push.model import TaskChange
    from exports.services.push import PushDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()
# Events sent to connections (a business metric: how much the push channel carries).
PUSHED_METRIC = "ExportEventPushed"


@cache
def dependencies() -> PushDependencies:
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.composition import PowertoolsMetrics
    from exports.push.composition import compose_push

    return compose_push(PowertoolsMetrics(metrics))


def handle(records: list[dict[str, Any]], deps: PushDependencies) -> dict[str, Any]:
    """Deliver the records' events; the batch response names the first record that failed."""
    # Imported on first use: the handler's import is the stack's floor and little more (issue 50).
    from exports.adapters.task_stream import task_change
    from exports.domain.errors import ExportsError
    from exports.services import push

    changes: list[TaskChange] = []
    sequence_numbers: list[str] = []
    for record in records:
        change = task_change(record)
        if change is not None:
            changes.append(change)
            sequence_numbers.append(record["dynamodb"]["SequenceNumber"])
    pushed = 0
    for index, event_type in push.worth_sending(changes):
        logger.append_keys(task_id=changes[index].task.task_id)
        try:
            pushed += push.deliver(changes[index], event_type, deps)
        except ExportsError:
            logger.exception("push failed; the batch is retried from this record")
            return {"batchItemFailures": [{"itemIdentifier": sequence_numbers[index]}]}
    if pushed:
        deps.metrics.add(PUSHED_METRIC, pushed)
    return {"batchItemFailures": []}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point: one batch of the tasks table's stream."""
    return handle(event.get("Records", []), dependencies())
