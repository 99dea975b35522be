"""Scheduled exports on AWS (docs/schedules.md): the EventBridge Scheduler group of the stack, the
role Scheduler assumes to invoke the schedule function, the dead-letter queue of that target, the
permissions of the functions that manage schedules or mail their runs, and their alarms.

The API function creates one Scheduler schedule per export schedule in the group, with the target
(the schedule function), the role, the retry policy (:class:`exports.core.config.schedules.Schedules`) and the
dead-letter queue this module deploys; it learns them from the variables of :meth:`environment`.
Scheduler invokes Lambda asynchronously: its retry policy and dead-letter queue cover the delivery
to Lambda, and the function's own failures are retried by Lambda and then sent to the same queue
(:meth:`ScheduledExports.deliver_to`), so a lost firing always ends there.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from exports.core.config.env import Env
from exports.core.config.names import SERVICE_NAME
from exports.core.config.queues import Queue
from exports.core.config.retry import SCHEDULE_FUNCTION_RETRY
from exports.schedules.eventbridge_scheduler import DEFERRED_FIRING_PREFIX, MOVED_FIRING_SUFFIX
from infra.function_factory import ServiceFunction
from infra.monitoring import PERIOD, WIDGET_WIDTH, Monitoring, Runbook, Runbooks, Severity
from infra.nag import acknowledge
from infra.settings import StageSettings

SCHEDULER_PRINCIPAL: Final = "scheduler.amazonaws.com"
# What the API function does with a Scheduler schedule of its group, and nothing else.
MANAGE_ACTIONS: Final = (
    "scheduler:CreateSchedule",
    "scheduler:UpdateSchedule",
    "scheduler:DeleteSchedule",
    "scheduler:GetSchedule",
)
# What the schedule function does to a schedule that pauses itself at a firing: disable it.
PAUSE_ACTIONS: Final = ("scheduler:GetSchedule", "scheduler:UpdateSchedule")
# What it also does after a firing, on the one-time companions (``<id>-dst``) only: point one at
# the schedule's next firing moved out of a DST gap (an update is a PAUSE_ACTIONS one), or delete it.
MOVED_FIRING_ACTIONS: Final = ("scheduler:CreateSchedule", "scheduler:DeleteSchedule")
# And on the one-time retries of firings refused for capacity (``retry-...``): create one (moving
# it again is an update; Scheduler deletes it once it ran).
DEFERRED_FIRING_ACTIONS: Final = ("scheduler:CreateSchedule",)
MAIL_ACTIONS: Final = ("ses:SendEmail", "ses:SendRawEmail")
# EventBridge Scheduler's metrics (namespace AWS/Scheduler, per schedule group).
SCHEDULER_NAMESPACE: Final = "AWS/Scheduler"
GROUP_DIMENSION: Final = "ScheduleGroup"
# SES's account-level reputation metrics.
SES_NAMESPACE: Final = "AWS/SES"


class ScheduleRunbooks:
    """The runbooks of the scheduled-export alarms (docs/alarms.md has a section for each)."""

    DEAD_LETTERS: Final = Runbook(
        "schedule-dead-letters",
        "A firing made no task: read the message (schedule_id, scheduled_time), fix, then invoke the "
        "schedule function with it.",
    )
    TARGET_ERRORS: Final = Runbook(
        "scheduler-target-errors", "Scheduler could not invoke the schedule function: check its role and the function."
    )
    FIRINGS_LOST: Final = Runbook(
        "schedule-firings-lost",
        "Firings were dropped, not even dead-lettered: check the schedules' dead-letter queue and its grant.",
    )
    MAIL_REPUTATION: Final = Runbook(
        "mail-reputation",
        "Open SES's reputation dashboard; find the schedules mailing the bouncing or complaining addresses.",
    )

    @classmethod
    def all(cls) -> tuple[Runbook, ...]:
        """Every runbook of scheduled exports."""
        return (cls.DEAD_LETTERS, cls.TARGET_ERRORS, cls.FIRINGS_LOST, cls.MAIL_REPUTATION)


def schedule_group_name(stack_name: str) -> str:
    """The stack's schedule group (``exports-dev-schedules``): one per stack, so two stacks in an
    account never manage each other's schedules. Scheduler allows 64 characters."""
    name = f"{stack_name}-schedules"
    if len(name) > 64:
        raise ValueError(
            f"the schedule group name {name!r} is over Scheduler's 64 characters: use a shorter stack name"
        )
    return name


def schedule_function_name(stack_name: str) -> str:
    """The schedule function's physical name (``exports-dev-schedule``): Lambda allows 64
    characters, which a stack name the group allows (54) keeps to."""
    return f"{stack_name}-schedule"


