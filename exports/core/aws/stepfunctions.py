"""The task lifecycle workflow on Step Functions."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from exports.core.aws.errors import AwsError, translated
from exports.core.task import Task
from exports.core.workflows import (
    execution_input,
    fan_out_input,
    redelivery_input,
    redelivery_name,
    task_outcome,
)

if TYPE_CHECKING:
    from types_boto3_stepfunctions import SFNClient

logger = logging.getLogger(__name__)
# The execution no longer waits for this token: it timed out or was already told.
_MOVED_ON = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})


class StepFunctionsLifecycle:
    """:class:`exports.core.ports.Lifecycle`: one execution per task, named after it."""

    def __init__(self, client: SFNClient, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, task: Task) -> None:
        """Start the task's execution (its name is the task id, so a second start is refused)."""
        with translated("start lifecycle"):
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=task.task_id,
                input=json.dumps(execution_input(task.task_id, task.timeout_sec)),
            )

    def report_end(self, token: str, task: Task) -> None:
        """Hand the task's outcome to its waiting execution; a no-op if it moved on already."""
        try:
            with translated("report task end"):
                self._client.send_task_success(
                    taskToken=token,
                    output=json.dumps(task_outcome(task.status.value, task.notifies_at_end, task.delivers)),
                )
        except AwsError as error:
            if error.aws_code not in _MOVED_ON:
                raise
            logger.info("lifecycle execution already moved on", extra={"aws_code": error.aws_code})


class StepFunctionsFanOut:
    """:class:`exports.running.ports.FanOutStarter`: one execution per split attempt, named after it."""

    def __init__(self, client: SFNClient, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, task_id: str, attempt: int, partitions: int) -> None:
        """Start the attempt's execution (a second start of one attempt is refused)."""
        with translated("start fan-out"):
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=f"{task_id}-{attempt}",
                input=json.dumps(fan_out_input(task_id, attempt, partitions)),
            )


class StepFunctionsRedelivery:
    """:class:`exports.core.ports.Redelivery`: one execution per delivery and round, named after
    them (docs/destinations.md)."""

    def __init__(self, client: SFNClient, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, task_id: str, destination_id: str, requested_retries: int) -> None:
        """Start the round's execution."""
        with translated("start redelivery"):
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=redelivery_name(task_id, destination_id, requested_retries),
                input=json.dumps(redelivery_input(task_id, destination_id, requested_retries)),
            )
