"""EventBridge Scheduler as the timer of schedules: one Scheduler schedule per schedule, named
by its id, in the stage's group, evaluated by Scheduler in the schedule's own zone
(``ScheduleExpressionTimezone``: Scheduler handles DST), invoking the schedule function with the
firing's identity (docs/schedules.md).

Scheduler skips a cron time that falls in a DST gap; our rule fires it once at the gap's end
(exports/schedules/expression.py), so each schedule with such a firing ahead also has a one-time
companion (``at()`` in UTC, deleted by Scheduler once it ran) named ``<schedule id>-dst``.

Firings arrive spread over the schedule's flexible time window (exports/schedules/spread.py).
A firing refused for capacity is tried again by another one-time schedule, named
``retry-<firing time>-<schedule id>``, whose Input names the firing's own time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from exports.adapters.aws_errors import AwsError, translated
from exports.config.retry import SCHEDULE_TARGET_RETRY
from exports.schedules.model import Schedule
from exports.schedules.scheduler_expression import scheduler_expression
from exports.schedules.spread import spread_window
from exports.schedules.timer_window import timer_window

if TYPE_CHECKING:
    from types_boto3_scheduler import EventBridgeSchedulerClient

# Scheduler fills these context attributes in at each invocation.
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
EXECUTION_ID = "<aws.scheduler.execution-id>"
_NOT_FOUND = "ResourceNotFoundException"
# The one-time companion of a schedule, for its next firing moved out of a DST gap.
MOVED_FIRING_SUFFIX = "-dst"
# Scheduler's longest schedule name.
NAME_MAX_LENGTH = 64
# The one-time schedules that try a firing refused for capacity again (local mode lists them).
DEFERRED_FIRING_PREFIX = "retry-"


def moved_firing_name(schedule_id: str) -> str:
    """The companion's Scheduler name (within Scheduler's 64 characters: ids are 30)."""
    name = f"{schedule_id}{MOVED_FIRING_SUFFIX}"
    if len(name) > NAME_MAX_LENGTH:
        raise ValueError(f"schedule id too long for a Scheduler name: {schedule_id}")
    return name


def deferred_firing_name(schedule_id: str, scheduled_for: datetime) -> str:
    """The Scheduler name of the retry of the firing at ``scheduled_for``."""
    name = f"{DEFERRED_FIRING_PREFIX}{scheduled_for.astimezone(UTC):%Y%m%dT%H%M%S}-{schedule_id}"
    if len(name) > NAME_MAX_LENGTH:
        raise ValueError(f"schedule id too long for a Scheduler name: {schedule_id}")
    return name


def deferred_input(schedule_id: str, scheduled_for: datetime) -> str:
    """A retry's Input: the firing's own time, not the retry's (its idempotency key)."""
    stamp = f"{scheduled_for.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    return json.dumps({"schedule_id": schedule_id, "scheduled_time": stamp, "execution_id": EXECUTION_ID})