class ScheduledExports(Construct):
    """The schedule group, the dead-letter queue of its target and the role Scheduler assumes."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        stack = Stack.of(self)
        self.group = scheduler.CfnScheduleGroup(self, "Group", name=schedule_group_name(stack.stack_name))
        self.group_name = self.group.ref
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.seconds(Queue.DLQ_RETENTION_SEC),
        )
        acknowledge(
            self.dead_letters,
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the schedules' target and of the schedule function.",
        )
        # Only Scheduler, for schedules of this account's group (the confused-deputy guard AWS
        # documents for Scheduler's execution role).
        self.role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                SCHEDULER_PRINCIPAL,
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": self.group.attr_arn},
                },
            ),
            description=f"{SERVICE_NAME} EventBridge Scheduler: invokes the schedule function, dead-letters a firing",
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.dead_letters.queue_arn])
        )

    @property
    def target_name(self) -> str:
        """The schedule function's name (``exports-dev-schedule``)."""
        return schedule_function_name(Stack.of(self).stack_name)

    def target_arn(self) -> str:
        """The schedule function's ARN, built from its name."""
        return Stack.of(self).format_arn(
            service="lambda",
            resource="function",
            resource_name=self.target_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def schedules_arn(self, suffix: str = "", prefix: str = "") -> str:
        """The ARN of every schedule of the group (``…:schedule/<group>/*``), or of those whose
        name starts with ``prefix`` and ends with ``suffix``."""
        return Stack.of(self).format_arn(
            service="scheduler",
            resource="schedule",
            resource_name=f"{self.group_name}/{prefix}*{suffix}",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    def environment(self) -> dict[str, str]:
        """The variables of scheduled exports (the table's name comes from the tables), the mail
        variables only when mail is configured."""
        limits, mail = self._settings.schedule_limits, self._settings.mail
        variables = {
            Env.SCHEDULE_GROUP: self.group_name,
            Env.SCHEDULE_TARGET_ARN: self.target_arn(),
            Env.SCHEDULER_ROLE_ARN: self.role.role_arn,
            Env.SCHEDULE_DLQ_ARN: self.dead_letters.queue_arn,
            Env.MAX_SCHEDULES_PER_USER: str(limits.max_per_user),
            Env.MIN_SCHEDULE_INTERVAL_MIN: str(limits.min_interval_min),
        }
        if mail.sender:
            variables[Env.MAIL_SENDER] = mail.sender
            variables[Env.MAIL_ATTACHMENT_MAX_BYTES] = str(mail.attachment_max_bytes)
            if mail.allowed_domains:
                variables[Env.MAIL_ALLOWED_DOMAINS] = ",".join(mail.allowed_domains)
        return variables

    def deliver_to(self, target: ServiceFunction) -> None:
        """Scheduler may invoke ``target`` (that function only); Lambda retries its failures and
        then sends the firing to the dead-letter queue."""
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[target.function.function_arn])
        )
        lambda_.CfnEventInvokeConfig(
            self,
            "TargetRetries",
            function_name=target.function.function_name,
            qualifier="$LATEST",
            maximum_retry_attempts=SCHEDULE_FUNCTION_RETRY.retries,
            maximum_event_age_in_seconds=SCHEDULE_FUNCTION_RETRY.max_age_sec,
            destination_config=lambda_.CfnEventInvokeConfig.DestinationConfigProperty(
                on_failure=lambda_.CfnEventInvokeConfig.OnFailureProperty(destination=self.dead_letters.queue_arn)
            ),
        ).node.add_dependency(target.role)
        target.allow(["sqs:SendMessage"], [self.dead_letters.queue_arn])

    def allow_managing(self, function: ServiceFunction) -> None:
        """``function`` (the API) creates, updates, reads and deletes the group's schedules."""
        self._allow_schedules(function, MANAGE_ACTIONS)

    def allow_pausing(self, function: ServiceFunction) -> None:
        """``function`` (the schedule function) reads a schedule of the group and disables it,
        creates, moves or deletes the one-time companions of the moved firings, and creates the
        one-time retries of the firings refused for capacity."""
        self._allow_schedules(function, PAUSE_ACTIONS)
        self._allow_schedules(function, MOVED_FIRING_ACTIONS, MOVED_FIRING_SUFFIX)
        self._allow_schedules(function, DEFERRED_FIRING_ACTIONS, prefix=DEFERRED_FIRING_PREFIX)

    def _allow_schedules(
        self, function: ServiceFunction, actions: tuple[str, ...], suffix: str = "", prefix: str = ""
    ) -> None:
        """``actions`` on the group's schedules (named ``<prefix>*<suffix>``), and handing them
        Scheduler's role (to Scheduler only): an update names the role again."""
        function.allow(list(actions), [self.schedules_arn(suffix, prefix)])
        function.allow(
            ["iam:PassRole"],
            [self.role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": SCHEDULER_PRINCIPAL}},
        )
        acknowledge(
            function.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/"
            f"<{Stack.of(self).resolve(self.group.logical_id)}>/{prefix}*{suffix}]",
            "Schedules are named by export schedule ids made at run time; the grant covers this stack's group only.",
        )

    def allow_mail(self, function: ServiceFunction) -> None:
        """``function`` sends the runs' mail from the configured sender (nothing without one): on
        the sender's SES identity, which is the address or its domain, whichever was verified."""
        mail = self._settings.mail
        if not mail.sender or not mail.sender_domain:
            return
        stack = Stack.of(self)
        identities = [
            stack.format_arn(service="ses", resource="identity", resource_name=name)
            for name in (mail.sender, mail.sender_domain)
        ]
        function.allow(list(MAIL_ACTIONS), identities, conditions={"StringEquals": {"ses:FromAddress": mail.sender}})

    def watch(self, monitoring: Monitoring, target: ServiceFunction) -> None:
        """Alarms on a firing that made no task (dead letters), on Scheduler failing to invoke the
        target, on firings lost altogether, and on the schedule function's errors; Scheduler's
        numbers on the dashboard. Throttles are not faults (Scheduler and Lambda retry them)."""
        dead = self.dead_letters.metric_approximate_number_of_messages_visible(
            statistic=cloudwatch.Stats.MAXIMUM, period=Duration.minutes(1)
        )
        monitoring.add_alarm(
            "ScheduleDeadLetters",
            metric=dead,
            threshold=1,
            description="A schedule's firing made no export: Scheduler could not deliver it, or the schedule "
            "function failed on it after its retries.",
            runbook=ScheduleRunbooks.DEAD_LETTERS,
            # As the lanes' dead-letter alarms: SQS stops publishing for an idle queue.
            missing_data=cloudwatch.TreatMissingData.IGNORE,
        )
        target_errors = self.metric("TargetErrorCount")
        monitoring.add_alarm(
            "SchedulerTargetErrors",
            metric=target_errors,
            threshold=1,
            description="EventBridge Scheduler's invocation of the schedule function failed (its role, or the "
            "function's configuration).",
            runbook=ScheduleRunbooks.TARGET_ERRORS,
        )
        lost = cloudwatch.MathExpression(
            expression="FILL(dropped, 0) + FILL(undeliverable, 0)",
            using_metrics={
                "dropped": self.metric("InvocationDroppedCount"),
                "undeliverable": self.metric("InvocationsFailedToBeSentToDeadLetterCount"),
            },
            period=PERIOD,
            label="firings lost",
        )
        monitoring.add_alarm(
            "ScheduleFiringsLost",
            metric=lost,
            threshold=1,
            description="Scheduler dropped firings after its retries and could not dead-letter them: those runs "
            "are lost.",
            runbook=ScheduleRunbooks.FIRINGS_LOST,
        )
        errors = target.function.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM)
        monitoring.add_alarm(
            "ScheduleErrors",
            metric=errors,
            threshold=1,
            description="The schedule function failed on a firing (an exception or a timeout); Lambda retries it.",
            runbook=Runbooks.FUNCTION_ERRORS,
        )
        if self._settings.mail.sender:
            self._watch_mail(monitoring)
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Schedules: firings / target errors / throttled / dead-lettered",
                left=[
                    self.metric("InvocationAttemptCount"),
                    target_errors,
                    self.metric("TargetErrorThrottledCount"),
                    self.metric("InvocationThrottleCount"),
                    self.metric("InvocationsSentToDeadLetterCount"),
                ],
                width=WIDGET_WIDTH,
            ),
            cloudwatch.GraphWidget(title="Schedule function errors", left=[errors], width=WIDGET_WIDTH),
        )

    def _watch_mail(self, monitoring: Monitoring) -> None:
        """Alarms on SES's bounce and complaint rates (the account's reputation, over all its
        mail), at the rates where AWS starts to review an account that mails: a schedule
        mailing addresses that bounce or complain puts every sender of the account at risk."""
        thresholds = self._settings.alarms
        rates = []
        for name, metric_name, threshold, what in (
            ("MailBounceRate", "Reputation.BounceRate", thresholds.mail_bounce_rate, "bounce"),
            ("MailComplaintRate", "Reputation.ComplaintRate", thresholds.mail_complaint_rate, "complaint"),
        ):
            rate = cloudwatch.Metric(
                namespace=SES_NAMESPACE, metric_name=metric_name, statistic=cloudwatch.Stats.MAXIMUM, period=PERIOD
            )
            monitoring.add_alarm(
                name,
                metric=rate,
                threshold=threshold,
                description=f"SES's {what} rate of the account reached {threshold:.1%}: AWS reviews the account's "
                "sending there and may pause it higher up, for every sender of the account.",
                runbook=ScheduleRunbooks.MAIL_REPUTATION,
                severity=Severity.TICKET,
                # SES publishes the rates only while the account sends.
                missing_data=cloudwatch.TreatMissingData.IGNORE,
            )
            rates.append(rate)
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Mail: SES bounce / complaint rate", left=rates, width=WIDGET_WIDTH)
        )

    def metric(self, name: str) -> cloudwatch.Metric:
        """Scheduler's metric ``name`` for this stack's group, summed per period."""
        return cloudwatch.Metric(
            namespace=SCHEDULER_NAMESPACE,
            metric_name=name,
            dimensions_map={GROUP_DIMENSION: self.group_name},
            statistic=cloudwatch.Stats.SUM,
            period=PERIOD,
        )
