"""The exports stack: composes the constructs of each concern and names its outputs."""

from __future__ import annotations

from aws_cdk import Annotations, CfnOutput, Stack, Tags
from constructs import Construct

from exports.core.config.metrics import Metric
from exports.core.config.names import SERVICE_NAME
from exports.core.config.tables import CustomersTable, OrdersTable, SchedulesTable, TaskTable
from infra.api import CallerIdentity, ExportsApi
from infra.audit import AuditTrail
from infra.events import LifecycleEventBus
from infra.functions import ServiceFunctions
from infra.monitoring import Monitoring, Severity
from infra.push import PushChannel
from infra.queues import TaskQueues, lane_id
from infra.schedules import ScheduledExports
from infra.secrets import WebhookSecret
from infra.settings import StageSettings
from infra.sources import DeclaredSources
from infra.storage import ResultsStorage
from infra.tables import Tables
from infra.workflows import Workflows


def stack_name(stage: str) -> str:
    """The CloudFormation stack name of ``stage`` (``exports-dev``)."""
    return f"{SERVICE_NAME}-{stage}"


default_stack_name = stack_name


class ExportsStack(Stack):
    """Everything the service needs in one account and region."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: StageSettings, stack_name: str | None = None
    ) -> None:
        """The stack is called ``stack_name`` (default ``exports-<stage>``); the physical names
        it gives (state machine, alarms, dashboard, state machine logs) derive from it."""
        super().__init__(
            scope,
            construct_id,
            stack_name=stack_name or default_stack_name(settings.stage),
            description=f"{SERVICE_NAME}: asynchronous data exports ({settings.stage})",
        )
        Tags.of(self).add("service", SERVICE_NAME)
        Tags.of(self).add("stage", settings.stage)
        self.settings = settings
        self.tables = Tables(self, "Tables", settings=settings)
        self.queues = TaskQueues(self, "Queues")
        self.storage = ResultsStorage(self, "Storage", settings=settings)
        self.webhook_secret = WebhookSecret(self, "Webhooks", settings=settings)
        self.monitoring = Monitoring(self, "Monitoring", settings=settings)
        # Before the functions: they need the lifecycle state machine's ARN (known from its name).
        self.workflows = Workflows(self, "Workflows", settings=settings, monitoring=self.monitoring)
        self.scheduling = ScheduledExports(self, "Schedules", settings=settings)
        self.events = LifecycleEventBus(self, "Events", settings=settings)
        sources = DeclaredSources.load(settings)
        for warning in sources.declarations.warnings:
            Annotations.of(self).add_warning_v2("exports:unscoped-export-type", warning)
        self.functions = ServiceFunctions(
            self,
            "Functions",
            settings=settings,
            tables=self.tables,
            queues=self.queues,
            storage=self.storage,
            webhook_secret=self.webhook_secret,
            lifecycle_state_machine_arn=self.workflows.lifecycle_arn,
            fan_out_state_machine_arn=self.workflows.fan_out_arn,
            redelivery_state_machine_arn=self.workflows.redelivery_arn,
            sources=sources,
            scheduling=self.scheduling,
            event_bus=self.events,
        )
        self.api = ExportsApi(
            self,
            "Api",
            settings=settings,
            handler=self.functions.api.invocable,
            identity=CallerIdentity(sources.cognito_attributes(), sources.cognito_groups()),
        )
        self.push = PushChannel(
            self,
            "Push",
            settings=settings,
            tables=self.tables,
            storage=self.storage,
            api=self.api,
            api_function=self.functions.api,
            stream=self.functions.stream,
            push=self.functions.push,
        )
        self.audit = AuditTrail(
            self,
            "Audit",
            tables=self.tables,
            audit=self.functions.audit,
            api=self.functions.api,
            schedule=self.functions.schedule,
            callback=self.functions.callback,
            push=(self.functions.stream, self.functions.push),
        )
        self.monitoring.watch_audit(self.audit.failed_batches)
        self.monitoring.watch_queues(self.queues)
        self.monitoring.watch_push(self.push.failed_batches)
        page, ticket = Severity.PAGE, Severity.TICKET
        # (alarm id, role, function, severity of its errors, of its throttles): a single worker error
        # is retried by the queue (a ticket; dead letters and failed exports page), and the push
        # channel's faults cost clients their live events only (they poll instead).
        # The callback function raises on purpose when a receiver or a destination refuses, for the
        # workflow to retry: those errors are counted (CallbackRetryRaised) and not paged on.
        for alarm_id, role, service_function, errors, throttles, retries_raised in (
            ("Api", "API", self.functions.api, page, page, None),
            ("Worker", "worker", self.functions.worker, ticket, page, None),
            ("LifecycleFunction", "lifecycle", self.functions.lifecycle, page, page, None),
            ("Callback", "callback", self.functions.callback, page, page, Metric.CALLBACK_RETRY_RAISED),
            ("Stream", "push channel's WebSocket", self.functions.stream, ticket, ticket, None),
            ("Push", "push", self.functions.push, ticket, ticket, None),
            ("AuditFunction", "audit", self.functions.audit, page, page, None),
        ):
            self.monitoring.watch_function(
                alarm_id,
                service_function.function,
                role,
                # A burst of executions is throttled at their reserved concurrency, and retried.
                throttled_by_design=service_function.reserved_concurrency is not None,
                errors=errors,
                throttles=throttles,
                retries_raised=retries_raised,
            )
        self.monitoring.watch_websocket(self.push.stage, self.functions.push.function)
        self.monitoring.watch_worker(self.functions.worker.function)
        self.scheduling.watch(self.monitoring, self.functions.schedule)
        self.monitoring.watch_api(self.api.http_api)
        self.monitoring.watch_tables(
            (
                ("Tasks", self.tables.tasks, (TaskTable.USER_INDEX,), page),
                # The push channel's, and the demo data's: tickets.
                ("Connections", self.tables.connections, (), ticket),
                ("Orders", self.tables.orders, (OrdersTable.DAY_INDEX,), ticket),
                ("Customers", self.tables.customers, (CustomersTable.DAY_INDEX,), ticket),
                ("Schedules", self.tables.schedules, (SchedulesTable.USER_INDEX,), page),
                ("Audit", self.tables.audit, (), page),
            )
        )
        self.lifecycle = self.workflows.add_lifecycle(
            lifecycle=self.functions.lifecycle, callback=self.functions.callback
        )
        self.fan_out = self.workflows.add_fan_out(worker=self.functions.worker)
        self.redelivery = self.workflows.add_redelivery(callback=self.functions.callback)
        self._outputs()

    def _outputs(self) -> None:
        outputs = {
            "ApiUrl": (self.api.url, "Base URL of the HTTP API"),
            "ResultsBucketName": (self.storage.bucket.bucket_name, "Bucket of the result files"),
            "AccessLogsBucketName": (self.storage.access_logs.bucket_name, "Server access logs of the results bucket"),
            "TasksTableName": (self.tables.tasks.table_name, "DynamoDB table of export tasks"),
            "SchedulesTableName": (self.tables.schedules.table_name, "DynamoDB table of export schedules"),
            "AuditTableName": (self.tables.audit.table_name, "DynamoDB table of the audit trail (docs/audit.md)"),
            "ScheduleGroupName": (self.scheduling.group_name, "EventBridge Scheduler group of the export schedules"),
            "ScheduleDeadLetterQueueUrl": (
                self.scheduling.dead_letters.queue_url,
                "Firings of export schedules that made no task (Scheduler's and the schedule function's failures)",
            ),
            "WebSocketUrl": (self.push.url, "The push channel (POST /v1/stream-tickets gives it out with a ticket)"),
            "OrdersTableName": (
                self.tables.orders.table_name,
                "Demo orders table (the source of the orders and sales_report exports)",
            ),
            "CustomersTableName": (
                self.tables.customers.table_name,
                "Demo customers table (the customers export's source)",
            ),
            "AlarmTopicArn": (self.monitoring.paging_topic.topic_arn, "SNS topic of the paging alarms (faults)"),
            "TicketTopicArn": (
                self.monitoring.tickets_topic.topic_arn,
                "SNS topic of the ticket alarms (customer-caused or single failures, push channel, demo tables)",
            ),
            "DashboardName": (self.monitoring.dashboard.dashboard_name, "CloudWatch dashboard"),
            "EventBusName": (
                self.events.bus.event_bus_name,
                "EventBridge bus of the lifecycle events (docs/events.md): route them with rules",
            ),
            "WebhookSecretArn": (
                self.webhook_secret.secret_arn,
                "Secrets Manager secret that signs callbacks: verify with whsec_<its value>",
            ),
        }
        for lane in self.queues.lanes:
            name, priorities = lane_id(lane.lane), f"priorities {lane.lane.highest}-{lane.lane.lowest}"
            outputs[f"TaskQueueUrl{name}"] = (
                lane.queue.queue_url,
                f"Queue of the {lane.lane.name} lane's export tasks ({priorities})",
            )
            outputs[f"DeadLetterQueueUrl{name}"] = (
                lane.dead_letters.queue_url,
                f"Dead-letter queue of the {lane.lane.name} lane",
            )
        if self.api.user_pool and self.api.user_pool_client:
            outputs["UserPoolId"] = (self.api.user_pool.user_pool_id, "Cognito user pool of API users")
            outputs["UserPoolClientId"] = (self.api.user_pool_client.user_pool_client_id, "App client for tokens")
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)
