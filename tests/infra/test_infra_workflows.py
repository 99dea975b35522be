"""The Workflows construct gives every state machine logging, tracing, alarms and an output.

The stack has no state machine yet (the orchestration issue adds them), so this builds a small
stack with one Pass state through the same construct.
"""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from infra.monitoring import Monitoring
from infra.settings import StageSettings
from infra.workflows import Workflows

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def workflow_stack(tmp_path_factory):
    app = App(outdir=str(tmp_path_factory.mktemp("workflows.out")))
    stack = Stack(app, "WorkflowsOnly")
    settings = StageSettings.preset("prod")
    monitoring = Monitoring(stack, "Monitoring", settings=settings)
    workflows = Workflows(stack, "Workflows", settings=settings, monitoring=monitoring)
    state_machine = workflows.add_state_machine(
        "Lifecycle",
        definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Start")),
        timeout=Duration.hours(2),
        comment="Lifecycle of one export task",
    )
    return app, stack, state_machine, Template.from_stack(stack), settings


def test_the_state_machine_is_standard_logged_without_data_traced_and_bounded(workflow_stack):
    *_, template, settings = workflow_stack
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]

    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert (logging["Level"], logging["IncludeExecutionData"]) == ("ALL", False)
    (destination,) = logging["Destinations"]
    log_group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    log_group = template.to_json()["Resources"][log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == settings.log_retention_days
    assert '"TimeoutSeconds":7200' in str(props["DefinitionString"])


def test_failed_and_timed_out_executions_alarm(workflow_stack):
    _, stack, _, template, _ = workflow_stack
    alarms = {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
    }

    for name, metric in (("LifecycleFailed", "ExecutionsFailed"), ("LifecycleTimedOut", "ExecutionsTimedOut")):
        alarm = alarms[f"{stack.stack_name}-{name}"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Threshold"]) == ("AWS/States", metric, 1)


def test_the_state_machine_arn_is_an_output(workflow_stack):
    _, stack, state_machine, template, _ = workflow_stack
    machine_id = stack.resolve(stack.get_logical_id(state_machine.node.default_child))

    values = [output["Value"] for output in template.to_json()["Outputs"].values()]

    assert {"Ref": machine_id} in values


def test_cdk_nag_accepts_the_state_machine(workflow_stack):
    app, *_ = workflow_stack
    report = AwsSolutionsChecks(app).validate_scope(app)

    assert [violation.rule_name for violation in report.violations] == []
