"""The task lifecycle state machine, defined once, and the split export's state machine.

The CDK app, local mode and the tests all use these definitions, so what runs here is what runs
on AWS.

The lifecycle (:func:`lifecycle_definition`) owns the task's time. Submit starts one execution
for each task, which goes through these states:

1. ``AwaitEnd`` hands its task token to the lifecycle function, which stores the token on the
   task. It then waits until whoever ends the task returns the outcome with that token, or until
   the task's deadline (``TimeoutSecondsPath``). It waits for the task's end, not for a worker,
   so it has no heartbeat. A worker shows it is alive through its lease on the task.
2. At the deadline, ``Expire`` asks the lifecycle function to move the task to TIMEOUT. That
   write is conditional: if the task ended meanwhile, its real outcome wins. This state also
   makes a callback survive a worker that died right after ending the task: the outcome is then
   picked up at the deadline.
3. When the task has callback subscribers, as the outcome says, ``Deliver`` sends each one's
   callback. It retries on ``CallbackRetryable`` 1 s, 4 s and 16 s later. Subscribers already
   delivered, or refused for good, are not sent again. When the retries are spent, ``GiveUp``
   records the failure. A throttled invoke of the callback function is retried separately
   (``LIFECYCLE_THROTTLE_RETRY``), so that a burst cannot spend those attempts before one
   callback was sent.
4. When the task named destinations (the outcome's ``has_deliveries``), ``DeliverFiles`` puts
   the file at each destination. The callback function does this too, because it already makes
   the task's outward calls, through the same SSRF guard and egress. It retries on
   ``DeliveryRetryable`` on ``FILE_DELIVERY_RETRY``'s schedule, and destinations already done
   are not tried again. When the retries are spent, ``GiveUpFiles`` records the deliveries still
   pending as FAILED. The deliveries come after the callbacks, so a slow customer server never
   delays the completion webhook. A task without deliveries takes no more states than before; a
   task with callbacks takes one Choice more.

A task takes four to six state transitions, and one to three more with deliveries. That keeps
the costs of a Standard workflow low.
"""

from __future__ import annotations

import math
from typing import Any, Final

from exports.core.config.callbacks import Callback
from exports.core.config.destinations import Destinations
from exports.core.config.retry import (
    CALLBACK_RETRY,
    FILE_DELIVERY_RETRY,
    LAMBDA_SERVICE_RETRY,
    LIFECYCLE_THROTTLE_RETRY,
    PARTITION_SOURCE_BUSY_WAIT_SEC,
    PARTITION_WRITE_RETRY,
    Backoff,
    Jitter,
)

# Service integration ARNs carry the AWS partition (``aws``, ``aws-cn``, ``aws-us-gov``). The CDK
# app passes its stack's partition; local mode and the tests use the default.
DEFAULT_PARTITION = "aws"


def lambda_invoke(partition: str = DEFAULT_PARTITION, *, with_token: bool = False) -> str:
    """The ARN of the ``lambda:invoke`` integration in ``partition``. With ``with_token`` it is the
    ``.waitForTaskToken`` variant, which waits until the task token is returned."""
    return f"arn:{partition}:states:::lambda:invoke" + (".waitForTaskToken" if with_token else "")


# The callback function's actions that deliver a task's file to its destinations, and that give
# up when the retries are spent.
DELIVER_FILES_ACTION: Final = "deliver_files"
GIVE_UP_FILES_ACTION: Final = "give_up_files"

# Lambda's own transient errors. They are retried briefly wherever a function is invoked.
LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
TIMEOUT_ERRORS = ["States.Timeout", "States.HeartbeatTimeout"]


def retrier(errors: list[str], policy: Backoff) -> dict[str, Any]:
    """A Step Functions retrier of ``errors`` on ``policy``'s schedule. Step Functions jitters
    fully or not at all, so a policy with equal jitter is refused."""
    if policy.jitter is Jitter.EQUAL:
        raise ValueError("Step Functions has no equal jitter")
    rule: dict[str, Any] = {
        "ErrorEquals": errors,
        "IntervalSeconds": policy.base_sec,
        "BackoffRate": policy.factor,
        "MaxAttempts": policy.retries,
    }
    if math.isfinite(policy.cap_sec):
        rule["MaxDelaySeconds"] = policy.cap_sec
    if policy.jitter is Jitter.FULL:
        rule["JitterStrategy"] = "FULL"
    return rule


