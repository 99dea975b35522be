"""The worker function's events: an SQS batch or a fan-out step, told apart by their model."""

import pytest
from pydantic import BaseModel, ValidationError

from exports.core.workflows import ABANDON_ACTION, ASSEMBLE_ACTION, PARTITION_ACTION, fan_out_definition
from functions.worker.handler import AbandonStep, AssembleStep, PartitionStep, SqsBatch, WorkerEvent


def parse(event):
    return WorkerEvent.model_validate({"event": event}).event


def test_each_step_model_answers_to_the_action_the_workflow_sends():
    definition = str(fan_out_definition("arn:aws:lambda:eu-west-1:1:function:worker", 4))
    models: list[tuple[type[BaseModel], str]] = [
        (PartitionStep, PARTITION_ACTION),
        (AssembleStep, ASSEMBLE_ACTION),
        (AbandonStep, ABANDON_ACTION),
    ]
    for model, action in models:
        assert model.model_fields["action"].annotation.__args__ == (action,)
        assert f"'action': '{action}'" in definition


def test_a_partition_step_reads_its_numbers():
    step = parse({"action": PARTITION_ACTION, "task_id": "exp_1", "attempt": 2, "partition": 3})
    assert step == PartitionStep(action=PARTITION_ACTION, task_id="exp_1", attempt=2, partition=3)


def test_an_abandon_step_carries_the_caught_error_or_none():
    caught = {"Error": "States.TaskFailed", "Cause": "{...}"}
    step = parse({"action": ABANDON_ACTION, "task_id": "exp_1", "attempt": 0, "error": caught})
    assert isinstance(step, AbandonStep) and step.error is not None and step.error.Error == "States.TaskFailed"
    assert parse({"action": ABANDON_ACTION, "task_id": "exp_1", "attempt": 0}).error is None


def test_an_sqs_batch_is_a_batch_not_a_step():
    record: dict[str, object] = {"messageId": "1", "body": "{}", "eventSource": "aws:sqs"}
    assert parse({"Records": [record]}) == SqsBatch(Records=[record])


@pytest.mark.parametrize(
    "event",
    [
        {"action": "fan_out_unknown", "task_id": "exp_1", "attempt": 0},
        {"action": PARTITION_ACTION, "task_id": "exp_1", "attempt": 0},  # no partition
        {"task_id": "exp_1"},
    ],
)
def test_anything_else_is_refused_naming_what_is_wrong(event):
    with pytest.raises(ValidationError):
        parse(event)