def flexible_window(window: timedelta) -> dict[str, Any]:
    """Scheduler's FlexibleTimeWindow for a spread of ``window`` (whole minutes)."""
    minutes = int(window.total_seconds() // 60)
    return {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": minutes} if minutes >= 1 else {"Mode": "OFF"}


def at_expression(instant: datetime) -> str:
    """Scheduler's one-time expression of ``instant``, to be read in UTC."""
    return f"at({instant.astimezone(UTC):%Y-%m-%dT%H:%M:%S})"


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

    def _target(self, schedule: Schedule, firing_input: str | None = None) -> dict[str, Any]:
        target: dict[str, Any] = {
            "Arn": self._target_arn,
            "RoleArn": self._role_arn,
            "Input": firing_input or target_input(schedule.schedule_id),
            "RetryPolicy": {
                "MaximumRetryAttempts": SCHEDULE_TARGET_RETRY.retries,
                "MaximumEventAgeInSeconds": SCHEDULE_TARGET_RETRY.max_age_sec,
            },
        }
        if self._dead_letter_arn:
            target["DeadLetterConfig"] = {"Arn": self._dead_letter_arn}
        return target

    def _request(self, schedule: Schedule, now: datetime) -> dict[str, Any]:
        window = timer_window(schedule, now)
        request: dict[str, Any] = {
            "Name": schedule.schedule_id,
            "GroupName": self._group,
            "ScheduleExpression": scheduler_expression(schedule.cron, schedule.every),
            "ScheduleExpressionTimezone": schedule.timezone,
            "FlexibleTimeWindow": flexible_window(spread_window(schedule)),
            "State": "ENABLED" if window.enabled else "DISABLED",
            "Target": self._target(schedule),
            "Description": f"exports schedule of {schedule.export_type}",
        }
        # Without a StartDate Scheduler starts a rate when the schedule is created or its
        # timing updated, which is the anchor local mode counts from.
        if window.start is not None:
            request["StartDate"] = window.start
        if window.end is not None:
            request["EndDate"] = window.end
        return request

    def _moved_request(self, schedule: Schedule, at: datetime) -> dict[str, Any]:
        # The same target and Input: Scheduler's scheduled time is then the at() time, the
        # moved firing's idempotency key.
        return {
            "Name": moved_firing_name(schedule.schedule_id),
            "GroupName": self._group,
            "ScheduleExpression": at_expression(at),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": flexible_window(spread_window(schedule)),
            "State": "ENABLED",
            "Target": self._target(schedule),
            "ActionAfterCompletion": "DELETE",
            "Description": f"exports schedule of {schedule.export_type}: its firing moved out of a DST gap",
        }

    def defer_firing(self, schedule: Schedule, scheduled_for: datetime, at: datetime) -> None:
        """Try the firing at ``scheduled_for`` again at ``at`` (create or move its retry)."""
        self._put(
            {
                "Name": deferred_firing_name(schedule.schedule_id, scheduled_for),
                "GroupName": self._group,
                "ScheduleExpression": at_expression(at),
                "ScheduleExpressionTimezone": "UTC",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "State": "ENABLED",
                "Target": self._target(schedule, deferred_input(schedule.schedule_id, scheduled_for)),
                "ActionAfterCompletion": "DELETE",
                "Description": f"exports schedule of {schedule.export_type}: a firing refused for capacity, again",
            }
        )

    def create(self, schedule: Schedule, now: datetime) -> None:
        """CreateSchedule (its window as of ``now``: exports/schedules/timer_window.py)."""
        self._put(self._request(schedule, now), create_only=True)

    def update(self, schedule: Schedule, now: datetime) -> None:
        """UpdateSchedule (it replaces every setting), or CreateSchedule if it is missing."""
        self._put(self._request(schedule, now))

    def set_moved_firing(self, schedule: Schedule, at: datetime | None) -> None:
        """Point the companion at ``at`` (create or update it), or delete it (None)."""
        if at is None:
            self._delete(moved_firing_name(schedule.schedule_id))
        else:
            self._put(self._moved_request(schedule, at))

    def delete(self, schedule_id: str) -> None:
        """DeleteSchedule of the schedule and its companion; one already gone is fine."""
        self._delete(schedule_id)
        self._delete(moved_firing_name(schedule_id))

    def _put(self, request: dict[str, Any], create_only: bool = False) -> None:
        if not create_only:
            try:
                with translated("update Scheduler schedule"):
                    self._client.update_schedule(**request)
                return
            except AwsError as error:
                if error.aws_code != _NOT_FOUND:
                    raise
        with translated("create Scheduler schedule"):
            self._client.create_schedule(**request)

    def _delete(self, name: str) -> None:
        try:
            with translated("delete Scheduler schedule"):
                self._client.delete_schedule(Name=name, GroupName=self._group)
        except AwsError as error:
            if error.aws_code != _NOT_FOUND:
                raise

    def describe(self, schedule_id: str) -> dict[str, Any]:
        """GetSchedule's answer (tests and operators)."""
        with translated("get Scheduler schedule"):
            return dict(self._client.get_schedule(Name=schedule_id, GroupName=self._group))