_SERVICE_RETRY = retrier(LAMBDA_SERVICE_ERRORS, LAMBDA_SERVICE_RETRY)
LAMBDA_THROTTLED = "Lambda.TooManyRequestsException"
_NOT_THROTTLED = [error for error in LAMBDA_SERVICE_ERRORS if error != LAMBDA_THROTTLED]
# Throttles of the lifecycle workflow's functions are retried with backoff and full jitter through
# a burst (LIFECYCLE_THROTTLE_RETRY). This retrier comes first in every Retry list. Step Functions
# retries an error by the first retrier that names it, and counts attempts per retrier, so a
# throttle never uses up a callback attempt. Lambda's other transient errors are retried as
# everywhere.
_THROTTLE_RETRY = retrier([LAMBDA_THROTTLED], LIFECYCLE_THROTTLE_RETRY)
_LIFECYCLE_RETRY = [_THROTTLE_RETRY, retrier(_NOT_THROTTLED, LAMBDA_SERVICE_RETRY)]


# The Choice rule of a task with files to deliver. An outcome recorded before deliveries existed
# has no has_deliveries, and so nothing to deliver.
_HAS_DELIVERIES: Final = {
    "And": [
        {"Variable": "$.outcome.has_deliveries", "IsPresent": True},
        {"Variable": "$.outcome.has_deliveries", "BooleanEquals": True},
    ],
    "Next": "DeliverFiles",
}


def execution_input(task_id: str, timeout_sec: int) -> dict[str, Any]:
    """The input an execution starts with. Whether to deliver callbacks is decided at the end
    (``$.outcome.has_callback``), because identical requests merged into the task add
    subscribers."""
    return {"task_id": task_id, "timeout_sec": timeout_sec}


def task_outcome(status: str, has_callback: bool, has_deliveries: bool = False) -> dict[str, Any]:
    """What the lifecycle learns when the task ends, from whoever ended it or from Expire: whether
    the task has callbacks to send, and files to deliver to destinations."""
    return {"status": status, "has_callback": has_callback, "has_deliveries": has_deliveries}


def lifecycle_definition(
    lifecycle_function: str, callback_function: str, partition: str = DEFAULT_PARTITION
) -> dict[str, Any]:
    """The lifecycle's definition in Amazon States Language, for the given function ARNs or
    names."""
    return {
        "Comment": "Owns one export task's time: its deadline and its callback.",
        "StartAt": "AwaitEnd",
        "States": {
            "AwaitEnd": {
                "Type": "Task",
                "Resource": lambda_invoke(partition, with_token=True),
                "Parameters": {
                    "FunctionName": lifecycle_function,
                    "Payload": {"action": "watch", "task_id.$": "$.task_id", "token.$": "$$.Task.Token"},
                },
                "TimeoutSecondsPath": "$.timeout_sec",
                "ResultPath": "$.outcome",
                "Retry": _LIFECYCLE_RETRY,
                "Catch": [{"ErrorEquals": TIMEOUT_ERRORS, "ResultPath": "$.deadline", "Next": "Expire"}],
                "Next": "HasCallback",
            },
            "Expire": {
                "Type": "Task",
                "Resource": lambda_invoke(partition),
                "Parameters": {
                    "FunctionName": lifecycle_function,
                    "Payload": {"action": "expire", "task_id.$": "$.task_id"},
                },
                "ResultSelector": {
                    "status.$": "$.Payload.status",
                    "has_callback.$": "$.Payload.has_callback",
                    "has_deliveries.$": "$.Payload.has_deliveries",
                },
                "ResultPath": "$.outcome",
                "Retry": _LIFECYCLE_RETRY,
                "Next": "HasCallback",
            },
            "HasCallback": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.outcome.has_callback", "BooleanEquals": True, "Next": "Deliver"},
                    _HAS_DELIVERIES,
                ],
                "Default": "Done",
            },
            "Deliver": {
                "Type": "Task",
                "Resource": lambda_invoke(partition),
                "Parameters": {
                    "FunctionName": callback_function,
                    "Payload": {"action": "deliver", "task_id.$": "$.task_id"},
                },
                "ResultPath": None,
                "Retry": [
                    _THROTTLE_RETRY,
                    retrier([Callback.RETRYABLE_ERROR, *_NOT_THROTTLED], CALLBACK_RETRY),
                ],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.callback_error", "Next": "GiveUp"}],
                "Next": "HasDeliveries",
            },
            "GiveUp": {
                "Type": "Task",
                "Resource": lambda_invoke(partition),
                "Parameters": {
                    "FunctionName": callback_function,
                    "Payload": {"action": "give_up", "task_id.$": "$.task_id", "error.$": "$.callback_error"},
                },
                "ResultPath": None,
                "Retry": _LIFECYCLE_RETRY,
                "Next": "HasDeliveries",
            },
            # This comes after the callbacks. A task without callbacks goes from HasCallback
            # straight to DeliverFiles.
            "HasDeliveries": {"Type": "Choice", "Choices": [_HAS_DELIVERIES], "Default": "Done"},
            **_file_delivery_states(callback_function, partition, {}),
            "Done": {"Type": "Succeed"},
        },
    }


