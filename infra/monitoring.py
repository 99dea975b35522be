"""Alarms to an SNS topic, and a dashboard of the business metrics and the moving parts.

Business metrics are the EMF metrics the functions publish with Powertools: namespace
:data:`exports.config.METRICS_NAMESPACE`, names from :class:`exports.config.Metric`, and the
``service`` dimension Powertools adds from ``POWERTOOLS_SERVICE_NAME``.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from exports.config import METRICS_NAMESPACE, SERVICE_NAME, Metric
from infra.queues import TaskQueues, lane_id
from infra.settings import StageSettings

PERIOD: Final = Duration.minutes(5)
WIDGET_WIDTH: Final = 8
GTE: Final = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD


def business_metric(name: str, statistic: str = cloudwatch.Stats.SUM) -> cloudwatch.Metric:
    """One of our EMF metrics (``name`` from :class:`exports.config.Metric`)."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
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
        self._prefix = Stack.of(self).stack_name
        self.alarms: list[cloudwatch.Alarm] = []
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name=f"{SERVICE_NAME} alarms ({settings.stage})", enforce_ssl=True
        )
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=self._prefix)
        self._watch_business_metrics()

    def add_alarm(self, construct_id: str, *, metric: cloudwatch.IMetric, threshold: float, description: str) -> None:
        """An alarm at ``metric >= threshold`` over one period that notifies the topic."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=f"{self._prefix}-{construct_id}",
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=GTE,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)

    def watch_queues(self, queues: TaskQueues) -> None:
        """Per lane, alarms on dead letters and on tasks waiting too long; the lanes' depths on
        the dashboard."""
        depths, dead_letters, oldest = [], [], []
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
            )
            age = lane.queue.metric_approximate_age_of_oldest_message(statistic=cloudwatch.Stats.MAXIMUM, period=PERIOD)
            self.add_alarm(
                f"OldestMessage{name}",
                metric=age,
                threshold=self._settings.alarms.oldest_message_age_sec,
                description=f"Tasks wait in the {label} lane longer than expected: the worker is failing, or the "
                "lane's share of the workers is saturated.",
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

    def watch_worker(self, worker: lambda_.IFunction) -> None:
        """Alarms on worker errors and throttles; its activity on the dashboard."""
        errors = worker.metric_errors(period=PERIOD)
        throttles = worker.metric_throttles(period=PERIOD)
        self.add_alarm(
            "WorkerErrors",
            metric=errors,
            threshold=self._settings.alarms.worker_errors_per_5_min,
            description="The worker function failed (crashed or timed out) on a batch.",
        )
        self.add_alarm(
            "WorkerThrottles",
            metric=throttles,
            threshold=1,
            description="The worker function was throttled: the account's concurrency is exhausted.",
        )
        self.dashboard.add_widgets(
            _graph(
                "Worker invocations / errors / throttles", [worker.metric_invocations(period=PERIOD), errors, throttles]
            ),
            _graph("Worker duration (ms)", [worker.metric_duration(period=PERIOD, statistic=cloudwatch.Stats.p(90))]),
            _graph("Worker concurrency", [worker.metric("ConcurrentExecutions", statistic=cloudwatch.Stats.MAXIMUM)]),
        )

    def watch_api(self, api: apigw.HttpApi) -> None:
        """An alarm on server errors; requests, errors and latency on the dashboard."""
        server_errors = api.metric_server_error(period=PERIOD, statistic=cloudwatch.Stats.SUM)
        self.add_alarm(
            "Api5xx",
            metric=server_errors,
            threshold=self._settings.alarms.api_5xx_per_5_min,
            description="The API answered with 5xx errors.",
        )
        self.dashboard.add_widgets(
            _graph("API requests", [api.metric_count(period=PERIOD)]),
            _graph("API 4xx / 5xx", [api.metric_client_error(period=PERIOD), server_errors]),
            _graph("API latency p90 (ms)", [api.metric_latency(period=PERIOD, statistic=cloudwatch.Stats.p(90))]),
        )

    def watch_state_machine(self, construct_id: str, state_machine: sfn.StateMachine) -> None:
        """Alarms on failed and timed-out executions of ``state_machine``; its executions on the dashboard."""
        failed = state_machine.metric_failed(period=PERIOD)
        timed_out = state_machine.metric_timed_out(period=PERIOD)
        self.add_alarm(
            f"{construct_id}Failed",
            metric=failed,
            threshold=1,
            description=f"Executions of the {construct_id} state machine failed.",
        )
        self.add_alarm(
            f"{construct_id}TimedOut",
            metric=timed_out,
            threshold=1,
            description=f"Executions of the {construct_id} state machine timed out.",
        )
        self.dashboard.add_widgets(
            _graph(
                f"{construct_id} executions started / failed / timed out",
                [state_machine.metric_started(period=PERIOD), failed, timed_out],
            )
        )

    def _watch_business_metrics(self) -> None:
        callback_failed = business_metric(Metric.CALLBACK_FAILED)
        self.add_alarm(
            "CallbackFailed",
            metric=callback_failed,
            threshold=1,
            description="A completion callback could not be delivered to the client's URL.",
        )
        self.dashboard.add_widgets(
            _graph(
                "Exports submitted / completed / failed / timed out / cancelled",
                [
                    business_metric(name)
                    for name in (Metric.SUBMITTED, Metric.COMPLETED, Metric.FAILED, Metric.TIMED_OUT, Metric.CANCELLED)
                ],
            ),
            _graph("Callbacks delivered / failed", [business_metric(Metric.CALLBACK_DELIVERED), callback_failed]),
            _graph(
                "Admission: deduplicated / deferred (hot key) / rejected (429)",
                [business_metric(name) for name in (Metric.DEDUPLICATED, Metric.DEFERRED, Metric.REJECTED)],
            ),
            _graph(
                "Worker: retried / redelivered (transient faults) / duplicate deliveries",
                [business_metric(name) for name in (Metric.RETRIED, Metric.REDELIVERED, Metric.DUPLICATE_DELIVERY)],
            ),
            _graph("Rows exported", [business_metric(Metric.ROWS_EXPORTED)]),
            _graph(
                "Export duration (ms)",
                [
                    business_metric(Metric.DURATION_MS, stat)
                    for stat in (cloudwatch.Stats.p(50), cloudwatch.Stats.p(90))
                ],
            ),
        )


def _graph(title: str, metrics: list[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=metrics, width=WIDGET_WIDTH)
