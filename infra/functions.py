"""The service's Lambda functions, their environment and the exact permissions each one uses."""

from __future__ import annotations

from typing import Final, cast

from aws_cdk import CfnElement, Stack
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from exports.config import Capacity, Env, OrdersTable, Results, TaskTable, Worker
from infra.function_factory import FunctionSpec, ServiceFunction
from infra.nag import acknowledge
from infra.queues import TaskQueues
from infra.settings import Sizing, StageSettings
from infra.storage import ResultsStorage
from infra.tables import Tables

# Runtime dependencies by function: each package carries only what its code imports.
_COMMON: Final = ("aws-lambda-powertools", "boto3", "pydantic", "python-ulid")

API: Final = FunctionSpec(
    name="submit",
    description="exports HTTP API: submit, read, list and download exports",
    memory_mb=Sizing.API_MEMORY_MB,
    timeout_sec=Sizing.API_TIMEOUT_SEC,
    distributions=_COMMON,
)
WORKER: Final = FunctionSpec(
    name="worker",
    description="exports worker: runs queued export tasks and streams the files to S3",
    memory_mb=Sizing.WORKER_MEMORY_MB,
    timeout_sec=Worker.FUNCTION_TIMEOUT_SEC,
    distributions=(*_COMMON, "openpyxl"),
)


class ServiceFunctions(Construct):
    """The API function and the queue worker."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        tables: Tables,
        queues: TaskQueues,
        storage: ResultsStorage,
    ) -> None:
        super().__init__(scope, construct_id)
        environment = {
            Env.TASKS_TABLE: tables.tasks.table_name,
            Env.ORDERS_TABLE: tables.orders.table_name,
            Env.TASK_QUEUE_URL: queues.queue.queue_url,
            Env.RESULTS_BUCKET: storage.bucket.bucket_name,
            Env.DOWNLOAD_URL_TTL_SEC: str(Results.DOWNLOAD_URL_TTL_SEC),
            Env.RETENTION_HOURS: str(settings.results_retention_hours),
        }
        self.api = ServiceFunction(self, "Api", spec=API, settings=settings, environment=environment)
        self.worker = ServiceFunction(self, "Worker", spec=WORKER, settings=settings, environment=environment)
        results = storage.results_objects_arn()
        tasks_table = tables.tasks.table_arn

        # API: create, read and update tasks, list a user's tasks, queue new ones, and sign
        # download links (a presigned GET carries the permissions of the role that signed it).
        self.api.allow(["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"], [tasks_table])
        self.api.allow(["dynamodb:Query"], [Tables.index_arn(tables.tasks, TaskTable.USER_INDEX)])
        self.api.allow(["sqs:SendMessage"], [queues.queue.queue_arn])
        self.api.allow(["s3:GetObject"], [results])

        # Worker: claim and update tasks, read orders by day, re-queue retries with a delay,
        # upload results in parts (s3:PutObject covers create, upload part and complete) or
        # abort, and delete a file it could not record.
        self.worker.allow(["dynamodb:GetItem", "dynamodb:UpdateItem"], [tasks_table])
        self.worker.allow(["dynamodb:Query"], [Tables.index_arn(tables.orders, OrdersTable.DAY_INDEX)])
        self.worker.allow(["sqs:SendMessage"], [queues.queue.queue_arn])
        self.worker.allow(["s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"], [results])
        self.worker.function.add_event_source(
            event_sources.SqsEventSource(
                queues.queue,
                batch_size=Worker.BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=Capacity.WORKER_MAX_CONCURRENCY,
            )
        )
        # cdk-nag names a wildcard resource after the bucket's logical id.
        bucket_id = Stack.of(self).get_logical_id(cast(CfnElement, storage.bucket.node.default_child))
        for function in (self.api, self.worker):
            acknowledge(
                function.role,
                f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{Results.KEY_PREFIX}/*]",
                f"Result files have one key per task under {Results.KEY_PREFIX}/; the grant covers that prefix only.",
            )