def _file_delivery_states(callback_function: str, partition: str, scope: dict[str, str]) -> dict[str, Any]:
    """``DeliverFiles`` (retried on ``FILE_DELIVERY_RETRY``) and ``GiveUpFiles``, both going on
    to ``Done``: the same states for the lifecycle's deliveries and for a retry on request, whose
    payloads add ``scope`` (which destination, which round: :func:`redelivery_input`)."""
    return {
        "DeliverFiles": {
            "Type": "Task",
            "Resource": lambda_invoke(partition),
            "Parameters": {
                "FunctionName": callback_function,
                "Payload": {"action": DELIVER_FILES_ACTION, "task_id.$": "$.task_id", **scope},
            },
            "ResultPath": None,
            "Retry": [
                _THROTTLE_RETRY,
                retrier([Destinations.DELIVERY_RETRYABLE_ERROR, *_NOT_THROTTLED], FILE_DELIVERY_RETRY),
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.delivery_error", "Next": "GiveUpFiles"}],
            "Next": "Done",
        },
        "GiveUpFiles": {
            "Type": "Task",
            "Resource": lambda_invoke(partition),
            "Parameters": {
                "FunctionName": callback_function,
                "Payload": {
                    "action": GIVE_UP_FILES_ACTION,
                    "task_id.$": "$.task_id",
                    "error.$": "$.delivery_error",
                    **scope,
                },
            },
            "ResultPath": None,
            "Retry": _LIFECYCLE_RETRY,
            "Next": "Done",
        },
    }


# A retry on request's payload fields: the destination and the round (docs/destinations.md).
_REDELIVERY_SCOPE: Final = {
    "destination_id.$": "$.destination_id",
    "requested_retries.$": "$.requested_retries",
}


def redelivery_input(task_id: str, destination_id: str, requested_retries: int) -> dict[str, Any]:
    """The input of the execution that tries one FAILED delivery again, on request."""
    return {"task_id": task_id, "destination_id": destination_id, "requested_retries": requested_retries}


def redelivery_name(task_id: str, destination_id: str, requested_retries: int) -> str:
    """The execution's name: one per delivery and round, so a second start of a round is refused
    (at most 80 characters: a task id and a destination id are 30 each)."""
    return f"{task_id}-{destination_id}-{requested_retries}"


def redelivery_definition(callback_function: str, partition: str = DEFAULT_PARTITION) -> dict[str, Any]:
    """A FAILED delivery tried again on request: the lifecycle's ``DeliverFiles`` and
    ``GiveUpFiles`` states for one destination and round, with the same retries and the same
    end (webhooks, push and lifecycle events, the audit record, metrics). Two to three state
    transitions per request; no state of the task's own lifecycle is involved."""
    return {
        "Comment": "Tries one failed file delivery again, on its owner's request.",
        "StartAt": "DeliverFiles",
        "States": {
            **_file_delivery_states(callback_function, partition, _REDELIVERY_SCOPE),
            "Done": {"Type": "Succeed"},
        },
    }


# The actions that a split export's workflow invokes the worker function with directly (see
# functions/worker/handler.py).
PARTITION_ACTION: Final = "fan_out_partition"
ASSEMBLE_ACTION: Final = "fan_out_assemble"
ABANDON_ACTION: Final = "fan_out_abandon"


class PartitionStatus:
    """What one partition step returns as its ``status``.

    Waiting and stopping are results the workflow reads, not errors. So the worker function's
    Errors metric counts only faults.
    """

    # Its rows are written and staged.
    WRITTEN = "written"
    # Every slot of its source is taken. The workflow waits and tries the partition again.
    BUSY = "busy"
    # Its task no longer runs this attempt: it was cancelled, timed out or taken over. There is
    # nothing to do.
    STOPPED = "stopped"
    # A final error, such as a failing query. The task has ended FAILED with its code.
    FAILED = "failed"


# The abandon step's outcome when it scheduled the task's retry
# (exports.running.endings.Outcome.RETRY_SCHEDULED). No other alarm reports this abandonment.
ABANDONED_FOR_RETRY = "retry_scheduled"
# The Fail states of the fan-out workflow. Their names are the errors its executions end with.
PARTITION_FAILED_ERROR = "PartitionFailed"
FAN_OUT_FAILED_ERROR = "FanOutFailed"


def fan_out_input(task_id: str, attempt: int, partitions: int) -> dict[str, Any]:
    """The input of one split export's execution. The partitions are the Map's items."""
    return {"task_id": task_id, "attempt": attempt, "partitions": list(range(partitions))}


def fan_out_definition(
    worker_function: str, max_concurrency: int, partition: str = DEFAULT_PARTITION
) -> dict[str, Any]:
    """The workflow of one split export.

    A Distributed Map runs the worker on each partition, at most ``max_concurrency`` at once.
    Then the worker assembles the file and ends the task.

    A partition whose source is busy waits (a Choice and a Wait) and is tried again. A partition
    whose task stopped ends quietly: a cancel or the deadline stops the partitions between parts.
    The assembler then cleans up instead of assembling. A partition's final error has already
    ended the task FAILED with its code. The partition then fails, which fails the Map. A fault
    lands in ``Abandon``: a partition's transient error after its retries, or a failing
    assembly. ``Abandon`` aborts the upload, deletes the staged parts, and retries or fails a task
    that is still running.

    A failed split export pages once. The execution fails (``FanOutFailed``, which has its own
    alarm) only when ``Abandon`` scheduled a retry of the task. A task that ended FAILED, by a
    partition's final error or by a fault whose retries are spent, is counted by ExportFailed,
    whose alarm pages. A cancel or the deadline is no fault, so the execution then succeeds.
    """

    def invoke(action: str, **payload: str) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Resource": lambda_invoke(partition),
            "Parameters": {
                "FunctionName": worker_function,
                "Payload": {"action": action, "task_id.$": "$.task_id", "attempt.$": "$.attempt", **payload},
            },
            "ResultPath": None,
        }

    catch = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Abandon"}]
    write = {
        **invoke(PARTITION_ACTION, **{"partition.$": "$.partition"}),
        "ResultSelector": {"status.$": "$.Payload.status"},
        "ResultPath": "$.step",
        # On a transient fault of one partition, its own or Lambda's, that partition is tried again.
        "Retry": [retrier(["States.ALL"], PARTITION_WRITE_RETRY)],
        "Next": "Written",
    }
    step = "$.step.status"
    return {
        "Comment": "Writes one export's partitions at once and assembles them into one file.",
        "StartAt": "Partitions",
        "States": {
            "Partitions": {
                "Type": "Map",
                "ItemsPath": "$.partitions",
                "MaxConcurrency": max_concurrency,
                "ItemSelector": {
                    "task_id.$": "$.task_id",
                    "attempt.$": "$.attempt",
                    "partition.$": "$$.Map.Item.Value",
                },
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "Write",
                    "States": {
                        "Write": write,
                        "Written": {
                            "Type": "Choice",
                            "Choices": [
                                {"Variable": step, "StringEquals": PartitionStatus.BUSY, "Next": "WaitForSlot"},
                                {"Variable": step, "StringEquals": PartitionStatus.FAILED, "Next": "PartitionFailed"},
                            ],
                            "Default": "PartitionDone",
                        },
                        "WaitForSlot": {
                            "Type": "Wait",
                            "Seconds": PARTITION_SOURCE_BUSY_WAIT_SEC,
                            "Next": "Write",
                        },
                        "PartitionFailed": {
                            "Type": "Fail",
                            "Error": PARTITION_FAILED_ERROR,
                            "Cause": "A partition failed for good; its task records the error.",
                        },
                        "PartitionDone": {"Type": "Succeed"},
                    },
                },
                "ResultPath": None,
                "Catch": catch,
                "Next": "Assemble",
            },
            "Assemble": {
                **invoke(ASSEMBLE_ACTION),
                "ResultSelector": {"outcome.$": "$.Payload.outcome"},
                "ResultPath": "$.assembled",
                "Retry": [_SERVICE_RETRY],
                "Catch": catch,
                # A partition's final error may also let the Map end, if the Map tolerates it. The
                # assembler then finds the attempt FAILED, which ExportFailed has counted.
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
            "Abandon": {
                **invoke(ABANDON_ACTION, **{"error.$": "$.error"}),
                "ResultSelector": {"outcome.$": "$.Payload.outcome"},
                "ResultPath": "$.abandoned",
                "Retry": [_SERVICE_RETRY],
                "Next": "Retried",
            },
            "Retried": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.abandoned.outcome", "StringEquals": ABANDONED_FOR_RETRY, "Next": "Abandoned"}
                ],
                "Default": "Done",
            },
            "Abandoned": {
                "Type": "Fail",
                "Error": FAN_OUT_FAILED_ERROR,
                "Cause": "The split export was abandoned after a fault; its task is retried whole.",
            },
        },
    }
