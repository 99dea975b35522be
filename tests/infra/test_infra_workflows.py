"""The lifecycle state machine: the definition of exports.core.workflows, deployed as it is, logged,
traced, watched, allowed to invoke exactly its two functions, and known to the functions by an
ARN built from its name (no circular dependency)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Duration, Stack

from exports.core.config.callbacks import Callback
from exports.core.config.destinations import Destinations
from exports.core.config.env import Env
from exports.core.config.fan_out import FanOut
from exports.core.config.limits import Capacity, Limits
from exports.core.config.retry import (
    CALLBACK_RETRY,
    FILE_DELIVERY_RETRY,
    LIFECYCLE_INVOCATION_SEC,
    LIFECYCLE_THROTTLE_RETRY,
    PARTITION_SOURCE_BUSY_WAIT_SEC,
)
from exports.core.config.worker import Worker
from exports.core.workflows import (
    FAN_OUT_FAILED_ERROR,
    PartitionStatus,
    fan_out_definition,
    lambda_invoke,
    lifecycle_definition,
    redelivery_definition,
)
from exports.running.endings import Outcome
from exports.running.writers.sink import MIN_PART_BYTES
from infra.monitoring import Monitoring
from infra.settings import StageSettings
from infra.sizing import Sizing
from infra.workflows import (
    Workflows,
    lifecycle_state_machine_name,
    longest_execution_sec,
    redelivery_state_machine_name,
)

pytestmark = pytest.mark.infra


# How deployed_definition writes the stack's partition (a Ref AWS::Partition).
PARTITION = "<AWS::Partition>"


def deployed_definition(synth, state_machine=None):
    """The state machine's (default: the lifecycle's) definition with each ``Fn::GetAtt
    <id>.Arn`` written as ``<id>.Arn`` and each ``Ref`` as ``<name>``."""
    definition = synth.props(state_machine or synth.stack.lifecycle)["DefinitionString"]
    _, parts = definition["Fn::Join"]
    text = "".join(
        part if isinstance(part, str) else f"<{part['Ref']}>" if "Ref" in part else "{}.{}".format(*part["Fn::GetAtt"])
        for part in parts
    )
    return json.loads(text)


def function_arn(synth, service_function):
    """How :func:`deployed_definition` writes ``service_function``'s ARN."""
    return f"{synth.logical_id(service_function.function)}.Arn"


def references(entry, logical_id):
    """Whether a template entry refers to ``logical_id`` (Ref, Fn::GetAtt or DependsOn)."""
    if isinstance(entry, list):
        return any(references(item, logical_id) for item in entry)
    if not isinstance(entry, dict):
        return False
    depends_on = entry.get("DependsOn", [])
    return (
        entry.get("Ref") == logical_id
        or (entry.get("Fn::GetAtt") or [None])[0] == logical_id
        or logical_id in (depends_on if isinstance(depends_on, list) else [depends_on])
        or any(references(value, logical_id) for value in entry.values())
    )


# --- The definition ---------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_deployed_definition_is_the_shared_one_with_the_function_arns(assembly, stage):
    synth = getattr(assembly, stage)
    functions = synth.stack.functions
    deployed = deployed_definition(synth)

    expected = lifecycle_definition(
        function_arn(synth, functions.lifecycle), function_arn(synth, functions.callback), partition=PARTITION
    )
    assert {key: value for key, value in deployed.items() if key != "TimeoutSeconds"} == expected


