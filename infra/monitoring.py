"""Alarms to two SNS topics, and a dashboard of the business metrics and the moving parts.

Two kinds of alarm (docs/alarms.md): **paging** alarms (the paging topic, and the existing
``alarm_topic_arn``) fire on faults someone must act on now: work is failing or about to be
lost. **Ticket** alarms (:attr:`Monitoring.tickets_topic`, and ``ticket_topic_arn``) fire on what
can wait for working hours: customer-caused failures (a callback receiver that refuses), a single
worker error that the queue retries, the push channel (clients fall back to polling), the demo
tables, refused submits, mail reputation.

Business metrics are the EMF metrics the functions publish with Powertools: namespace
:func:`exports.core.config.metrics.metrics_namespace` of the stack (so two stacks in one account never share
a number), names from :class:`exports.core.config.metrics.Metric`, and the ``service`` dimension Powertools
adds from ``POWERTOOLS_SERVICE_NAME``; ExportFailed also carries the error code and the source,
and its alarm and graph read it with Metrics Insights across them.

Every alarm notifies its topics when it fires (not when it recovers: a first deploy would send an
OK for every alarm as each leaves INSUFFICIENT_DATA), and its description starts with its kind
(``[page]`` or ``[ticket]``) and ends with a runbook line: what to do first, and the section of
docs/alarms.md that says more. Each topic's policy lets CloudWatch alarms of this stack (account
and alarm-name prefix) publish: ``enforce_ssl`` alone would leave a policy of one Deny, and
alarms fail with "not authorized to perform SNS:Publish".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from aws_cdk import Annotations, ArnFormat, Aws, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from exports.core.config.metrics import (
    ERROR_CODE_DIMENSION,
    SOURCE_DIMENSION,
    USER_CAUSED_FAILURES,
    Metric,
    metrics_namespace,
)
from exports.core.config.names import SERVICE_NAME
from exports.core.config.queues import Queue
from exports.core.config.retry import PUSH_BATCH_RETRY
from exports.core.config.worker import Worker
from infra.queues import TaskQueues, lane_id
from infra.settings import MISSING_ALARM_DESTINATION, StageSettings

PERIOD: Final = Duration.minutes(5)
# The lifecycle workflow's functions are throttled by design in a burst (their reserved
# concurrency is small and Step Functions retries the invokes): their throttle alarms fire only
# when every one of this many periods in a row saw throttles.
SUSTAINED_THROTTLE_PERIODS: Final = 3
WIDGET_WIDTH: Final = 8
GTE: Final = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
RUNBOOK_DOC: Final = "docs/alarms.md"
# A worker run this close to its timeout went past its own stop points (an XLSX or Parquet export
# stops 30 s before, a CSV one hands over 60 s before): it is about to be killed.
WORKER_NEAR_TIMEOUT_SEC: Final = 10
# Lambda's account-level concurrency, as Service Quotas counts it (CloudWatch's SERVICE_QUOTA()
# reads the quota of a metric of this namespace).
LAMBDA_CONCURRENCY_USAGE: Final = {
    "Service": "Lambda",
    "Type": "Resource",
    "Resource": "ConcurrentExecutions",
    "Class": "None",
}


class Severity(Enum):
    """Who an alarm reaches: the on-call now (paging topic) or a ticket queue (tickets topic)."""

    PAGE = "page"
    TICKET = "ticket"


@dataclass(frozen=True)
class Runbook:
    """The first thing to do when an alarm fires, and its section (anchor) in docs/alarms.md."""

    anchor: str
    first_step: str

    def line(self) -> str:
        """The runbook line every alarm description ends with."""
        return f"Runbook: {RUNBOOK_DOC}#{self.anchor}. {self.first_step}"


class Runbooks:
    """One runbook per kind of alarm (docs/alarms.md has a section for each anchor)."""

    FUNCTION_ERRORS: Final = Runbook(
        "function-errors", "Open the function's log group, filter on ERROR, fix the cause or roll back."
    )
    FUNCTION_THROTTLES: Final = Runbook(
        "function-throttles", "Check the account's Lambda concurrency (ConcurrentExecutions) and the quota."
    )
    API_5XX: Final = Runbook("api-5xx", "Read the API function's errors and the access log's integrationError.")
    DYNAMODB_THROTTLES: Final = Runbook(
        "dynamodb-throttles", "Look for a hot partition or a burst in the table's metrics; writes are retried."
    )
    DEAD_LETTERS: Final = Runbook(
        "dead-letters", "Read the worker's errors for the task ids, fix, then make redrive the lane."
    )
    OLDEST_MESSAGE: Final = Runbook(
        "oldest-message", "Check worker errors and throttles, and the lane's share of the workers."
    )
    EXECUTIONS_FAILED: Final = Runbook(
        "executions-failed", "Open the failed executions in Step Functions; read the lifecycle function's errors."
    )
    EXECUTIONS_THROTTLED: Final = Runbook(
        "executions-throttled", "Compare the state machines' transitions with the account's Step Functions quotas."
    )
    WEBSOCKET_ERRORS: Final = Runbook(
        "websocket-errors", "Read the stream function's errors and the push channel's access log (integrationError)."
    )
    PUSH_ITERATOR_AGE: Final = Runbook(
        "push-iterator-age", "Read the push function's errors and duration; check the connections table's throttles."
    )
    EXPORTS_TIMED_OUT: Final = Runbook(
        "exports-timed-out", "Check the lanes' oldest message and the worker's errors, throttles and duration."
    )
    EXECUTIONS_TIMED_OUT: Final = Runbook(
        "executions-timed-out", "An execution outlived its bound: check the callback function's duration."
    )
    EXPORT_FAILED: Final = Runbook(
        "export-failed",
        "Graph 'Failed exports by error code and source' says which; read that code in the worker's logs.",
    )
    CALLBACK_FAILED: Final = Runbook(
        "callback-failed", "Find the task in the callback function's logs; tell the receiver's owner."
    )
    FILE_DELIVERY_FAILED: Final = Runbook(
        "file-delivery-failed",
        "Find the task and destination in the callback function's logs; the delivery's error says what the customer"
        " must fix.",
    )
    FILE_DELIVERY_FAULT: Final = Runbook(
        "file-delivery-fault",
        "A delivery failed on our side: read 'file delivery failed' in the callback function's logs (its code), then"
        " the destination's secret and the function's access to it.",
    )
    PUSH_FAILED: Final = Runbook(
        "push-failed", "Read the push function's errors; the batch's stream positions are in the failed-pushes queue."
    )
    AUDIT_FAILED: Final = Runbook(
        "audit-failed", "Read the audit function's errors; replay the batch from the failed-audit-records queue."
    )
    ENQUEUE_FAILED: Final = Runbook(
        "enqueue-failed", "Submits fail with 503: check SQS and Step Functions errors in the API function's logs."
    )
    ACCOUNT_CONCURRENCY: Final = Runbook(
        "account-concurrency",
        "Find the functions using the account's concurrency (ConcurrentExecutions per function); ask for a "
        "higher quota.",
    )
    WORKER_NEAR_TIMEOUT: Final = Runbook(
        "worker-near-timeout", "Find the worker's longest runs in its log group (REPORT lines) and their task ids."
    )
    OLDEST_DEAD_LETTER: Final = Runbook(
        "oldest-dead-letter", "Dead letters are about to be deleted: redrive the lane now, or save the messages."
    )
    EXPORTS_REJECTED: Final = Runbook(
        "exports-rejected", "Graph 'Admission' says which refusals; check the backlog and the per-user quotas."
    )
    CAPACITY_REFUSED: Final = Runbook(
        "capacity-refused",
        "The demand stays above the lanes' capacity: raise the busy lane's max_concurrency with its sources' "
        "limits (docs/capacity.md).",
    )

    @classmethod
    def all(cls) -> tuple[Runbook, ...]:
        """Every runbook."""
        return tuple(value for value in vars(cls).values() if isinstance(value, Runbook))


def business_metric(name: str, namespace: str, statistic: str = cloudwatch.Stats.SUM) -> cloudwatch.Metric:
    """One of our EMF metrics (``name`` from :class:`exports.core.config.metrics.Metric`) in ``namespace``."""
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map={"service": SERVICE_NAME},
        statistic=statistic,
        period=PERIOD,
    )


class Monitoring(Construct):
    """The alarm topic, the alarms and the dashboard; the stack hands it what to watch."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        stack = Stack.of(self)
        self._prefix = stack.stack_name
        self.namespace = metrics_namespace(stack.stack_name)
        self.alarms: list[cloudwatch.Alarm] = []
        # The paging topic keeps the id of the stack's first, single alarm topic: an update keeps it
        # and its subscriptions.
        self.paging_topic = self._topic("AlarmTopic", f"{SERVICE_NAME} paging alarms ({settings.stage})")
        self.tickets_topic = self._topic("TicketsTopic", f"{SERVICE_NAME} ticket alarms ({settings.stage})")
        if settings.alarm_email:
            self.paging_topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        if settings.ticket_email:
            self.tickets_topic.add_subscription(subscriptions.EmailSubscription(settings.ticket_email))
        elif settings.alarm_email and not settings.ticket_topic_arn:
            # No ticket destination of its own: tickets reach the on-call's address too, never no one.
            self.tickets_topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        self.destinations: dict[Severity, list[sns.ITopic]] = {
            Severity.PAGE: [self.paging_topic],
            Severity.TICKET: [self.tickets_topic],
        }
        for severity, arn, topic_id in (
            (Severity.PAGE, settings.alarm_topic_arn, "ExistingAlarmTopic"),
            (Severity.TICKET, settings.ticket_topic_arn, "ExistingTicketTopic"),
        ):
            if arn:
                self.destinations[severity].append(sns.Topic.from_topic_arn(self, topic_id, arn))
        if not settings.has_alarm_destination:
            Annotations.of(self).add_warning_v2(
                "exports:no-alarm-destination", MISSING_ALARM_DESTINATION.format(stage=settings.stage)
            )
        # Dashboards are global to the account: the region in the name keeps one stack name in two
        # regions apart.
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self._prefix}-{Aws.REGION}")
        self._watch_business_metrics()
        self._watch_account_concurrency()

    def _topic(self, construct_id: str, display_name: str) -> sns.Topic:
        topic = sns.Topic(self, construct_id, display_name=display_name, enforce_ssl=True)
        topic.add_to_resource_policy(self._cloudwatch_may_publish(Stack.of(self), topic))
        return topic

    def alarm_arn_pattern(self) -> str:
        """The ARN of every alarm this construct creates (their names start with the stack's)."""
        return Stack.of(self).format_arn(
            service="cloudwatch",
            resource="alarm",
            resource_name=f"{self._prefix}-*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def _cloudwatch_may_publish(self, stack: Stack, topic: sns.ITopic) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="CloudWatchAlarmsPublish",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={
                "StringEquals": {"aws:SourceAccount": stack.account},
                "ArnLike": {"aws:SourceArn": self.alarm_arn_pattern()},
            },
        )

    def add_alarm(
        self,
        construct_id: str,
        *,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        runbook: Runbook,
        severity: Severity = Severity.PAGE,
        missing_data: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
        periods: int = 1,
    ) -> cloudwatch.Alarm:
        """An alarm at ``metric >= threshold`` in each of ``periods`` periods in a row that
        notifies the destinations of its ``severity`` when it fires; its description starts
        with the severity and ends with ``runbook``'s line. No data counts as no fault unless
        ``missing_data`` says otherwise."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=f"{self._prefix}-{construct_id}",
            alarm_description=f"[{severity.value}] {description} {runbook.line()}",
            metric=metric,
            threshold=threshold,
            comparison_operator=GTE,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=missing_data,
        )
        for destination in self.destinations[severity]:
            alarm.add_alarm_action(actions.SnsAction(destination))
        self.alarms.append(alarm)
        return alarm

    def watch_queues(self, queues: TaskQueues) -> None:
        """Per lane, alarms on dead letters and on tasks waiting too long; the lanes' depths on
        the dashboard."""
        depths: list[cloudwatch.IMetric] = []
        dead_letters: list[cloudwatch.IMetric] = []
        oldest: list[cloudwatch.IMetric] = []
        for lane in queues.lanes:
            name, label = lane_id(lane.lane), lane.lane.name
            dead = lane.dead_letters.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=Duration.minutes(1)
            )
            self.add_alarm(
                f"DeadLetters{name}",
                metric=dead,
                threshold=1,
                description=f"A task message of the {label} lane crashed the worker too often and is in the "
                "lane's dead-letter queue.",
                runbook=Runbooks.DEAD_LETTERS,
                # SQS stops publishing for a queue idle some hours, as a DLQ with a dead letter
                # sitting in it is: the alarm keeps its state then, and recovers when it is emptied.
                missing_data=cloudwatch.TreatMissingData.IGNORE,
            )
            self.add_alarm(
                f"OldestDeadLetter{name}",
                metric=lane.dead_letters.metric_approximate_age_of_oldest_message(
                    statistic=cloudwatch.Stats.MAXIMUM, period=PERIOD
                ),
                threshold=self._settings.alarms.oldest_dead_letter_age_sec,
                description=f"A dead letter of the {label} lane was left unhandled: SQS deletes it at "
                f"{Queue.DLQ_RETENTION_SEC // 86400} days, and its task's redrive with it.",
                runbook=Runbooks.OLDEST_DEAD_LETTER,
                missing_data=cloudwatch.TreatMissingData.IGNORE,
            )
            age = lane.queue.metric_approximate_age_of_oldest_message(statistic=cloudwatch.Stats.MAXIMUM, period=PERIOD)
            self.add_alarm(
                f"OldestMessage{name}",
                metric=age,
                threshold=self._settings.alarms.oldest_message_age_sec,
                description=f"Tasks wait in the {label} lane longer than expected: the worker is failing, or the "
                "lane's share of the workers is saturated.",
                runbook=Runbooks.OLDEST_MESSAGE,
            )
            depths.append(lane.queue.metric_approximate_number_of_messages_visible(period=PERIOD, label=label))
            # Labelled for the dashboard only: a labelled metric would turn the alarms into metric math.
            dead_letters.append(dead.with_(label=label))
            oldest.append(age.with_(label=label))
        self.dashboard.add_widgets(
            _graph("Queue depth by lane", depths),
            _graph("Dead letters by lane", dead_letters),
            _graph("Oldest queued task by lane (s)", oldest),
        )

    def watch_push(self, failed_batches: sqs.IQueue) -> None:
        """An alarm on any batch of task events the push function gave up on (its stream
        mapping's on-failure queue). Exports are not affected; watchers missed events."""
        self.add_alarm(
            "PushFailed",
            metric=failed_batches.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=Duration.minutes(1)
            ),
            threshold=1,
            description="The push function gave up on a batch of task events after its retries: connected "
            "clients missed events (the exports themselves are unaffected; clients resubscribe or poll).",
            runbook=Runbooks.PUSH_FAILED,
            severity=Severity.TICKET,
            missing_data=cloudwatch.TreatMissingData.IGNORE,
        )

    def watch_audit(self, failed_batches: sqs.IQueue) -> None:
        """An alarm on any batch of task writes the audit function gave up on (its stream
        mapping's on-failure queue): the audit trail has a gap until it is replayed."""
        self.add_alarm(
            "AuditFailed",
            metric=failed_batches.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=Duration.minutes(1)
            ),
            threshold=1,
            description="The audit function gave up on a batch of task writes after its retries: the audit trail "
            "misses their records until the batch is replayed (docs/audit.md).",
            runbook=Runbooks.AUDIT_FAILED,
            missing_data=cloudwatch.TreatMissingData.IGNORE,
        )

    def watch_function(
        self,
        construct_id: str,
        function: lambda_.IFunction,
        role: str,
        *,
        throttled_by_design: bool = False,
        errors: Severity = Severity.PAGE,
        throttles: Severity = Severity.PAGE,
        retries_raised: str | None = None,
    ) -> None:
        """Alarms on any error of ``function`` and on its throttles (``role``: what it does, for
        the descriptions): any throttle, or for a function ``throttled_by_design`` (its invokes
        are retried), throttles in each of :data:`SUSTAINED_THROTTLE_PERIODS` periods in a row;
        each of the severity given. ``retries_raised`` names the business metric counting the
        errors the function raises on purpose for its workflow to retry (a customer's receiver
        or server refusing): they are subtracted, so that the alarm fires on faults only."""
        errors_metric: cloudwatch.IMetric = function.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM)
        if retries_raised is not None:
            errors_metric = cloudwatch.MathExpression(
                expression="errors - FILL(retries, 0)",
                using_metrics={"errors": errors_metric, "retries": self._metric(retries_raised)},
                period=PERIOD,
                label=f"{role} errors that are not a retry asked for",
            )
        self.add_alarm(
            f"{construct_id}Errors",
            metric=errors_metric,
            threshold=1,
            description=f"The {role} function failed (an exception or a timeout).",
            runbook=Runbooks.FUNCTION_ERRORS,
            severity=errors,
        )
        sustained = SUSTAINED_THROTTLE_PERIODS if throttled_by_design else 1
        self.add_alarm(
            f"{construct_id}Throttles",
            metric=function.metric_throttles(period=PERIOD, statistic=cloudwatch.Stats.SUM),
            threshold=1,
            description=(
                f"The {role} function was throttled for {sustained * int(PERIOD.to_minutes())} minutes in a row: "
                "its reserved concurrency is too small for the load."
                if throttled_by_design
                else f"The {role} function was throttled: its reserved or the account's concurrency is exhausted."
            ),
            runbook=Runbooks.FUNCTION_THROTTLES,
            severity=throttles,
            periods=sustained,
        )

    def watch_worker(self, worker: lambda_.IFunction) -> None:
        """An alarm on a worker run close to its timeout; its activity on the dashboard (its
        errors and throttles alarm through :meth:`watch_function`)."""
        errors = worker.metric_errors(period=PERIOD)
        throttles = worker.metric_throttles(period=PERIOD)
        longest = worker.metric_duration(period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM)
        self.add_alarm(
            "WorkerNearTimeout",
            metric=longest,
            threshold=(Worker.FUNCTION_TIMEOUT_SEC - WORKER_NEAR_TIMEOUT_SEC) * 1000,
            description=f"A worker run lasted within {WORKER_NEAR_TIMEOUT_SEC} s of its "
            f"{Worker.FUNCTION_TIMEOUT_SEC} s timeout: it went past the point where exports stop or hand over, "
            "and the next such run may be killed (retried, then dead-lettered).",
            runbook=Runbooks.WORKER_NEAR_TIMEOUT,
            severity=Severity.TICKET,
        )
        self.dashboard.add_widgets(
            _graph(
                "Worker invocations / errors / throttles", [worker.metric_invocations(period=PERIOD), errors, throttles]
            ),
            _graph(
                "Worker duration (ms)",
                [worker.metric_duration(period=PERIOD, statistic=cloudwatch.Stats.p(90)), longest.with_(label="max")],
            ),
            _graph("Worker concurrency", [worker.metric("ConcurrentExecutions", statistic=cloudwatch.Stats.MAXIMUM)]),
        )

    def watch_websocket(self, stage: apigw.WebSocketStage, push: lambda_.IFunction) -> None:
        """The push channel: an alarm on the WebSocket API's execution errors (API Gateway could
        not run the stream function: a failed invoke, a timeout), and one on the push function's
        iterator age (task events wait in the stream: it falls behind, or fails and retries)."""
        errors = stage.metric("ExecutionError", period=PERIOD, statistic=cloudwatch.Stats.SUM)
        self.add_alarm(
            "WebSocketErrors",
            metric=errors,
            threshold=self._settings.alarms.websocket_errors_per_5_min,
            description="The push channel's WebSocket API could not run its integration (the stream function).",
            runbook=Runbooks.WEBSOCKET_ERRORS,
            severity=Severity.TICKET,
        )
        age = push.metric("IteratorAge", period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM)
        self.add_alarm(
            "PushIteratorAge",
            metric=age,
            threshold=self._settings.alarms.push_iterator_age_ms,
            description="Task events wait in the tasks stream: the push function falls behind or keeps failing, "
            f"and records older than {PUSH_BATCH_RETRY.max_age_sec} s are given up.",
            runbook=Runbooks.PUSH_ITERATOR_AGE,
            severity=Severity.TICKET,
        )
        self.dashboard.add_widgets(
            _graph(
                "WebSocket connects / messages / execution errors",
                [
                    stage.metric("ConnectCount", period=PERIOD, statistic=cloudwatch.Stats.SUM),
                    stage.metric("MessageCount", period=PERIOD, statistic=cloudwatch.Stats.SUM),
                    errors,
                ],
            ),
            _graph("Push function iterator age (ms)", [age]),
        )

    def watch_api(self, api: apigw.HttpApi) -> None:
        """An alarm on server errors; requests, errors and latency on the dashboard."""
        server_errors = api.metric_server_error(period=PERIOD, statistic=cloudwatch.Stats.SUM)
        self.add_alarm(
            "Api5xx",
            metric=server_errors,
            threshold=self._settings.alarms.api_5xx_per_5_min,
            description="The API answered with 5xx errors.",
            runbook=Runbooks.API_5XX,
        )
        self.dashboard.add_widgets(
            _graph("API requests", [api.metric_count(period=PERIOD)]),
            _graph("API 4xx / 5xx", [api.metric_client_error(period=PERIOD), server_errors]),
            _graph("API latency p90 (ms)", [api.metric_latency(period=PERIOD, statistic=cloudwatch.Stats.p(90))]),
        )

    def watch_tables(self, tables: Iterable[tuple[str, dynamodb.TableV2, Sequence[str], Severity]]) -> None:
        """Per table (``(name, table, its global secondary indexes, severity)``), an alarm on any
        throttled read or write of the table or of an index (DynamoDB counts an index's
        throttles under its own ``GlobalSecondaryIndexName`` dimension only)."""
        graphs: list[cloudwatch.IMetric] = []
        for name, table, indexes, severity in tables:
            # Ids unique per table: the dashboard graphs every table's expression together.
            key = name.lower()
            counted: dict[str, cloudwatch.IMetric] = {}
            for scope, dimensions in (
                ("table", {}),
                *((f"index{number}", {"GlobalSecondaryIndexName": index}) for number, index in enumerate(indexes)),
            ):
                for kind in ("Read", "Write"):
                    counted[f"{kind.lower()}s_{scope}_{key}"] = table.metric(
                        f"{kind}ThrottleEvents",
                        statistic=cloudwatch.Stats.SUM,
                        period=PERIOD,
                        dimensions_map={"TableName": table.table_name, **dimensions},
                    )
            throttled = cloudwatch.MathExpression(
                expression=" + ".join(f"FILL({metric_id}, 0)" for metric_id in counted),
                using_metrics=counted,
                period=PERIOD,
                label=f"{name} throttled requests",
            )
            self.add_alarm(
                f"{name}TableThrottles",
                metric=throttled,
                threshold=1,
                description=f"DynamoDB throttled reads or writes of the {name.lower()} table or its indexes.",
                runbook=Runbooks.DYNAMODB_THROTTLES,
                severity=severity,
            )
            graphs.append(throttled)
        self.dashboard.add_widgets(_graph("DynamoDB throttled requests", graphs))

    def watch_state_machine(self, construct_id: str, state_machine: sfn.StateMachine) -> None:
        """Alarms on failed and timed-out executions of ``state_machine``; its executions on the dashboard."""
        failed = state_machine.metric_failed(period=PERIOD)
        timed_out = state_machine.metric_timed_out(period=PERIOD)
        self.add_alarm(
            f"{construct_id}Failed",
            metric=failed,
            threshold=1,
            description=f"Executions of the {construct_id} state machine failed.",
            runbook=Runbooks.EXECUTIONS_FAILED,
        )
        self.add_alarm(
            f"{construct_id}TimedOut",
            metric=timed_out,
            threshold=1,
            description=f"Executions of the {construct_id} state machine timed out.",
            runbook=Runbooks.EXECUTIONS_TIMED_OUT,
        )
        throttled = state_machine.metric("ExecutionThrottled", period=PERIOD, statistic=cloudwatch.Stats.SUM)
        self.add_alarm(
            f"{construct_id}Throttled",
            metric=throttled,
            threshold=1,
            description=f"Step Functions throttled state transitions of the {construct_id} state machine.",
            runbook=Runbooks.EXECUTIONS_THROTTLED,
        )
        self.dashboard.add_widgets(
            _graph(
                f"{construct_id} executions started / failed / timed out / throttled",
                [state_machine.metric_started(period=PERIOD), failed, timed_out, throttled],
            )
        )

    def _metric(self, name: str, statistic: str = cloudwatch.Stats.SUM) -> cloudwatch.Metric:
        return business_metric(name, self.namespace, statistic)

    def _watch_business_metrics(self) -> None:
        failed = cloudwatch.MathExpression(
            expression=failed_exports_query(self.namespace), period=PERIOD, label="failed exports"
        )
        self.add_alarm(
            "ExportFailed",
            metric=cloudwatch.MathExpression(
                expression=failed_exports_query(self.namespace, faults_only=True),
                period=PERIOD,
                label="exports failed by a fault",
            ),
            threshold=1,
            description="An export ended FAILED by a fault (a failing source, a bad query, a broken declaration, "
            "retries spent on a fault); what was asked being too large for its format is not counted.",
            runbook=Runbooks.EXPORT_FAILED,
        )
        timed_out = self._metric(Metric.TIMED_OUT)
        self.add_alarm(
            "ExportsTimedOut",
            metric=timed_out,
            threshold=self._settings.alarms.timed_out_tasks_per_5_min,
            description="Many exports reached their deadline (TIMEOUT): workers are stuck or too few, or a source "
            "is slow.",
            runbook=Runbooks.EXPORTS_TIMED_OUT,
        )
        callback_failed = self._metric(Metric.CALLBACK_FAILED)
        self.add_alarm(
            "CallbackFailed",
            metric=callback_failed,
            threshold=1,
            description="A completion callback could not be delivered to the client's URL.",
            runbook=Runbooks.CALLBACK_FAILED,
            severity=Severity.TICKET,
        )
        self.add_alarm(
            "FileDeliveryFailed",
            metric=self._metric(Metric.FILE_DELIVERY_FAILED),
            threshold=1,
            description="A file could not be delivered to a customer's destination after its retries (their server,"
            " login, permissions or bucket, mostly); the export stays COMPLETED and downloadable.",
            runbook=Runbooks.FILE_DELIVERY_FAILED,
            severity=Severity.TICKET,
        )
        self.add_alarm(
            "FileDeliveryFault",
            metric=self._metric(Metric.FILE_DELIVERY_FAULT),
            threshold=1,
            description="A file delivery failed for a cause on our side (the destination's secret unreadable, retries"
            " spent without a customer's error): no customer can fix it.",
            runbook=Runbooks.FILE_DELIVERY_FAULT,
        )
        enqueue_failed = self._metric(Metric.ENQUEUE_FAILED)
        self.add_alarm(
            "EnqueueFailed",
            metric=enqueue_failed,
            threshold=1,
            description="A submitted task could not be queued or scheduled; it ended FAILED and the client got 503.",
            runbook=Runbooks.ENQUEUE_FAILED,
        )
        rejected = self._metric(Metric.REJECTED)
        limits = self._settings.alarms
        self.add_alarm(
            "ExportsRejected",
            metric=cloudwatch.MathExpression(
                # Submits in the period: accepted (ExportSubmitted) plus refused (ExportRejected).
                expression=f"IF(FILL(accepted, 0) + FILL(refused, 0) >= {limits.rejected_min_submits}, "
                "100 * FILL(refused, 0) / (FILL(accepted, 0) + FILL(refused, 0)), 0)",
                using_metrics={"accepted": self._metric(Metric.SUBMITTED), "refused": rejected},
                period=PERIOD,
                label="submits refused with 429 (%)",
            ),
            threshold=limits.rejected_percent,
            description=f"At least {limits.rejected_percent} % of the submits were refused with 429 (a user's "
            "quota or the backlog): the service is saturated, or a client keeps retrying.",
            runbook=Runbooks.EXPORTS_REJECTED,
            severity=Severity.TICKET,
        )
        self.add_alarm(
            "CapacityRefused",
            metric=self._metric(Metric.CAPACITY_REFUSED),
            threshold=limits.capacity_refused_per_period,
            periods=limits.capacity_refused_periods,
            description=f"At least {limits.capacity_refused_per_period} submits in each of "
            f"{limits.capacity_refused_periods} periods in a row were refused because the exports queued ahead "
            "would have made them miss their deadline (WOULD_TIME_OUT): bursts are refused on purpose, a demand "
            "this lasting outgrows the lanes.",
            runbook=Runbooks.CAPACITY_REFUSED,
            severity=Severity.TICKET,
        )
        self.dashboard.add_widgets(
            _graph(
                "Exports submitted / completed / failed / timed out / cancelled",
                [
                    *(self._metric(name) for name in (Metric.SUBMITTED, Metric.COMPLETED)),
                    failed,
                    timed_out,
                    self._metric(Metric.CANCELLED),
                ],
            ),
            _graph(
                "Failed exports by error code and source",
                [
                    cloudwatch.MathExpression(
                        expression=failed_exports_query(self.namespace, group_by=True), period=PERIOD
                    )
                ],
            ),
            _graph("Callbacks delivered / failed", [self._metric(Metric.CALLBACK_DELIVERED), callback_failed]),
            _graph(
                "Admission: deduplicated / deferred (hot key, busy source) / rejected (429) / enqueue failed",
                [
                    *(
                        self._metric(name)
                        for name in (
                            Metric.DEDUPLICATED,
                            Metric.DEFERRED,
                            Metric.SOURCE_DEFERRED,
                            Metric.REJECTED,
                            Metric.CAPACITY_REFUSED,
                            Metric.NOT_BEGUN,
                        )
                    ),
                    enqueue_failed,
                ],
            ),
            _graph(
                "Worker: retried / redelivered (transient faults) / duplicate deliveries",
                [self._metric(name) for name in (Metric.RETRIED, Metric.REDELIVERED, Metric.DUPLICATE_DELIVERY)],
            ),
            _graph("Rows exported", [self._metric(Metric.ROWS_EXPORTED)]),
            _graph(
                "Export duration (ms)",
                [self._metric(Metric.DURATION_MS, stat) for stat in (cloudwatch.Stats.p(50), cloudwatch.Stats.p(90))],
            ),
        )

    def _watch_account_concurrency(self) -> None:
        """An alarm on the account's Lambda concurrency near its quota (every function of the
        account and region counts: another stack's burst throttles ours too)."""
        usage = cloudwatch.Metric(
            namespace="AWS/Usage",
            metric_name="ResourceCount",
            dimensions_map=LAMBDA_CONCURRENCY_USAGE,
            statistic=cloudwatch.Stats.MAXIMUM,
            period=PERIOD,
        )
        percent = cloudwatch.MathExpression(
            expression="100 * usage / SERVICE_QUOTA(usage)",
            using_metrics={"usage": usage},
            period=PERIOD,
            label="account Lambda concurrency (% of quota)",
        )
        self.add_alarm(
            "AccountConcurrency",
            metric=percent,
            threshold=self._settings.alarms.account_concurrency_percent,
            description=f"The account's Lambda concurrent executions reached "
            f"{self._settings.alarms.account_concurrency_percent} % of its quota in this region: any function "
            "(ours or another stack's) may be throttled next.",
            runbook=Runbooks.ACCOUNT_CONCURRENCY,
        )
        self.dashboard.add_widgets(_graph("Account Lambda concurrency (% of quota)", [percent]))


def failed_exports_query(namespace: str, group_by: bool = False, faults_only: bool = False) -> str:
    """The Metrics Insights query of ExportFailed over every error code and source (summed, or
    one series per code and source); ``faults_only`` leaves out the codes of
    :data:`exports.core.config.metrics.USER_CAUSED_FAILURES`."""
    schema = ", ".join(sorted(("service", ERROR_CODE_DIMENSION, SOURCE_DIMENSION)))
    query = f'SELECT SUM({Metric.FAILED}) FROM SCHEMA("{namespace}", {schema})'
    if faults_only:
        query += " WHERE " + " AND ".join(f"{ERROR_CODE_DIMENSION} != '{code}'" for code in USER_CAUSED_FAILURES)
    return f"{query} GROUP BY {ERROR_CODE_DIMENSION}, {SOURCE_DIMENSION}" if group_by else query


def _graph(title: str, metrics: list[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=metrics, width=WIDGET_WIDTH)
