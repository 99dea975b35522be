"""The schedules' composition: the schedules table and, when deployed, EventBridge Scheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from exports.accepting.dependencies import ApiDependencies
from exports.core.aws.clients import aws_client

if TYPE_CHECKING:
    from exports.schedules.dependencies import ScheduleDependencies


def compose_schedules(api: ApiDependencies) -> ScheduleDependencies:
    """The schedules' adapters beside the submit path's ``api`` (the API function's, the
    schedule function's): the schedules table and, when the deployment names its target and
    role, EventBridge Scheduler."""
    from exports.schedules.dependencies import ScheduleDependencies
    from exports.schedules.dynamodb_schedules import DynamoScheduleStore

    settings = api.settings
    timer = None
    if settings.schedule_target_arn and settings.scheduler_role_arn:
        from exports.schedules.eventbridge_scheduler import EventBridgeScheduleTimer

        timer = EventBridgeScheduleTimer(
            aws_client("scheduler"),
            settings.schedule_group,
            settings.schedule_target_arn,
            settings.scheduler_role_arn,
            settings.schedule_dlq_arn,
        )
    return ScheduleDependencies(
        api=api, schedules=DynamoScheduleStore(aws_client("dynamodb"), settings.schedules_table), timer=timer
    )
