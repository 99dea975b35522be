"""Step Functions: the task lifecycle state machine, and the one way to add a state machine.

:meth:`Workflows.add_state_machine` gives every state machine the same logging (its own log
group, all events, no execution data), X-Ray tracing, an execution timeout, alarms on failed and
timed-out executions, and an ARN output. The lifecycle definition itself lives in
:mod:`exports.core.workflows`, which local mode and the tests execute too; it is rendered here with the
real function ARNs.

The lifecycle state machine's name is derived from the stack's (two stacks of one stage can share
an account and region), so its ARN is known before it exists
(:attr:`Workflows.lifecycle_arn`): the functions get that ARN in their environment and policies,
while the state machine refers to the functions. Referring to the resource instead would close a
circle (definition -> functions -> state machine) that CloudFormation refuses.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, cast

from aws_cdk import ArnFormat, CfnOutput, Duration, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from exports.core.config.limits import Limits
from exports.core.config.worker import Worker
from exports.core.workflows import fan_out_definition, lifecycle_definition, redelivery_definition
from infra.function_factory import ServiceFunction, log_group
from infra.monitoring import Monitoring
from infra.nag import acknowledge
from infra.settings import StageSettings

LIFECYCLE: Final = "Lifecycle"
FAN_OUT: Final = "FanOut"
REDELIVERY: Final = "Redelivery"
VENDED_LOGS_PREFIX: Final = "/aws/vendedlogs/states/"


def lifecycle_state_machine_name(stack_name: str) -> str:
    """The lifecycle state machine's physical name in the stack ``stack_name``
    (``exports-dev-lifecycle``)."""
    return f"{stack_name}-{LIFECYCLE.lower()}"


def fan_out_state_machine_name(stack_name: str) -> str:
    """The fan-out state machine's physical name in the stack ``stack_name``
    (``exports-dev-fanout``)."""
    return f"{stack_name}-{FAN_OUT.lower()}"


def redelivery_state_machine_name(stack_name: str) -> str:
    """The redelivery state machine's physical name in the stack ``stack_name``
    (``exports-dev-redelivery``)."""
    return f"{stack_name}-{REDELIVERY.lower()}"


def state_machine_log_group_name(state_machine_name: str, creation_id: str) -> str:
    """Where a state machine logs: under ``/aws/vendedlogs/states/``, the prefix whose resource
    policy CloudWatch Logs keeps short (otherwise the account-wide 5,120-character policy limit
    fails deploys once a few state machines log), ending in ``creation_id``
    (:func:`stack_creation_id`). A protected stage keeps its log groups when the stack is
    deleted: a name of its own per stack creation lets the next create of the same stack succeed
    beside them."""
    return f"{VENDED_LOGS_PREFIX}{state_machine_name}-{creation_id}"


def stack_creation_id(stack: Stack) -> str:
    """The UUID CloudFormation gives the stack when it is created (the last part of
    ``AWS::StackId``): the same for every update, new after a delete and create."""
    return Fn.select(2, Fn.split("/", stack.stack_id))


def longest_execution_sec(definition: Mapping[str, Any], function_timeouts: Mapping[str, int]) -> int:
    """An upper bound of one execution's run time, read from its definition.

    Each Task state is entered at most once (the definition has no loops) and tried at most
    ``1 + sum(MaxAttempts)`` times. An attempt is bounded by the invoked function's timeout, or by
    a longer ``TimeoutSeconds`` (for ``TimeoutSecondsPath``: the longest task timeout the API
    accepts). Retry pauses (each at most its ``MaxDelaySeconds``; full jitter only shortens
    them) are added on top. ``function_timeouts`` maps each ``FunctionName`` of
    the definition to that function's timeout. Generous on purpose: an execution that times out
    would lose its callback.
    """
    total = 0.0
    for state in definition["States"].values():
        if state["Type"] != "Task":
            continue
        function_sec = function_timeouts[state["Parameters"]["FunctionName"]]
        wait_sec = state.get("TimeoutSeconds", Limits.TIMEOUT_SEC_MAX if "TimeoutSecondsPath" in state else 0)
        retries = state.get("Retry", [])
        attempts = 1 + sum(retrier["MaxAttempts"] for retrier in retries)
        pauses = sum(
            min(
                retrier.get("MaxDelaySeconds", math.inf), retrier["IntervalSeconds"] * retrier["BackoffRate"] ** attempt
            )
            for retrier in retries
            for attempt in range(retrier["MaxAttempts"])
        )
        total += attempts * max(function_sec, wait_sec) + pauses
    return math.ceil(total / 60) * 60  # whole minutes read better in the console


class Workflows(Construct):
    """The service's state machines, each logged, traced and watched."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings, monitoring: Monitoring) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._monitoring = monitoring
        self.state_machines: dict[str, sfn.StateMachine] = {}
        self.lifecycle_name = lifecycle_state_machine_name(Stack.of(self).stack_name)
        self.lifecycle_arn = self._arn("stateMachine", self.lifecycle_name)
        # Known before it exists too: the worker starts it, and it invokes the worker.
        self.fan_out_name = fan_out_state_machine_name(Stack.of(self).stack_name)
        self.fan_out_arn = self._arn("stateMachine", self.fan_out_name)
        # Known before it exists too: the API starts it, and it invokes the callback function.
        self.redelivery_name = redelivery_state_machine_name(Stack.of(self).stack_name)
        self.redelivery_arn = self._arn("stateMachine", self.redelivery_name)

    def _arn(self, resource: str, name: str) -> str:
        """A Step Functions ARN in this stack's partition, region and account."""
        return Stack.of(self).format_arn(
            service="states", resource=resource, resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )

    def add_fan_out(self, *, worker: ServiceFunction) -> sfn.StateMachine:
        """The fan-out state machine (:func:`exports.core.workflows.fan_out_definition`): a
        Distributed Map of worker invocations, at most the stage's ``max_partitions`` at once."""
        definition = fan_out_definition(
            worker.function.function_arn, self._settings.max_partitions, partition=Stack.of(self).partition
        )
        state_machine = self.add_state_machine(
            FAN_OUT,
            definition=definition,
            # A split export ends by its task's deadline; the assembly and abandonment after it
            # take at most a few worker runs.
            timeout=Duration.seconds(Limits.TIMEOUT_SEC_MAX + 3 * Worker.FUNCTION_TIMEOUT_SEC),
            description="Fan-out state machine: one execution per split export (partitions, then assembly)",
            state_machine_name=self.fan_out_name,
        )
        state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[worker.function.function_arn])
        )
        # A Distributed Map runs its iterations as child executions of its own state machine.
        executions = self._arn("execution", f"{self.fan_out_name}/*")
        state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[self.fan_out_arn])
        )
        state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution", "states:StopExecution"], resources=[executions])
        )
        acknowledge(
            state_machine.role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
            f"{self.fan_out_name}/*]",
            "A Distributed Map's child executions have generated names under its state machine.",
        )
        return state_machine

    def add_lifecycle(self, *, lifecycle: ServiceFunction, callback: ServiceFunction) -> sfn.StateMachine:
        """The task lifecycle state machine (:func:`exports.core.workflows.lifecycle_definition`),
        named :attr:`lifecycle_name`, allowed to invoke exactly its two functions."""
        functions = (lifecycle.function, callback.function)
        definition = lifecycle_definition(
            lifecycle.function.function_arn, callback.function.function_arn, partition=Stack.of(self).partition
        )
        timeout_sec = longest_execution_sec(
            definition,
            {function.function_arn: int(cast(Duration, function.timeout).to_seconds()) for function in functions},
        )
        state_machine = self.add_state_machine(
            LIFECYCLE,
            definition=definition,
            timeout=Duration.seconds(timeout_sec),
            description="Lifecycle state machine: one execution per export task (its deadline and callback)",
            state_machine_name=self.lifecycle_name,
        )
        state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[function.function_arn for function in functions]
            )
        )
        return state_machine

    def add_redelivery(self, *, callback: ServiceFunction) -> sfn.StateMachine:
        """The redelivery state machine (:func:`exports.core.workflows.redelivery_definition`):
        a FAILED delivery tried again on request, named :attr:`redelivery_name`, allowed to
        invoke the callback function only."""
        definition = redelivery_definition(callback.function.function_arn, partition=Stack.of(self).partition)
        timeout_sec = longest_execution_sec(
            definition, {callback.function.function_arn: int(cast(Duration, callback.function.timeout).to_seconds())}
        )
        state_machine = self.add_state_machine(
            REDELIVERY,
            definition=definition,
            timeout=Duration.seconds(timeout_sec),
            description="Redelivery state machine: one execution per failed delivery retried on request",
            state_machine_name=self.redelivery_name,
        )
        state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[callback.function.function_arn])
        )
        return state_machine

    def add_state_machine(
        self,
        construct_id: str,
        *,
        definition: Mapping[str, Any],
        timeout: Duration,
        description: str,
        state_machine_name: str,
    ) -> sfn.StateMachine:
        """A Standard state machine for the Amazon States Language ``definition``, with its
        execution ``timeout``, logs, tracing, alarms and an ARN output.

        Tokens (function ARNs, ...) may appear in the definition's strings: CloudFormation fills
        them in. Keep the states per task few: Standard workflows are billed per state transition.
        """
        if "TimeoutSeconds" in definition:
            raise ValueError(f"{construct_id}: give the execution timeout as `timeout`, not in the definition")
        # CDK applies `timeout` only to definitions it builds itself; a string carries its own.
        body = {**definition, "TimeoutSeconds": int(timeout.to_seconds())}
        state_machine = sfn.StateMachine(
            self,
            construct_id,
            state_machine_name=state_machine_name,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(body)),
            state_machine_type=sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group(
                    self,
                    f"{construct_id}Logs",
                    self._settings,
                    log_group_name=state_machine_log_group_name(state_machine_name, stack_creation_id(Stack.of(self))),
                ),
                level=sfn.LogLevel.ALL,
                include_execution_data=False,
            ),
        )
        acknowledge(
            state_machine.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Step Functions log delivery (logs:*LogDelivery, DescribeLogGroups, ...) and X-Ray accept no "
            "resource-level scoping.",
        )
        self._monitoring.watch_state_machine(construct_id, state_machine)
        output = CfnOutput(self, f"{construct_id}Arn", value=state_machine.state_machine_arn, description=description)
        output.override_logical_id(f"{construct_id}StateMachineArn")
        self.state_machines[construct_id] = state_machine
        return state_machine
