"""EventBridge Scheduler as the timer of schedules: one Scheduler schedule per schedule, named
by its id, in the stage's group, evaluated by Scheduler in the schedule's own zone
(``ScheduleExpressionTimezone``: Scheduler handles DST), invoking the schedule function with the
firing's identity (docs/schedules.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from exports.adapters.aws_errors import AwsError, translated
from exports.config import Schedules
from exports.schedules.model import Schedule
from exports.schedules.scheduler_expression import scheduler_expression

if TYPE_CHECKING:
    from types_boto3_scheduler import EventBridgeSchedulerClient

# Scheduler fills these context attributes in at each invocation.
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
EXECUTION_ID = "<aws.scheduler.execution-id>"
_NOT_FOUND = "ResourceNotFoundException"


def target_input(schedule_id: str) -> str:
    """The target's Input: the schedule and Scheduler's context attributes of the firing."""
    return json.dumps({"schedule_id": schedule_id, "scheduled_time": SCHEDULED_TIME, "execution_id": EXECUTION_ID})


class EventBridgeScheduleTimer:
    """:class:`exports.schedules.ports.ScheduleTimer` on EventBridge Scheduler."""

    def __init__(
        self,
        client: EventBridgeSchedulerClient,
        group: str,
        target_arn: str,
        role_arn: str,
        dead_letter_arn: str | None = None,
    ) -> None:
        self._client = client
        self._group = group
        self._target_arn = target_arn
        self._role_arn = role_arn
        self._dead_letter_arn = dead_letter_arn

    def _request(self, schedule: Schedule) -> dict[str, Any]:
        target: dict[str, Any] = {
            "Arn": self._target_arn,
            "RoleArn": self._role_arn,
            "Input": target_input(schedule.schedule_id),
            "RetryPolicy": {
                "MaximumRetryAttempts": Schedules.TARGET_MAX_RETRY_ATTEMPTS,
                "MaximumEventAgeInSeconds": Schedules.TARGET_MAX_EVENT_AGE_SEC,
            },
        }
        if self._dead_letter_arn:
            target["DeadLetterConfig"] = {"Arn": self._dead_letter_arn}
        request: dict[str, Any] = {
            "Name": schedule.schedule_id,
            "GroupName": self._group,
            "ScheduleExpression": scheduler_expression(schedule.cron, schedule.every),
            "ScheduleExpressionTimezone": schedule.timezone,
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "State": "ENABLED" if schedule.is_active else "DISABLED",
            "Target": target,
            "Description": f"exports schedule of {schedule.export_type}",
        }
        # Only the owner's start_at: without it Scheduler starts a rate when the schedule is
        # created or its timing updated, which is the anchor local mode counts from.
        if schedule.start_at is not None:
            request["StartDate"] = schedule.start_at
        if schedule.end_at is not None:
            request["EndDate"] = schedule.end_at
        return request

    def create(self, schedule: Schedule) -> None:
        """CreateSchedule."""
        with translated("create Scheduler schedule"):
            self._client.create_schedule(**self._request(schedule))

    def update(self, schedule: Schedule) -> None:
        """UpdateSchedule (it replaces every setting), or CreateSchedule if it is missing."""
        try:
            with translated("update Scheduler schedule"):
                self._client.update_schedule(**self._request(schedule))
        except AwsError as error:
            if error.aws_code != _NOT_FOUND:
                raise
            self.create(schedule)

    def delete(self, schedule_id: str) -> None:
        """DeleteSchedule; one already gone is fine."""
        try:
            with translated("delete Scheduler schedule"):
                self._client.delete_schedule(Name=schedule_id, GroupName=self._group)
        except AwsError as error:
            if error.aws_code != _NOT_FOUND:
                raise

    def describe(self, schedule_id: str) -> dict[str, Any]:
        """GetSchedule's answer (tests and operators)."""
        with translated("get Scheduler schedule"):
            return dict(self._client.get_schedule(Name=schedule_id, GroupName=self._group))
