"""The audit trail on AWS (docs/audit.md): the audit function fed by the tasks table's stream
(task items only), its on-failure queue, and what each function may do on the audit table."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from exports.config.audit import Audit
from exports.config.queues import Queue
from exports.config.retry import AUDIT_BATCH_RETRY
from infra.function_factory import ServiceFunction
from infra.nag import acknowledge
from infra.push import TASK_RECORDS
from infra.tables import Tables

# Append a record (the record and its event's marker are conditional puts, the usage an update,
# in one transaction authorized per item), read the chain's end and a day's records (Query).
APPEND_ACTIONS = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]


class AuditTrail(Construct):
    """The audit function's stream mapping and on-failure queue, and the table's grants: the
    audit function appends exports' records with their usage, the API appends links, downloads
    and schedule changes and reads the trail and usage, the schedule function reads usage (a
    tenant's rows per day, at each firing's submit) and appends the pauses it makes."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: Tables,
        audit: ServiceFunction,
        api: ServiceFunction,
        schedule: ServiceFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        table = tables.audit.table_arn
        audit.allow(APPEND_ACTIONS, [table])
        api.allow([*APPEND_ACTIONS, "dynamodb:GetItem"], [table])
        # ... and appends a schedule's pause when the service pauses it at a firing.
        schedule.allow([*APPEND_ACTIONS, "dynamodb:GetItem"], [table])
        self.failed_batches = sqs.Queue(
            self,
            "FailedAuditRecords",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.seconds(Queue.DLQ_RETENTION_SEC),
        )
        acknowledge(
            self.failed_batches,
            "AwsSolutions-SQS3",
            "This queue is the on-failure destination of the audit function's stream mapping (a dead-letter queue).",
        )
        audit.function.add_event_source(
            event_sources.DynamoEventSource(
                tables.tasks,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=Audit.BATCH_SIZE,
                max_batching_window=Duration.seconds(Audit.BATCHING_WINDOW_SEC),
                bisect_batch_on_error=True,
                retry_attempts=AUDIT_BATCH_RETRY.retries,
                max_record_age=Duration.seconds(AUDIT_BATCH_RETRY.max_age_sec),
                report_batch_item_failures=True,
                on_failure=event_sources.SqsDlq(self.failed_batches),
                filters=[lambda_.FilterCriteria.filter(TASK_RECORDS)],
            )
        )
        acknowledge(
            audit.role,
            "AwsSolutions-IAM5[Resource::*]",
            "dynamodb:ListStreams (granted with the stream mapping) supports no resource-level scoping.",
        )
