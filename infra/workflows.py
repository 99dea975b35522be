"""Step Functions: where the lifecycle state machines of the orchestration issue go.

None exists yet (the callback function and its workflow are not built), so the stack creates
none. :meth:`Workflows.add_state_machine` is the one way to add one: it gives every state
machine the same logging (its own log group, all events, no execution data), X-Ray tracing, a
timeout, alarms on failed and timed-out executions, and an ARN output.
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.function_factory import log_group
from infra.monitoring import Monitoring
from infra.nag import acknowledge
from infra.settings import StageSettings


class Workflows(Construct):
    """The service's state machines, each logged, traced and watched."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings, monitoring: Monitoring) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._monitoring = monitoring
        self.state_machines: dict[str, sfn.StateMachine] = {}

    def add_state_machine(
        self, construct_id: str, *, definition_body: sfn.DefinitionBody, timeout: Duration, comment: str
    ) -> sfn.StateMachine:
        """A Standard state machine for ``definition_body``, with logs, tracing, alarms and output.

        Keep the states per task few: Standard workflows are billed per state transition.
        """
        state_machine = sfn.StateMachine(
            self,
            construct_id,
            comment=comment,
            definition_body=definition_body,
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group(self, f"{construct_id}Logs", self._settings),
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
        CfnOutput(self, f"{construct_id}Arn", value=state_machine.state_machine_arn, description=comment)
        self.state_machines[construct_id] = state_machine
        return state_machine
