"""Every retry in the synthesized template is one of the named policies of exports/core/config/retry.py:
the Step Functions retriers and waits state by state, the SQS redrive, the stream mapping's and
Lambda's asynchronous retries. A retry typed as a literal somewhere, or a new one without a
policy, fails here (docs/how-to/retry-more-gently.md)."""

from __future__ import annotations

import math

import pytest

from exports.core.config.retry import (
    AUDIT_BATCH_RETRY,
    CALLBACK_RETRY,
    FILE_DELIVERY_RETRY,
    LAMBDA_SERVICE_RETRY,
    LIFECYCLE_THROTTLE_RETRY,
    MESSAGE_RETRY,
    PARTITION_SOURCE_BUSY_WAIT_SEC,
    PARTITION_WRITE_RETRY,
    PUSH_BATCH_RETRY,
    SCHEDULE_FUNCTION_RETRY,
    Backoff,
    Jitter,
)
from tests.infra.test_infra_workflows import deployed_definition

# Each Task state's retriers, in order, by the policy each must follow.
LIFECYCLE_RETRIERS = {
    "AwaitEnd": [LIFECYCLE_THROTTLE_RETRY, LAMBDA_SERVICE_RETRY],
    "Expire": [LIFECYCLE_THROTTLE_RETRY, LAMBDA_SERVICE_RETRY],
    "Deliver": [LIFECYCLE_THROTTLE_RETRY, CALLBACK_RETRY],
    "GiveUp": [LIFECYCLE_THROTTLE_RETRY, LAMBDA_SERVICE_RETRY],
    "DeliverFiles": [LIFECYCLE_THROTTLE_RETRY, FILE_DELIVERY_RETRY],
    "GiveUpFiles": [LIFECYCLE_THROTTLE_RETRY, LAMBDA_SERVICE_RETRY],
}
FAN_OUT_RETRIERS = {
    "Write": [PARTITION_WRITE_RETRY],
    "Assemble": [LAMBDA_SERVICE_RETRY],
    "Abandon": [LAMBDA_SERVICE_RETRY],
}


def schedule(policy: Backoff) -> dict[str, object]:
    """What a Step Functions retrier following ``policy`` says, its errors aside."""
    expected: dict[str, object] = {
        "IntervalSeconds": policy.base_sec,
        "BackoffRate": policy.factor,
        "MaxAttempts": policy.retries,
    }
    if math.isfinite(policy.cap_sec):
        expected["MaxDelaySeconds"] = policy.cap_sec
    if policy.jitter is Jitter.FULL:
        expected["JitterStrategy"] = "FULL"
    return expected


def states_of(definition):
    """Every state of a definition by name, the Map's inner states included."""
    for name, state in definition["States"].items():
        yield name, state
        if "ItemProcessor" in state:
            yield from states_of(state["ItemProcessor"])


@pytest.mark.parametrize(("machine", "expected"), [("lifecycle", LIFECYCLE_RETRIERS), ("fan_out", FAN_OUT_RETRIERS)])
def test_every_retrier_of_the_workflows_follows_its_named_policy(dev, machine, expected):
    definition = deployed_definition(dev, getattr(dev.stack, machine))
    retriers = {
        name: [{key: value for key, value in rule.items() if key != "ErrorEquals"} for rule in state["Retry"]]
        for name, state in states_of(definition)
        if "Retry" in state
    }

    assert retriers == {name: [schedule(policy) for policy in policies] for name, policies in expected.items()}


def test_the_fan_outs_only_wait_is_the_partitions_source_busy_wait(dev):
    waits = {
        name: state["Seconds"]
        for name, state in states_of(deployed_definition(dev, dev.stack.fan_out))
        if state["Type"] == "Wait"
    }

    assert waits == {"WaitForSlot": PARTITION_SOURCE_BUSY_WAIT_SEC}


def test_every_redrive_and_lambda_retry_in_the_template_is_a_named_policy(assembly):
    for synth in (assembly.dev, assembly.prod):
        resources = synth.template.to_json()["Resources"].values()
        redrives = {
            resource["Properties"]["RedrivePolicy"]["maxReceiveCount"]
            for resource in resources
            if resource["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in resource["Properties"]
        }
        stream_retries = {
            (resource["Properties"]["MaximumRetryAttempts"], resource["Properties"]["MaximumRecordAgeInSeconds"])
            for resource in resources
            if resource["Type"] == "AWS::Lambda::EventSourceMapping"
            and "MaximumRetryAttempts" in resource["Properties"]
        }
        async_retries = {
            (resource["Properties"]["MaximumRetryAttempts"], resource["Properties"]["MaximumEventAgeInSeconds"])
            for resource in resources
            if resource["Type"] == "AWS::Lambda::EventInvokeConfig"
        }

        assert redrives == {MESSAGE_RETRY.attempts}
        assert stream_retries == {
            (PUSH_BATCH_RETRY.retries, PUSH_BATCH_RETRY.max_age_sec),
            (AUDIT_BATCH_RETRY.retries, AUDIT_BATCH_RETRY.max_age_sec),
        }
        assert async_retries == {(SCHEDULE_FUNCTION_RETRY.retries, SCHEDULE_FUNCTION_RETRY.max_age_sec)}