def test_callbacks_are_retried_exactly_on_the_configured_schedule(dev):
    deliver = deployed_definition(dev)["States"]["Deliver"]

    throttled, retry = deliver["Retry"]
    assert throttled["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
    assert Callback.RETRYABLE_ERROR in retry["ErrorEquals"]
    assert (retry["IntervalSeconds"], retry["BackoffRate"], retry["MaxAttempts"]) == (
        CALLBACK_RETRY.base_sec,
        CALLBACK_RETRY.factor,
        CALLBACK_RETRY.retries,
    )
    # The schedule: the first attempt, then 1 s, 4 s and 16 s later.
    assert (retry["IntervalSeconds"], retry["BackoffRate"], retry["MaxAttempts"]) == (1, 4, 3)
    assert deliver["Catch"][0]["Next"] == "GiveUp"


def test_file_deliveries_follow_the_callbacks_and_are_retried_on_their_own_schedule(dev):
    """After the callbacks (or none), a task with deliveries goes to DeliverFiles: retried on
    DeliveryRetryable on FILE_DELIVERY_RETRY's schedule, then GiveUpFiles; a task without, or an
    outcome recorded before deliveries existed, ends."""
    states = deployed_definition(dev)["States"]
    assert states["Deliver"]["Next"] == states["GiveUp"]["Next"] == "HasDeliveries"
    [choice] = states["HasDeliveries"]["Choices"]
    assert choice["Next"] == "DeliverFiles" and states["HasDeliveries"]["Default"] == "Done"
    # Without callbacks, straight from HasCallback: a task that delivers nothing takes no state more.
    assert states["HasCallback"]["Choices"][1] == choice and states["HasCallback"]["Default"] == "Done"
    assert {"Variable": "$.outcome.has_deliveries", "IsPresent": True} in choice["And"]
    assert states["Expire"]["ResultSelector"]["has_deliveries.$"] == "$.Payload.has_deliveries"
    files = states["DeliverFiles"]
    assert files["Parameters"]["Payload"]["action"] == "deliver_files"
    _, retry = files["Retry"]
    assert Destinations.DELIVERY_RETRYABLE_ERROR in retry["ErrorEquals"]
    assert (retry["IntervalSeconds"], retry["BackoffRate"], retry["MaxAttempts"], retry["MaxDelaySeconds"]) == (
        FILE_DELIVERY_RETRY.base_sec,
        FILE_DELIVERY_RETRY.factor,
        FILE_DELIVERY_RETRY.retries,
        FILE_DELIVERY_RETRY.cap_sec,
    )
    assert retry["JitterStrategy"] == "FULL"
    assert files["Catch"][0]["Next"] == "GiveUpFiles" and states["GiveUpFiles"]["Next"] == "Done"


def test_a_delivery_retried_on_request_runs_the_lifecycles_file_states_for_its_destination_and_round(dev):
    """The redelivery state machine is the shared definition, with the callback function's ARN:
    the lifecycle's DeliverFiles and GiveUpFiles (the same retries and the same end), scoped to
    the destination and round of its input."""
    stack = dev.stack
    deployed = deployed_definition(dev, stack.redelivery)
    expected = redelivery_definition(function_arn(dev, stack.functions.callback), partition=PARTITION)
    assert deployed == {**expected, "TimeoutSeconds": deployed["TimeoutSeconds"]}
    lifecycle = deployed_definition(dev)["States"]
    states = deployed["States"]
    assert deployed["StartAt"] == "DeliverFiles" and set(states) == {"DeliverFiles", "GiveUpFiles", "Done"}
    for name in ("DeliverFiles", "GiveUpFiles"):
        assert states[name]["Retry"] == lifecycle[name]["Retry"]
        payload = states[name]["Parameters"]["Payload"]
        assert payload["action"] == lifecycle[name]["Parameters"]["Payload"]["action"]
        assert (payload["destination_id.$"], payload["requested_retries.$"]) == (
            "$.destination_id",
            "$.requested_retries",
        )
    # The longest round (every attempt and pause) ends before the execution times out.
    pauses = sum(FILE_DELIVERY_RETRY.ceiling_sec(n) for n in range(FILE_DELIVERY_RETRY.retries))
    assert deployed["TimeoutSeconds"] >= pauses + FILE_DELIVERY_RETRY.attempts * Sizing.CALLBACK_TIMEOUT_SEC


def test_the_redelivery_state_machine_is_named_from_the_stack_and_may_invoke_only_the_callback_function(dev):
    props = dev.props(dev.stack.redelivery)
    assert props["StateMachineName"] == redelivery_state_machine_name(dev.stack.stack_name)
    assert props["StateMachineType"] == "STANDARD" and props["TracingConfiguration"] == {"Enabled": True}
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in dev.template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    (invoke,) = [statement for statement in statements if "lambda:InvokeFunction" in json.dumps(statement["Action"])]
    assert invoke["Resource"] in (
        dev.arn(dev.stack.functions.callback.function),
        [dev.arn(dev.stack.functions.callback.function)],
    )
    for statement in statements:
        if statement is not invoke:
            assert statement["Resource"] == "*"
            assert {action.split(":")[0] for action in statement["Action"]} <= {"logs", "xray"}
    # The API function knows it (it starts a round's execution on request; the schedule function's
    # settings are the API's, and its role may not start it: test_infra_schedules.py).
    functions = dev.stack.functions
    knowing = (functions.api, functions.schedule)
    for service_function in functions.all:
        variables = dev.props(service_function.function)["Environment"]["Variables"]
        assert (Env.REDELIVERY_STATE_MACHINE_ARN in variables) == (service_function in knowing)


@pytest.mark.parametrize("state", ["AwaitEnd", "Expire", "Deliver", "GiveUp", "DeliverFiles", "GiveUpFiles"])
def test_throttles_of_the_workflows_functions_are_retried_with_full_jitter_through_a_burst(dev, state):
    """Every invoke of the lifecycle and callback functions: a throttle is retried first and on
    its own schedule (exports.core.config.retry.LIFECYCLE_THROTTLE_RETRY), so a burst can neither lose a
    deadline nor spend a callback's attempts before one was really made."""
    throttled, *others = deployed_definition(dev)["States"][state]["Retry"]

    assert throttled == {
        "ErrorEquals": ["Lambda.TooManyRequestsException"],
        "IntervalSeconds": LIFECYCLE_THROTTLE_RETRY.base_sec,
        "BackoffRate": LIFECYCLE_THROTTLE_RETRY.factor,
        "MaxAttempts": LIFECYCLE_THROTTLE_RETRY.retries,
        "MaxDelaySeconds": LIFECYCLE_THROTTLE_RETRY.cap_sec,
        "JitterStrategy": "FULL",
    }
    assert all("Lambda.TooManyRequestsException" not in other["ErrorEquals"] for other in others)
    # A burst the API admits, queued behind the function's reserved executions, is worked off
    # well within the expected retry window (full jitter waits half of each cap on average).
    waits = [
        min(throttled["MaxDelaySeconds"], throttled["IntervalSeconds"] * throttled["BackoffRate"] ** n)
        for n in range(throttled["MaxAttempts"])
    ]
    burst_sec = Capacity.API_THROTTLE_BURST / Sizing.LIFECYCLE_RESERVED_CONCURRENCY * LIFECYCLE_INVOCATION_SEC
    assert sum(waits) / 2 >= 2 * burst_sec


def test_waiting_and_stopping_partitions_are_results_and_only_a_retried_fan_out_fails(dev):
    states = deployed_definition(dev, dev.stack.fan_out)["States"]
    item = states["Partitions"]["ItemProcessor"]["States"]

    assert item["Write"]["ResultSelector"] == {"status.$": "$.Payload.status"}
    # No error of ours is retried by name any more: only faults raise.
    assert [retry["ErrorEquals"] for retry in item["Write"]["Retry"]] == [["States.ALL"]]
    choices = {choice["StringEquals"]: choice["Next"] for choice in item["Written"]["Choices"]}
    assert choices == {PartitionStatus.BUSY: "WaitForSlot", PartitionStatus.FAILED: "PartitionFailed"}
    assert item["WaitForSlot"] == {"Type": "Wait", "Seconds": PARTITION_SOURCE_BUSY_WAIT_SEC, "Next": "Write"}
    assert item["PartitionFailed"]["Type"] == "Fail"
    assert states["Abandoned"] == {
        "Type": "Fail",
        "Error": FAN_OUT_FAILED_ERROR,
        "Cause": states["Abandoned"]["Cause"],
    }
    # A failed split export pages once: a task that ended FAILED is ExportFailed's to report, so
    # the execution fails (FanOutFailed) only when the abandon step scheduled the task's retry.
    assert states["Abandon"]["ResultSelector"] == {"outcome.$": "$.Payload.outcome"}
    assert states["Abandon"]["Next"] == "Retried"
    (retried,) = states["Retried"]["Choices"]
    assert (retried["Variable"], retried["StringEquals"], retried["Next"]) == (
        states["Abandon"]["ResultPath"] + ".outcome",
        Outcome.RETRY_SCHEDULED.value,
        "Abandoned",
    )
    assert states["Retried"]["Default"] == "Done"
    assert states["Assemble"]["Next"] == "Done"
    assert [name for name, state in states.items() if state["Type"] == "Succeed"] == ["Done"]


def test_the_wait_for_the_task_ends_at_its_deadline(dev):
    states = deployed_definition(dev)["States"]

    assert states["AwaitEnd"]["TimeoutSecondsPath"] == "$.timeout_sec"
    waiting = [state for state in states.values() if state.get("Resource") == lambda_invoke(PARTITION, with_token=True)]
    assert waiting == [states["AwaitEnd"]]
    for state in waiting:
        assert "TimeoutSeconds" in state or "TimeoutSecondsPath" in state
    (deadline,) = states["AwaitEnd"]["Catch"]
    assert "States.Timeout" in deadline["ErrorEquals"]
    assert deadline["Next"] == "Expire"


def test_an_execution_never_times_out_before_its_task_and_its_callback_are_done(dev):
    timeout = deployed_definition(dev)["TimeoutSeconds"]
    pauses = sum(CALLBACK_RETRY.base_sec * CALLBACK_RETRY.factor**n for n in range(CALLBACK_RETRY.retries))
    attempts = 1 + CALLBACK_RETRY.retries

    assert timeout >= Limits.TIMEOUT_SEC_MAX + pauses + attempts * Sizing.CALLBACK_TIMEOUT_SEC
    assert timeout % 60 == 0


def test_the_execution_bound_counts_every_attempt_and_pause():
    definition = {
        "States": {
            "Wait": {"Type": "Task", "Parameters": {"FunctionName": "f"}, "TimeoutSecondsPath": "$.t"},
            "Call": {
                "Type": "Task",
                "Parameters": {"FunctionName": "g"},
                "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 1, "BackoffRate": 4, "MaxAttempts": 3}],
            },
            "Done": {"Type": "Succeed"},
        }
    }

    bound = longest_execution_sec(definition, {"f": 10, "g": 30})

    assert bound == -(-(Limits.TIMEOUT_SEC_MAX + 4 * 30 + (1 + 4 + 16)) // 60) * 60


def test_a_definition_cannot_carry_its_own_execution_timeout():
    stack = Stack(App(), "Bare")
    settings = StageSettings.preset("dev")
    workflows = Workflows(stack, "Workflows", settings=settings, monitoring=Monitoring(stack, "M", settings=settings))

    with pytest.raises(ValueError, match="timeout"):
        workflows.add_state_machine(
            "Twice",
            definition={"TimeoutSeconds": 5},
            timeout=Duration.minutes(1),
            description="twice",
            state_machine_name="twice",
        )


# --- The resource -----------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_state_machine_is_standard_named_from_config_logged_without_data_and_traced(assembly, stage):
    synth = getattr(assembly, stage)
    props = synth.props(synth.stack.lifecycle)

    assert props["StateMachineName"] == f"{synth.stack.stack_name}-lifecycle"
    assert props["StateMachineName"] == lifecycle_state_machine_name(synth.stack.stack_name)
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert (logging["Level"], logging["IncludeExecutionData"]) == ("ALL", False)
    (destination,) = logging["Destinations"]
    log_group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    log_group = synth.template.to_json()["Resources"][log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == synth.settings.log_retention_days
    assert log_group["DeletionPolicy"] == ("RetainExceptOnCreate" if synth.settings.protect_data else "Delete")


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_a_rolled_back_first_deploy_leaves_no_named_log_group_behind(assembly, stage):
    """Every log group with a fixed name (the state machines') is deleted when its creation
    rolls back, in every stage, so that the next deploy can create it again; once created, a
    protected stage keeps it."""
    synth = getattr(assembly, stage)
    named = {
        logical_id: group
        for logical_id, group in synth.template.find_resources("AWS::Logs::LogGroup").items()
        if "LogGroupName" in group["Properties"]
    }

    assert len(named) == len(synth.stack.workflows.state_machines) == 3
    for group in named.values():
        assert group["DeletionPolicy"] == ("RetainExceptOnCreate" if synth.settings.protect_data else "Delete")
        assert group["UpdateReplacePolicy"] == ("Retain" if synth.settings.protect_data else "Delete")


def test_the_state_machine_may_invoke_exactly_its_two_functions(dev):
    role_id = dev.props(dev.stack.lifecycle)["RoleArn"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in dev.template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    functions = dev.stack.functions

    (invoke,) = [statement for statement in statements if "lambda:InvokeFunction" in json.dumps(statement["Action"])]
    assert invoke["Action"] == "lambda:InvokeFunction"
    assert sorted(invoke["Resource"], key=json.dumps) == sorted(
        [dev.arn(functions.lifecycle.function), dev.arn(functions.callback.function)], key=json.dumps
    )
    # Everything else is log delivery and X-Ray, which take no resource scoping.
    for statement in statements:
        if statement is not invoke:
            assert statement["Resource"] == "*"
            assert {action.split(":")[0] for action in statement["Action"]} <= {"logs", "xray"}


# --- No circular dependency -------------------------------------------------------------------


def test_the_functions_know_the_state_machine_by_its_formatted_arn_not_by_reference(dev):
    # The synth succeeding (every fixture here) is the first proof: CDK and CloudFormation refuse
    # a cycle. This pins down why there is none.
    stack, resources = dev.stack, dev.template.to_json()["Resources"]
    machine_id = dev.logical_id(stack.lifecycle)
    name = dev.props(stack.lifecycle)["StateMachineName"]
    formatted = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":states:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":stateMachine:{name}",
            ],
        ]
    }

    # The callback function never calls the workflow: it does not know it.
    functions = stack.functions
    for service_function in (functions.api, functions.worker, functions.lifecycle):
        variables = dev.props(service_function.function)["Environment"]["Variables"]
        assert variables[Env.LIFECYCLE_STATE_MACHINE_ARN] == formatted
    assert Env.LIFECYCLE_STATE_MACHINE_ARN not in dev.props(functions.callback.function)["Environment"]["Variables"]
    # Nothing but what watches the state machine refers to it: no function, role or policy.
    referring = {
        resource["Type"]
        for logical_id, resource in resources.items()
        if logical_id != machine_id and references(resource, machine_id)
    }
    assert referring == {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"}
    # The one direction that remains: the state machine refers to the functions.
    definition = json.dumps(dev.props(stack.lifecycle)["DefinitionString"])
    for service_function in (stack.functions.lifecycle, stack.functions.callback):
        assert dev.logical_id(service_function.function) in definition


# --- Monitoring and outputs -------------------------------------------------------------------


def test_failed_and_timed_out_executions_alarm(dev):
    alarms = {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]
        for alarm in dev.template.find_resources("AWS::CloudWatch::Alarm").values()
    }

    for name, metric in (("LifecycleFailed", "ExecutionsFailed"), ("LifecycleTimedOut", "ExecutionsTimedOut")):
        alarm = alarms[f"{dev.stack.stack_name}-{name}"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Threshold"]) == ("AWS/States", metric, 1)
        assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": dev.ref(dev.stack.lifecycle)}]
        assert alarm["AlarmActions"] == [dev.ref(dev.stack.monitoring.paging_topic)]


def test_the_state_machine_arn_is_an_output(dev):
    dev.template.has_output("LifecycleStateMachineArn", {"Value": dev.ref(dev.stack.lifecycle)})


# --- The fan-out state machine ------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_fan_out_definition_is_the_shared_one_a_distributed_map_of_worker_runs(assembly, stage):
    synth = getattr(assembly, stage)
    deployed = deployed_definition(synth, synth.stack.fan_out)

    expected = fan_out_definition(
        function_arn(synth, synth.stack.functions.worker), synth.stack.settings.max_partitions, partition=PARTITION
    )
    assert {key: value for key, value in deployed.items() if key != "TimeoutSeconds"} == expected
    partitions = deployed["States"]["Partitions"]
    assert partitions["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert partitions["MaxConcurrency"] == FanOut.MAX_PARTITIONS_DEFAULT
    assert deployed["TimeoutSeconds"] >= Limits.TIMEOUT_SEC_MAX


def test_the_worker_knows_the_fan_out_by_its_arn_and_its_limit_of_partitions(dev):
    environment = dev.props(dev.stack.functions.worker.function)["Environment"]["Variables"]

    assert dev.rendered(environment[Env.FAN_OUT_STATE_MACHINE_ARN]).endswith(
        f":stateMachine:{dev.stack.workflows.fan_out_name}"
    )
    assert environment[Env.MAX_PARTITIONS] == str(FanOut.MAX_PARTITIONS_DEFAULT)
    assert environment[Env.PARTITION_ROWS] == str(FanOut.PARTITION_ROWS)


def test_the_limit_of_partitions_comes_from_the_context():
    settings = StageSettings.from_context({"max_partitions": "50"}.get)

    assert settings.max_partitions == 50
    with pytest.raises(ValueError, match="at most 100"):
        StageSettings.from_context({"max_partitions": "101"}.get)


def test_the_rows_per_partition_come_from_the_context():
    assert StageSettings.from_context({"partition_rows": "1250000"}.get).partition_rows == 1_250_000
    with pytest.raises(ValueError, match="partition_rows"):
        StageSettings.from_context({"partition_rows": "0"}.get)


def test_the_worker_has_memory_for_the_assembly_of_its_largest_split_export(dev):
    held_mib = (MIN_PART_BYTES + Worker.UPLOAD_PART_BYTES) / 2**20  # a segment's head and tail
    deployed = dev.props(dev.stack.functions.worker.function)["MemorySize"]

    assert deployed == Sizing.worker_memory_mb(dev.settings.max_partitions) >= Sizing.WORKER_MEMORY_MB
    for partitions in (1, FanOut.MAX_PARTITIONS_DEFAULT, 50, FanOut.MAX_PARTITIONS_LIMIT):
        memory = Sizing.worker_memory_mb(partitions)
        assert memory >= Sizing.WORKER_BASE_MB + partitions * held_mib and memory % 64 == 0
    assert Sizing.worker_memory_mb(FanOut.MAX_PARTITIONS_LIMIT) > 1024 + 256  # 100 would not fit in 1024
