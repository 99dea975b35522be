"""The audit function: the tasks table's stream (task items only, by the mapping's filter)
turned into audit records (docs/audit.md): each export's submission and end (with its usage),
and each callback delivered or given up.

A record that cannot be written reports its stream record as the first failure
(``ReportBatchItemFailures``): Lambda retries the batch from there for as long as the stream
keeps it, then hands it to the on-failure queue. An event delivered twice is recorded once.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from exports.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.audit.service import AuditDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()


@cache
def dependencies() -> tuple[AuditDependencies, int]:
    """The audit trail and the worker's memory, built on first use from this function's
    variables of the environment (the composition and the adapters are imported then)."""
    from exports.composition import PowertoolsMetrics, compose_audit_function

    return compose_audit_function(PowertoolsMetrics(metrics))


def handle(records: list[dict[str, Any]], deps: AuditDependencies, worker_memory_mb: int) -> dict[str, Any]:
    """Record the events of each stream record in order; the batch response names the first
    record not recorded."""
    # Imported on first use: the handler's import is the stack's floor and little more (issue 50).
    from exports.adapters.task_stream import task_change
    from exports.audit.events import task_events
    from exports.audit.service import record
    from exports.config.audit import UsageMetric
    from exports.domain.errors import ExportsError

    for item in records:
        change = task_change(item)
        if change is None:
            continue
        logger.append_keys(task_id=change.task.task_id)
        try:
            for event in task_events(change.task, change.before, worker_memory_mb):
                record(event, deps)
        except ExportsError:
            logger.exception("audit record not written; the batch is retried from this record")
            deps.metrics.add(UsageMetric.AUDIT_WRITE_FAILED)
            return {"batchItemFailures": [{"itemIdentifier": item["dynamodb"]["SequenceNumber"]}]}
    return {"batchItemFailures": []}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point: one batch of the tasks table's stream."""
    deps, worker_memory_mb = dependencies()
    return handle(event.get("Records", []), deps, worker_memory_mb)
