"""What the exports service costs per month, from the stack's own settings and public prices.

    .venv/bin/python scripts/cost_estimate.py                 # print the estimate (Markdown)
    .venv/bin/python scripts/cost_estimate.py --write docs/cost.md

The stack facts (function memory, the worker's temporary disk, priority lanes, log retention,
result expiry, alarms, dashboards, and the lifecycle state machine's definition) are read from
the synthesized template of the stage (bundling skipped, so it takes a few seconds and no
network); timings and counts of the service come from ``exports.core.config``. State transitions are
counted by walking the deployed definition. What a "small export" does (rows, file size, run
time, polls, callback) and the prices are assumptions, stated in the output.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from exports.core.config.audit import Audit
from exports.core.config.callbacks import Callback
from exports.core.config.env import Env
from exports.core.config.limits import Admission
from exports.core.config.metrics import Metric
from exports.core.config.queues import Queue
from exports.core.config.retry import CALLBACK_RETRY
from exports.core.config.worker import Worker
from exports.core.export_type import SOURCE_PAGE_ROWS
from exports.core.workflows import execution_input, task_outcome

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
VOLUMES: Final = (1_000, 1_000_000)
GB: Final = 1024**3
# Lambda's ephemeral storage that every function has at no charge (MB, as Lambda counts it: MiB).
LAMBDA_INCLUDED_EPHEMERAL_MB: Final = 512
SECONDS_PER_MONTH: Final = 30 * 24 * 3600


class Price:
    """Public us-east-1 list prices in USD, as assumed here (no free tier, no savings plans).

    Check them against the AWS pricing pages before relying on the totals.
    """

    LAMBDA_ARM_GB_SECOND: Final = 0.0000133334
    LAMBDA_REQUEST: Final = 0.20 / 1e6
    # Ephemeral storage (/tmp) configured above the included 512 MB, per GB-second of run time.
    LAMBDA_EPHEMERAL_GB_SECOND: Final = 0.0000000309
    HTTP_API_REQUEST: Final = 1.00 / 1e6
    # EventBridge custom events put on a bus (64 KB units).
    EVENTBRIDGE_EVENT: Final = 1.00 / 1e6
    # WebSocket APIs: messages (in 32 KB units, both directions) and connection minutes.
    WEBSOCKET_MESSAGE: Final = 1.00 / 1e6
    WEBSOCKET_CONNECTION_MINUTE: Final = 0.25 / 1e6
    SQS_REQUEST: Final = 0.40 / 1e6
    DYNAMODB_WRITE_UNIT: Final = 0.625 / 1e6  # on-demand write request unit
    DYNAMODB_READ_UNIT: Final = 0.125 / 1e6  # on-demand read request unit
    S3_PUT_REQUEST: Final = 0.005 / 1000  # PUT, POST (multipart create/part/complete)
    S3_GET_REQUEST: Final = 0.0004 / 1000
    S3_GB_MONTH: Final = 0.023
    DYNAMODB_GB_MONTH: Final = 0.25
    DYNAMODB_PITR_GB_MONTH: Final = 0.20
    STEP_FUNCTIONS_TRANSITION: Final = 0.025 / 1000  # Standard workflows
    SECRET_MONTH: Final = 0.40
    SECRETS_API_CALL: Final = 0.05 / 10_000
    LOGS_INGESTED_GB: Final = 0.50
    LOGS_STORED_GB_MONTH: Final = 0.03
    XRAY_TRACE: Final = 5.00 / 1e6
    CUSTOM_METRIC_MONTH: Final = 0.30
    # Standard resolution, per metric an alarm evaluates: a metric math alarm pays for each metric
    # of its expression, a Metrics Insights alarm for each series its query analyzes.
    ALARM_METRIC_MONTH: Final = 0.10
    DASHBOARD_MONTH: Final = 3.00
    DATA_TRANSFER_OUT_GB: Final = 0.09
    # The worker in a VPC (-c worker_vpc): per availability zone and hour, and per GB processed.
    NAT_GATEWAY_HOUR: Final = 0.045
    NAT_GATEWAY_GB: Final = 0.045
    INTERFACE_ENDPOINT_HOUR: Final = 0.01
    INTERFACE_ENDPOINT_GB: Final = 0.01
    HOURS_PER_MONTH: Final = 730
    # Scheduled exports: an EventBridge Scheduler invocation (the first 14 million of a month are
    # free, per account), and an SES message (per recipient).
    SCHEDULER_INVOCATION: Final = 1.00 / 1e6
    SCHEDULER_FREE_INVOCATIONS_PER_MONTH: Final = 14_000_000
    SES_MESSAGE: Final = 0.10 / 1000
    # SnapStart for Python (AWS Lambda pricing, "SnapStart"): the snapshot of each published
    # version cached while the version is active (at least 3 hours), per GB of the function's
    # memory and second; and each restore of an execution environment, per GB of its memory.
    SNAPSTART_CACHE_GB_SECOND: Final = 0.0000015046
    SNAPSTART_RESTORE_GB: Final = 0.0001397998


# The interface endpoints a worker in private subnets needs (docs/export-your-own-data.md, "On
# AWS"); the DynamoDB and S3 gateway endpoints cost nothing.
WORKER_INTERFACE_ENDPOINTS: Final = ("sqs", "states", "secretsmanager", "xray")


@dataclass(frozen=True)
class Scenario:
    """One way a task's lifecycle execution can go."""

    description: str
    has_callback: bool
    deadline: bool = False
    # Callback attempts that fail in a retryable way (network, timeout, 408, 429, 5xx).
    failed_callback_attempts: int = 0


_ALL_ATTEMPTS_FAIL: Final = 1 + CALLBACK_RETRY.retries
SCENARIOS: Final = (
    Scenario("ends before its deadline, no callback", has_callback=False),
    Scenario("ends before its deadline, callback delivered at once", has_callback=True),
    Scenario("reaches its deadline, callback delivered at once", has_callback=True, deadline=True),
    Scenario(
        "ends before its deadline, callback receiver down (every attempt fails)",
        has_callback=True,
        failed_callback_attempts=_ALL_ATTEMPTS_FAIL,
    ),
    Scenario(
        "reaches its deadline, callback receiver down",
        has_callback=True,
        deadline=True,
        failed_callback_attempts=_ALL_ATTEMPTS_FAIL,
    ),
)


@dataclass(frozen=True)
class Workload:
    """One small export, from submission to download, as this estimate assumes it."""

    rows: int = 1_000
    order_item_bytes: int = 300
    # A task item as stored: its request (filters, callback subscribers), progress, result and
    # attempt fields, about 3 KB (3 write units each time it is written).
    task_item_bytes: int = 3_072
    file_bytes: int = 100 * 1024
    worker_run_sec: float = 2.0
    api_request_sec: float = 0.15
    status_polls: int = 3
    downloads: int = 1
    log_bytes_per_invocation: int = 2_000
    access_log_bytes_per_request: int = 500
    # Lambda keeps a few long polls open on each lane's queue even when it is empty.
    idle_pollers_per_lane: int = 5
    # The lifecycle execution: how it goes, and what its functions take.
    lifecycle: Scenario = SCENARIOS[1]
    lifecycle_run_sec: float = 0.1
    callback_run_sec: float = 0.3
    # Step Functions logs every history event (no execution data) at level ALL.
    workflow_log_bytes_per_transition: int = 1_000
    # ExportFailed is published per error code and source: the series that appear in a month
    # (each a custom metric, and each analyzed by the ExportFailed alarm's query).
    failed_export_series: int = 10


@dataclass(frozen=True)
class StackFacts:
    """What the estimate reads from the synthesized template."""

    api_memory_mb: int
    worker_memory_mb: int
    lifecycle_memory_mb: int
    callback_memory_mb: int
    worker_batch_size: int
    # The worker's /tmp (XLSX sheets wait there until the workbook is saved).
    worker_ephemeral_storage_mb: int
    # Priority lanes: one queue (and DLQ) and one worker event source each.
    lanes: int
    log_retention_days: int
    results_expiry_days: int
    alarms: int
    # The metrics the alarms evaluate: one per plain alarm, each metric of a math expression.
    alarm_metrics: int
    # Alarms whose metric is a Metrics Insights query (billed per series it analyzes).
    insights_alarms: int
    dashboards: int
    state_machines: int
    secrets: int
    # The lifecycle state machine's definition, function ARNs replaced by logical ids.
    lifecycle_definition: Mapping[str, Any]
    # The push channel's functions (WebSocket routes, stream consumer) and the consumer's window.
    stream_memory_mb: int = 256
    push_memory_mb: int = 256
    push_batching_window_sec: int = 1
    # The schedule function (EventBridge Scheduler's target).
    schedule_memory_mb: int = 512
    # The audit function (the tasks stream's second consumer, docs/audit.md).
    audit_memory_mb: int = 256
    # The memory of each function that runs from a SnapStart snapshot (the API and WebSocket ones).
    snap_start_memory_mb: tuple[int, ...] = ()


@dataclass(frozen=True)
class Line:
    """One cost item: a monthly amount per export, plus a fixed monthly amount."""

    service: str
    per_export: float
    fixed: float
    basis: str

    def monthly(self, exports: int) -> float:
        """The month's cost of this item at ``exports`` exports."""
        return self.per_export * exports + self.fixed


def _of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, Any]:
    return {key: value for key, value in template["Resources"].items() if value["Type"] == resource_type}


def resolved_definition(state_machine: Mapping[str, Any]) -> dict[str, Any]:
    """The definition of a state machine resource, ``Fn::GetAtt`` parts replaced by logical ids
    and ``Ref`` parts (the partition) by the name they refer to."""
    definition = state_machine["Properties"]["DefinitionString"]
    if isinstance(definition, str):
        parsed: dict[str, Any] = json.loads(definition)
        return parsed
    _, parts = definition["Fn::Join"]
    joined: dict[str, Any] = json.loads(
        "".join(
            part if isinstance(part, str) else part["Ref"] if "Ref" in part else part["Fn::GetAtt"][0] for part in parts
        )
    )
    return joined


def callback_state(definition: Mapping[str, Any]) -> str:
    """The name of the state that sends the callback (the one retried on CallbackRetryable)."""
    (name,) = _callback_states(definition)
    return name


def _callback_states(definition: Mapping[str, Any]) -> list[str]:
    return [
        name
        for name, state in definition["States"].items()
        if any(Callback.RETRYABLE_ERROR in retrier["ErrorEquals"] for retrier in state.get("Retry", []))
    ]


def stack_facts(template: Mapping[str, Any]) -> StackFacts:
    """Read the settings that drive cost out of a synthesized template.

    The worker is the target of the lanes' event sources (one per lane queue); the lifecycle
    function is the one the lifecycle workflow starts with, the callback function the one it
    retries callbacks on; the API function is the remaining one.
    """
    # Our functions (CDK's own helpers, e.g. the dev buckets' auto-delete, have other handlers).
    functions = {
        logical_id: function
        for logical_id, function in _of_type(template, "AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == "handler.lambda_handler"
    }
    every_mapping = [m["Properties"] for m in _of_type(template, "AWS::Lambda::EventSourceMapping").values()]
    # The lanes' queues feed the worker; the tasks stream (a starting position) feeds the push function.
    mappings = [mapping for mapping in every_mapping if "StartingPosition" not in mapping]
    ((worker_id, batch_size),) = {(mapping["FunctionName"]["Ref"], mapping["BatchSize"]) for mapping in mappings}

    def reading(variable: str) -> str:
        (logical_id,) = (
            logical_id
            for logical_id, function in functions.items()
            if variable in function["Properties"].get("Environment", {}).get("Variables", {})
        )
        return logical_id

    stream_id = reading(Env.JWT_ISSUER)
    # The audit function: the one told the worker's memory (its usage's CPU-seconds).
    audit_id = reading(Env.WORKER_MEMORY_MB)
    (push_mapping,) = (
        mapping
        for mapping in every_mapping
        if "StartingPosition" in mapping and mapping["FunctionName"]["Ref"] != audit_id
    )
    push_id = push_mapping["FunctionName"]["Ref"]
    state_machines = _of_type(template, "AWS::StepFunctions::StateMachine")
    (lifecycle,) = (
        resolved_definition(machine)
        for machine in state_machines.values()
        # The lifecycle's; the fan-out's (split exports only) is not in this estimate.
        if _callback_states(resolved_definition(machine))
    )
    lifecycle_id = lifecycle["States"][lifecycle["StartAt"]]["Parameters"]["FunctionName"]
    callback_id = lifecycle["States"][callback_state(lifecycle)]["Parameters"]["FunctionName"]
    # The schedule function: the one whose asynchronous failures go to the schedules' dead letters.
    (schedule_id,) = (
        config["Properties"]["FunctionName"]["Ref"]
        for config in _of_type(template, "AWS::Lambda::EventInvokeConfig").values()
    )
    (api_id,) = set(functions) - {worker_id, lifecycle_id, callback_id, push_id, stream_id, schedule_id, audit_id}
    log_group_id = functions[worker_id]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    (bucket,) = (
        bucket
        for bucket in _of_type(template, "AWS::S3::Bucket").values()
        if "LoggingConfiguration" in bucket["Properties"]
    )
    rules = {rule["Id"]: rule for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    memory = {function_id: function["Properties"]["MemorySize"] for function_id, function in functions.items()}
    worker_storage = functions[worker_id]["Properties"].get("EphemeralStorage", {})
    alarms = _of_type(template, "AWS::CloudWatch::Alarm")
    return StackFacts(
        api_memory_mb=memory[api_id],
        worker_memory_mb=memory[worker_id],
        lifecycle_memory_mb=memory[lifecycle_id],
        callback_memory_mb=memory[callback_id],
        worker_batch_size=batch_size,
        worker_ephemeral_storage_mb=worker_storage.get("Size", LAMBDA_INCLUDED_EPHEMERAL_MB),
        lanes=len(mappings),
        log_retention_days=template["Resources"][log_group_id]["Properties"]["RetentionInDays"],
        results_expiry_days=rules["expire-results"]["ExpirationInDays"],
        alarms=len(alarms),
        alarm_metrics=sum(_alarm_metrics(alarm["Properties"]) for alarm in alarms.values()),
        insights_alarms=sum(1 for alarm in alarms.values() if _insights_query(alarm["Properties"])),
        dashboards=len(_of_type(template, "AWS::CloudWatch::Dashboard")),
        state_machines=len(state_machines),
        secrets=len(_of_type(template, "AWS::SecretsManager::Secret")),
        lifecycle_definition=lifecycle,
        stream_memory_mb=memory[stream_id],
        push_memory_mb=memory[push_id],
        push_batching_window_sec=push_mapping.get("MaximumBatchingWindowInSeconds", 0),
        schedule_memory_mb=memory[schedule_id],
        audit_memory_mb=memory[audit_id],
        snap_start_memory_mb=tuple(
            memory[function_id]
            for function_id, function in sorted(functions.items())
            if function["Properties"].get("SnapStart", {}).get("ApplyOn") == "PublishedVersions"
        ),
    )


def _insights_query(alarm: Mapping[str, Any]) -> bool:
    """Whether the alarm evaluates a Metrics Insights query."""
    return any("SELECT" in query.get("Expression", "") for query in alarm.get("Metrics", []))


def _alarm_metrics(alarm: Mapping[str, Any]) -> int:
    """The metrics an alarm of the template evaluates (a Metrics Insights query counts none here:
    its series are counted from the workload)."""
    if "Metrics" not in alarm:
        return 1
    return sum(1 for query in alarm["Metrics"] if "MetricStat" in query)


def _path_value(document: Mapping[str, Any], path: str) -> Any:
    """The value at a simple JSONPath such as ``$.outcome.has_callback``."""
    value: Any = document
    for part in path.removeprefix("$.").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _rule_matches(state_input: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    """Whether a Choice rule (``BooleanEquals``, ``IsPresent`` or an ``And`` of them) holds."""
    if "And" in rule:
        return all(_rule_matches(state_input, part) for part in rule["And"])
    value = _path_value(state_input, rule["Variable"])
    if "IsPresent" in rule:
        return (value is not None) is bool(rule["IsPresent"])
    return value is True if rule["BooleanEquals"] else value is False


def states_entered(definition: Mapping[str, Any], scenario: Scenario) -> list[str]:
    """The states one execution enters in ``scenario``, a retried state once per attempt.

    Follows the definition: a deadline is the ``States.Timeout`` a ``TimeoutSecondsPath`` state
    catches; Choice rules are evaluated on the execution's input; the callback state is retried
    per its Retry, and caught once its attempts are spent.
    """
    state_input = {**execution_input("task", 1), "outcome": task_outcome("COMPLETED", scenario.has_callback)}
    sender = callback_state(definition)
    entered: list[str] = []
    name = definition["StartAt"]
    while True:
        state = definition["States"][name]
        entered.append(name)
        if state["Type"] in ("Succeed", "Fail") or state.get("End"):
            return entered
        if state["Type"] == "Choice":
            name = next(
                (rule["Next"] for rule in state["Choices"] if _rule_matches(state_input, rule)),
                state["Default"],
            )
            continue
        error = None
        if "TimeoutSecondsPath" in state and scenario.deadline:
            error = "States.Timeout"
        if name == sender and scenario.failed_callback_attempts:
            (retrier,) = (r for r in state["Retry"] if Callback.RETRYABLE_ERROR in r["ErrorEquals"])
            entered += [name] * min(scenario.failed_callback_attempts, retrier["MaxAttempts"])
            if scenario.failed_callback_attempts > retrier["MaxAttempts"]:
                error = Callback.RETRYABLE_ERROR
        if error is None:
            name = state["Next"]
            continue
        name = next(
            catcher["Next"]
            for catcher in state["Catch"]
            if error in catcher["ErrorEquals"] or "States.ALL" in catcher["ErrorEquals"]
        )


def state_transitions(definition: Mapping[str, Any], scenario: Scenario) -> int:
    """Billed transitions of one execution: its start, then every state entered or retried."""
    return 1 + len(states_entered(definition, scenario))


def function_calls(definition: Mapping[str, Any], scenario: Scenario) -> tuple[int, int]:
    """How often one execution invokes the lifecycle and the callback function in ``scenario``."""
    states = definition["States"]
    lifecycle = states[definition["StartAt"]]["Parameters"]["FunctionName"]
    callback = states[callback_state(definition)]["Parameters"]["FunctionName"]
    invoked = [states[name].get("Parameters", {}).get("FunctionName") for name in states_entered(definition, scenario)]
    return invoked.count(lifecycle), invoked.count(callback)


def cost_lines(facts: StackFacts, work: Workload) -> list[Line]:
    """Every cost item of the service for one export and per month."""
    api_requests = 1 + work.status_polls + work.downloads  # submit, polls, download redirect
    lifecycle_calls, callback_calls = function_calls(facts.lifecycle_definition, work.lifecycle)
    transitions = state_transitions(facts.lifecycle_definition, work.lifecycle)
    invocations = api_requests + 1 + lifecycle_calls + callback_calls  # plus one worker run
    gb_seconds = (
        api_requests * work.api_request_sec * facts.api_memory_mb
        + work.worker_run_sec * facts.worker_memory_mb
        + lifecycle_calls * work.lifecycle_run_sec * facts.lifecycle_memory_mb
        + callback_calls * work.callback_run_sec * facts.callback_memory_mb
    ) / 1024
    # Task item writes: create, claim, progress every PROGRESS_INTERVAL_SEC, complete, the
    # workflow's token, and one per callback attempt; each also writes the by_user index
    # (projection ALL), and costs one unit per started KB. Create and complete run in transactions
    # (with the admission items below), which cost twice on the table.
    task_units = math.ceil(work.task_item_bytes / 1024)
    task_writes = 4 + math.ceil(work.worker_run_sec / Worker.PROGRESS_INTERVAL_SEC) + callback_calls
    # Admission items (under 1 KB each, out of the index): the user's quota counter goes up in the
    # create transaction and down in the end transaction, the dedup marker is put in the create
    # transaction and deleted after the end; the worker takes a hot-key token and folds the run
    # into the throughput statistics (a strongly consistent read and a conditional put each), and
    # the submit reads those statistics for its estimate. Admission by deadline (docs/capacity.md):
    # the submit reserves the task's work in its lane (a conditional update) after reading the
    # lane's drain (cached 2 s: at most one eventually consistent read), and the first start
    # takes it off (an update) and measures the drain (a strongly consistent read and a
    # conditional put).
    admission_writes = 2 * 2 + 2 + 1 + 1 + 1 + 1 + 1
    admission_reads = 1 + 1 + 0.5 + 0.5 + 1
    write_units = task_writes * 2 * task_units + 2 * task_units + admission_writes
    # Strongly consistent task reads (worker, every poll/download, every callback attempt), one
    # unit per started 4 KB; the orders query on the index reads eventually consistent (half a
    # unit per 4 KB).
    task_reads = (1 + work.status_polls + work.downloads + callback_calls) * math.ceil(work.task_item_bytes / 4096)
    order_reads = math.ceil(work.rows * work.order_item_bytes / 4096) / 2
    parts = max(1, math.ceil(work.file_bytes / Worker.UPLOAD_PART_BYTES))
    # Billed on what is configured, whether the run uses it or not (a CSV export does not).
    extra_storage_gb = max(0, facts.worker_ephemeral_storage_mb - LAMBDA_INCLUDED_EPHEMERAL_MB) / 1024
    storage_gb_seconds = extra_storage_gb * work.worker_run_sec
    log_bytes = (
        invocations * work.log_bytes_per_invocation
        + api_requests * work.access_log_bytes_per_request
        + transitions * work.workflow_log_bytes_per_transition
    )
    stored_months = facts.log_retention_days / 30
    idle_receives = work.idle_pollers_per_lane * facts.lanes * SECONDS_PER_MONTH / Queue.LONG_POLL_SEC
    # Send, receive and delete the task's message; at submit, read every lane's depth for the
    # backpressure check (an upper bound: each API instance caches the depths for a few seconds).
    sqs_requests = 3 / facts.worker_batch_size + facts.lanes
    traces = api_requests + 1 + 1  # the worker run, and the execution (its functions join its trace)
    metric_series = business_metric_series(work)
    alarm_metrics = facts.alarm_metrics + facts.insights_alarms * work.failed_export_series
    return [
        Line(
            "Lambda compute (arm64)",
            gb_seconds * Price.LAMBDA_ARM_GB_SECOND,
            0,
            f"{api_requests} API calls x {work.api_request_sec} s x {facts.api_memory_mb} MB + one worker run "
            f"of {work.worker_run_sec} s x {facts.worker_memory_mb} MB + {lifecycle_calls} lifecycle call x "
            f"{work.lifecycle_run_sec} s x {facts.lifecycle_memory_mb} MB + {callback_calls} callback x "
            f"{work.callback_run_sec} s x {facts.callback_memory_mb} MB = {gb_seconds:.3f} GB-s",
        ),
        *(
            [
                Line(
                    "Lambda ephemeral storage",
                    storage_gb_seconds * Price.LAMBDA_EPHEMERAL_GB_SECOND,
                    0,
                    f"worker /tmp of {facts.worker_ephemeral_storage_mb} MB: {extra_storage_gb:g} GB above the "
                    f"included {LAMBDA_INCLUDED_EPHEMERAL_MB} MB x {work.worker_run_sec} s = "
                    f"{storage_gb_seconds:g} GB-s",
                )
            ]
            if extra_storage_gb
            else []
        ),
        Line("Lambda requests", invocations * Price.LAMBDA_REQUEST, 0, f"{invocations} invocations"),
        Line(
            "Step Functions (Standard)",
            transitions * Price.STEP_FUNCTIONS_TRANSITION,
            0,
            f"{transitions} state transitions: a task that {work.lifecycle.description}",
        ),
        Line(
            "Secrets Manager",
            callback_calls * Price.SECRETS_API_CALL,
            facts.secrets * Price.SECRET_MONTH,
            f"{facts.secrets} secret; at most one read per callback (upper bound: each function instance "
            "caches it 5 minutes)",
        ),
        Line(
            "API Gateway (HTTP API)",
            api_requests * Price.HTTP_API_REQUEST,
            0,
            f"{api_requests} requests: submit, {work.status_polls} polls, {work.downloads} download",
        ),
        Line(
            "SQS",
            sqs_requests * Price.SQS_REQUEST,
            idle_receives * Price.SQS_REQUEST,
            f"send, receive, delete per task, and {facts.lanes} lane depth reads at submit (upper bound: cached "
            f"{Admission.BACKLOG_CACHE_SEC} s); {work.idle_pollers_per_lane} idle long polls of "
            f"{Queue.LONG_POLL_SEC} s on each of {facts.lanes} lane queues",
        ),
        Line(
            "DynamoDB (on demand)",
            write_units * Price.DYNAMODB_WRITE_UNIT
            + (task_reads + admission_reads + order_reads) * Price.DYNAMODB_READ_UNIT,
            0,
            f"{write_units} write units (task + index, transactions twice; {admission_writes} for quota, dedup, "
            f"hot-key token, statistics and the lane's queued work), {task_reads} task reads, "
            f"{admission_reads:g} admission read units, "
            f"{order_reads:g} read units for {work.rows:,} orders of {work.order_item_bytes} B",
        ),
        Line(
            "S3 requests",
            (2 + parts + 1 + 1) * Price.S3_PUT_REQUEST + work.downloads * Price.S3_GET_REQUEST,
            0,
            f"multipart create + {parts} part + complete, the result's tags, the checkpoint look-up (a LIST that "
            f"finds none) (PUT class); {work.downloads} download GET",
        ),
        Line(
            "S3 storage",
            work.file_bytes / GB * facts.results_expiry_days / 30 * Price.S3_GB_MONTH,
            0,
            f"{work.file_bytes // 1024} KB kept {facts.results_expiry_days} days (lifecycle expiry)",
        ),
        Line(
            "Data transfer out",
            work.downloads * work.file_bytes / GB * Price.DATA_TRANSFER_OUT_GB,
            0,
            f"{work.downloads} download of {work.file_bytes // 1024} KB",
        ),
        Line(
            "CloudWatch Logs",
            log_bytes / GB * (Price.LOGS_INGESTED_GB + stored_months * Price.LOGS_STORED_GB_MONTH),
            0,
            f"{log_bytes / 1024:.1f} KB ingested (functions, API access, workflow history), kept "
            f"{facts.log_retention_days} days",
        ),
        Line("X-Ray", traces * Price.XRAY_TRACE, 0, f"{traces} traces (every request sampled: upper bound)"),
        Line(
            "CloudWatch metrics, alarms, dashboard",
            0,
            metric_series * Price.CUSTOM_METRIC_MONTH
            + alarm_metrics * Price.ALARM_METRIC_MONTH
            + facts.dashboards * Price.DASHBOARD_MONTH,
            f"{metric_series} business metric series ({Metric.FAILED} in {work.failed_export_series} by error code "
            f"and source); {facts.alarms} alarms evaluating {alarm_metrics} metrics (math expressions count each "
            f"metric, the {Metric.FAILED} query its {work.failed_export_series} series); {facts.dashboards} dashboard",
        ),
    ]


def business_metric_series(work: Workload) -> int:
    """The custom metrics the functions publish: one series per metric name, ExportFailed one per
    error code and source that occurs."""
    names = sum(1 for name in vars(Metric) if name.isupper())
    return names - 1 + work.failed_export_series


def _money(amount: float) -> str:
    if amount == 0:
        return "$0"
    if amount < 0.000001:
        return "< $0.000001"
    if amount < 0.01:
        return f"${amount:.6f}"
    return f"${amount:,.2f}"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render(template: Mapping[str, Any], stage: str, work: Workload | None = None) -> str:
    """The Markdown estimate for the synthesized ``template`` of ``stage``."""
    work = work or Workload()
    facts = stack_facts(template)
    lines = cost_lines(facts, work)
    per_export = sum(line.per_export for line in lines)
    out = [
        "# What the exports service costs",
        "",
        f"Generated by `scripts/cost_estimate.py` from the `{stage}` stack's synthesized template and",
        "`exports/core/config/`; regenerate with `.venv/bin/python scripts/cost_estimate.py --write docs/cost.md`",
        "after changing sizes, retention, alarms or the workload assumptions.",
        "",
        "## Assumptions",
        "",
        "- Public **us-east-1** list prices (USD), no free tier, no savings plans: see `Price` in the script,",
        "  and check them against the AWS pricing pages before relying on the totals.",
        f"- One small export: {work.rows:,} orders of {work.order_item_bytes} B read from the day index, "
        f"a {work.file_bytes // 1024} KB CSV file,",
        f"  a worker run of {work.worker_run_sec} s, {work.api_request_sec} s per API call, "
        f"{work.status_polls} status polls and {work.downloads} download.",
        f"- Its lifecycle execution: a task that {work.lifecycle.description}; the lifecycle function runs "
        f"{work.lifecycle_run_sec} s, the callback function {work.callback_run_sec} s per attempt.",
        f"- Step Functions logs about {work.workflow_log_bytes_per_transition} B of history events per state "
        "transition (execution data is not logged).",
        f"- {work.log_bytes_per_invocation} B of logs per invocation and {work.access_log_bytes_per_request} B "
        "per API access log line.",
        f"- A task item of about {work.task_item_bytes / 1024:.0f} KB (a write unit per started KB, a strongly "
        f"consistent read unit per started 4 KB); `{Metric.FAILED}` published in {work.failed_export_series} "
        "series a month (error code and source).",
        "- Admission: no `Idempotency-Key` header, no duplicate submit, no hot-key deferral (each would add "
        "a few DynamoDB or SQS requests).",
        "- Not counted: Cognito (billed per monthly active user, not per export), your own data sources "
        "if they are not the demo tables, the demo tables' storage and point-in-time recovery (per GB "
        "they hold), the CDK bootstrap bucket.",
        "- A `customers` export reads its day index the same way (one query per day of the range, pages of "
        f"up to {SOURCE_PAGE_ROWS:,} rows); a long CSV export that continues in a new invocation "
        "adds a worker run, a checkpoint PUT and GET, and a task update per hand-over.",
        "",
        "## Stack settings used",
        "",
        f"- API function {facts.api_memory_mb} MB, worker {facts.worker_memory_mb} MB, lifecycle "
        f"{facts.lifecycle_memory_mb} MB, callback {facts.callback_memory_mb} MB (arm64), "
        f"queue batch size {facts.worker_batch_size}; worker /tmp {facts.worker_ephemeral_storage_mb} MB "
        "(for XLSX workbooks)",
        f"- {facts.lanes} priority lanes: a task queue, a dead-letter queue and a worker event source each",
        f"- Log retention {facts.log_retention_days} days; result files expire after {facts.results_expiry_days} days",
        f"- {facts.alarms} alarms ({facts.alarm_metrics} metrics, and {facts.insights_alarms} Metrics Insights "
        f"query), {facts.dashboards} dashboard, {facts.state_machines} state machines (Standard: "
        f"the lifecycle, and the fan-out of split exports, which this estimate does not split), {facts.secrets} secret",
        "",
        "## Monthly cost",
        "",
    ]
    rows = [
        [line.service, _money(line.per_export), *(_money(line.monthly(volume)) for volume in VOLUMES), line.basis]
        for line in lines
    ]
    rows.append(
        [
            "**Total**",
            f"**{_money(per_export)}**",
            *(f"**{_money(sum(line.monthly(volume) for line in lines))}**" for volume in VOLUMES),
            "",
        ]
    )
    out += _table(["Service", "Per export", *(f"{volume:,} exports/month" for volume in VOLUMES), "Basis"], rows)
    low, high = VOLUMES
    fixed = sum(line.fixed for line in lines)
    leaders = sorted(lines, key=lambda line: line.monthly(high), reverse=True)[:2]
    total_low = sum(line.monthly(low) for line in lines)
    out += [
        "",
        f"At {low:,} exports a month the fixed items (idle queue polling, the secret, metrics, alarms, dashboard:",
        f"{_money(fixed)}) are {fixed / total_low:.0%} of the bill. At {high:,} the largest items are "
        f"{leaders[0].service} ({_money(leaders[0].monthly(high))})",
        f"and {leaders[1].service} ({_money(leaders[1].monthly(high))}).",
        "",
        "## Step Functions",
        "",
        "Each task has one execution of the lifecycle state machine (Standard), and Standard workflows bill",
        "every state transition, retries included. The transitions below are counted by walking the deployed",
        "definition, with the execution's start counted as one transition (if AWS does not bill it, subtract",
        "one everywhere).",
        "",
    ]
    definition = facts.lifecycle_definition
    out += _table(
        ["The task", "States entered", "Transitions", *(f"{volume:,} exports/month" for volume in VOLUMES)],
        [
            [
                scenario.description,
                " → ".join(states_entered(definition, scenario)),
                str(state_transitions(definition, scenario)),
                *(
                    _money(state_transitions(definition, scenario) * volume * Price.STEP_FUNCTIONS_TRANSITION)
                    for volume in VOLUMES
                ),
            ]
            for scenario in SCENARIOS
        ],
    )
    per_transition = high * Price.STEP_FUNCTIONS_TRANSITION
    total_high = sum(line.monthly(high) for line in lines)
    out += [
        "",
        f"At {high:,} exports a month each transition per task adds {_money(per_transition)}: "
        f"{total_high / per_transition:.0f} transitions per task",
        "cost as much as the whole bill above. A callback receiver that is down costs its retries; a",
        "task that reaches its deadline costs one more transition (`Expire`).",
        "",
    ]
    out += _push_costs(facts, work)
    out += _audit_costs(facts)
    out += _snapstart_costs(facts, work)
    out += _schedule_costs(facts, work, per_export)
    out += _event_costs()
    out += _delivery_costs(facts, work)
    out += _vpc_costs()
    return "\n".join(out)


def push_lines(facts: StackFacts, work: Workload, route_sec: float = 0.05) -> list[Line]:
    """What the push channel (docs/push.md) adds: the push function on every task write of every
    export, and for an export someone follows over the WebSocket, the ticket, the connection and
    its messages."""
    # Task writes as in cost_lines (create, claim, progress steps, complete, token); one push
    # invocation each at most (writes within one batching window share one).
    writes = 4 + math.ceil(work.worker_run_sec / Worker.PROGRESS_INTERVAL_SEC)
    push_gb_seconds = writes * route_sec * facts.push_memory_mb / 1024
    # Each invocation queries the task's and the owner's subscriptions (eventually consistent).
    push_reads = writes * 2 * 0.5
    # Followed: POST /v1/stream-tickets (API call + ticket put), $connect (ticket delete, the
    # connection's put), subscribe (a read, a 2-put transaction costing double, the task read),
    # $disconnect (a query, three deletes); messages: subscribe in, ack and state out, one event
    # per write, the pong-free close.
    stream_calls = 3
    watched_gb_seconds = (
        work.api_request_sec * facts.api_memory_mb + stream_calls * route_sec * facts.stream_memory_mb
    ) / 1024
    watched_writes = 1 + 2 + 4 + 3
    watched_reads = 1 + 1 + 0.5
    messages = 3 + writes
    minutes = max(1.0, (work.worker_run_sec + 30) / 60)
    return [
        Line(
            "Push function (every export)",
            push_gb_seconds * Price.LAMBDA_ARM_GB_SECOND
            + writes * Price.LAMBDA_REQUEST
            + push_reads * Price.DYNAMODB_READ_UNIT,
            0,
            f"at most {writes} invocations (one per task write; writes within its "
            f"{facts.push_batching_window_sec} s window share one) x {route_sec} s x {facts.push_memory_mb} MB, "
            "two subscription queries each; stream reads by the mapping are free",
        ),
        Line(
            "Followed over the WebSocket",
            watched_gb_seconds * Price.LAMBDA_ARM_GB_SECOND
            + (1 + stream_calls) * Price.LAMBDA_REQUEST
            + Price.HTTP_API_REQUEST
            + watched_writes * Price.DYNAMODB_WRITE_UNIT
            + watched_reads * Price.DYNAMODB_READ_UNIT
            + messages * Price.WEBSOCKET_MESSAGE
            + minutes * Price.WEBSOCKET_CONNECTION_MINUTE,
            0,
            f"a ticket request, {stream_calls} route calls, {watched_writes} write and {watched_reads:g} read "
            f"units, {messages} messages, {minutes:g} connection minute(s); instead of {work.status_polls} polls",
        ),
    ]


def _push_costs(facts: StackFacts, work: Workload) -> list[str]:
    """The push channel's section: per export, and per million exports."""
    lines = push_lines(facts, work)
    per_million = 1_000_000
    return [
        "## The push channel",
        "",
        "Not in the table above: the push channel (docs/push.md). The push function runs for every task",
        "write whoever watches; an export followed over the WebSocket (the console, `exportctl --wait`) adds",
        "its ticket, connection and messages, and saves the status polls of the table above.",
        "",
        *_table(
            ["Item", "Per export", f"{per_million:,} exports/month", "Basis"],
            [[line.service, _money(line.per_export), _money(line.monthly(per_million)), line.basis] for line in lines],
        ),
        "",
        f"Every export followed: {_money(sum(line.monthly(per_million) for line in lines))} per {per_million:,} "
        "exports a month.",
        "",
    ]


@dataclass(frozen=True)
class AuditWork:
    """What one export leaves in the audit trail (docs/audit.md), as this estimate assumes it:
    its submission and end, the link of the status poll that sees it COMPLETED and one download."""

    records: int = 4
    record_bytes: int = 1500
    function_sec: float = 0.05
    retention_days: int = Audit.RETENTION_DAYS_DEFAULT
    # Tenants billed: each publishes four usage metrics (TenantExports, Rows, Bytes, CpuSeconds).
    tenants: int = 100


@dataclass(frozen=True)
class Appends:
    """What ``records`` appends to the audit trail take: each a strongly consistent query of the
    chain's end and a transaction of the record and its event's marker (under 1 KB), every item
    a transactional write (two units per started KB), kept for the retention."""

    records: int
    work: AuditWork

    @property
    def write_units(self) -> int:
        return self.records * 2 * (math.ceil(self.work.record_bytes / 1024) + 1)

    @property
    def read_units(self) -> int:
        return self.records

    @property
    def operations(self) -> float:
        """The queries and transactions, in dollars."""
        return self.write_units * Price.DYNAMODB_WRITE_UNIT + self.read_units * Price.DYNAMODB_READ_UNIT

    @property
    def storage(self) -> float:
        """A month's records kept for the retention: in the steady state, that many months of
        them, with point-in-time recovery; in dollars a month."""
        stored_gb = self.records * self.work.record_bytes / GB
        return stored_gb * self.work.retention_days / 30 * (Price.DYNAMODB_GB_MONTH + Price.DYNAMODB_PITR_GB_MONTH)

    @property
    def total(self) -> float:
        return self.operations + self.storage

    @property
    def basis(self) -> str:
        return (
            f"{self.records} append{'s' if self.records > 1 else ''} of {self.work.record_bytes} B: "
            f"{self.write_units} transactional write units, {self.read_units} strongly consistent "
            f"read{'s' if self.read_units > 1 else ''}, kept {self.work.retention_days} days"
        )


def audit_lines(facts: StackFacts, work: AuditWork | None = None) -> list[Line]:
    """What the audit trail adds per export: the audit function's invocations (the submission's
    and the end's task writes; the API's appends ride on its own calls), each append's chain-end
    query (strongly consistent) and its transaction (every item a transactional write: two units
    per started KB), the records kept for the retention, and the usage metrics per tenant."""
    work = work or AuditWork()
    invocations = 2
    gb_seconds = invocations * work.function_sec * facts.audit_memory_mb / 1024
    appends = Appends(work.records, work)
    # The records and their markers, and for the end the usage counters.
    write_units = appends.write_units + 2
    read_units = appends.read_units
    return [
        Line(
            "Audit function and appends",
            gb_seconds * Price.LAMBDA_ARM_GB_SECOND
            + invocations * Price.LAMBDA_REQUEST
            + write_units * Price.DYNAMODB_WRITE_UNIT
            + read_units * Price.DYNAMODB_READ_UNIT,
            0,
            f"{invocations} invocations x {work.function_sec} s x {facts.audit_memory_mb} MB; {work.records} records: "
            f"{write_units} transactional write units, {read_units} strongly consistent reads",
        ),
        Line(
            "Audit storage (steady state)",
            appends.storage,
            work.tenants * 4 * Price.CUSTOM_METRIC_MONTH,
            f"{work.records} records of {work.record_bytes} B kept {work.retention_days} days, with point-in-time "
            f"recovery; fixed: 4 usage metrics per tenant for {work.tenants} tenants",
        ),
    ]


# The records besides an export's own four (docs/audit.md), each one append made by the function
# that does the thing, within its own invocation: (what, written by).
OCCASIONAL_RECORDS: Final = (
    ("a link a push event carries (an export followed over the push channel)", "the push channel's functions"),
    ("a download of a schedule's latest file or through its permalink", "the API"),
    ("a permalink minted, rotated or revoked", "the API"),
    ("a schedule paused (a firing refused, or failed runs in a row)", "the schedule or callback function"),
)


def _audit_costs(facts: StackFacts) -> list[str]:
    """The audit trail's section: per export, and per million exports; then the records that
    come with other things (a scheduled run's mail and a file delivery are priced in their own
    sections), each one append."""
    lines = audit_lines(facts)
    per_million = 1_000_000
    one = Appends(1, AuditWork())
    return [
        "## The audit trail",
        "",
        "Not in the table above: the audit trail and usage per tenant (docs/audit.md). Every export's",
        "submission, end, links and downloads are appended to its tenant's daily chain, kept",
        f"{Audit.RETENTION_DAYS_DEFAULT} days; storage grows with the retention, the metrics with the tenants.",
        "",
        *_table(
            ["Item", "Per export", f"{per_million:,} exports/month", "Basis"],
            [[line.service, _money(line.per_export), _money(line.monthly(per_million)), line.basis] for line in lines],
        ),
        "",
        *_wrapped(
            "Other records are one append each, made by the function that does the thing within its own "
            "invocation (no audit function runs for them): a scheduled run's mail (in the firing's cost, "
            "[Scheduled exports](#scheduled-exports)), a file delivered to a destination (in its cost, "
            "[File deliveries](#file-deliveries)), and these, as often as they happen:"
        ),
        "",
        *_table(["Record", "Written by"], [[what, by] for what, by in OCCASIONAL_RECORDS]),
        "",
        *_wrapped(
            f"Each is {_money(one.total)}, {_money(one.total * per_million)} per {per_million:,} records "
            f"({one.basis}, with point-in-time recovery)."
        ),
        "",
    ]


@dataclass(frozen=True)
class SnapStartWork:
    """How often the SnapStart functions restore an execution environment, as this estimate
    assumes it: as often as they had cold starts, that is a share of their requests (scaling out)
    and, with no traffic at all, an environment recycled every few hours."""

    restored_share_of_requests: float = 0.01
    idle_restores_per_month: int = 12 * 30
    # Published versions cached per function: the live alias's only (each deploy's new version
    # replaces the previous one, whose snapshot goes with it: infra/function_factory.py).
    versions: int = 1


def snapstart_lines(facts: StackFacts, work: Workload, snap: SnapStartWork | None = None) -> list[Line]:
    """What SnapStart adds (docs/performance.md, "SnapStart"): each function's cached snapshot
    for the month, and its restores (the API function's per request that found no warm
    environment; the WebSocket function's are counted the same way, its requests as the API's)."""
    snap = snap or SnapStartWork()
    cached_gb = sum(facts.snap_start_memory_mb) / 1024 * snap.versions
    requests = 1 + work.status_polls + work.downloads
    restored_gb = sum(facts.snap_start_memory_mb) / 1024
    memories = " + ".join(f"{mb} MB" for mb in facts.snap_start_memory_mb)
    return [
        Line(
            "SnapStart snapshots cached",
            0,
            cached_gb * SECONDS_PER_MONTH * Price.SNAPSTART_CACHE_GB_SECOND,
            f"{len(facts.snap_start_memory_mb)} functions ({memories}), {snap.versions} version each, the whole month",
        ),
        Line(
            "SnapStart restores",
            requests * snap.restored_share_of_requests * restored_gb * Price.SNAPSTART_RESTORE_GB,
            snap.idle_restores_per_month * restored_gb * Price.SNAPSTART_RESTORE_GB,
            f"{snap.restored_share_of_requests:.0%} of {requests} requests restore an environment of each; "
            f"fixed: {snap.idle_restores_per_month} idle restores of each",
        ),
    ]


def _snapstart_costs(facts: StackFacts, work: Workload) -> list[str]:
    """SnapStart's section: per export, fixed, and at a million exports."""
    lines = snapstart_lines(facts, work)
    per_million = 1_000_000
    return [
        "## SnapStart",
        "",
        "Not in the table above: the API function and the WebSocket function run from SnapStart snapshots",
        'of their published versions (docs/performance.md, "SnapStart"). SnapStart for Python bills the',
        "snapshot's cache per GB of memory and second while the version is active (at least 3 hours), and",
        "each restore of an execution environment per GB of memory; the init itself is billed once per",
        "version (at publication), and a restore's after-restore hooks as duration.",
        "",
        *_table(
            ["Item", "Per export", "Fixed per month", f"{per_million:,} exports/month", "Basis"],
            [
                [
                    line.service,
                    _money(line.per_export),
                    _money(line.fixed),
                    _money(line.monthly(per_million)),
                    line.basis,
                ]
                for line in lines
            ],
        ),
        "",
    ]


@dataclass(frozen=True)
class Firing:
    """One firing of an export schedule, as this estimate assumes it (besides its run, an export
    as in the main table, whose lifecycle execution delivers a callback: a scheduled run always
    goes through the callback function, which records its outcome and mails)."""

    schedule_function_sec: float = 0.3
    recipients: int = 1
    # Strongly consistent reads of the schedule item: at the firing, and at the run's end.
    schedule_reads: int = 2
    # The firing's idempotency record (a conditional put), the run's outcome on the schedule and
    # its copy in the by_user index (projection ALL); items under 1 KB.
    schedule_write_units: int = 3


# Firings a month of one schedule: daily and hourly.
SCHEDULE_MIXES: Final = (("daily", 30), ("hourly", Price.HOURS_PER_MONTH))
SCHEDULES: Final = 1_000


def schedule_lines(facts: StackFacts, work: Workload, firing: Firing | None = None) -> list[Line]:
    """What one firing of a schedule adds to its run: Scheduler's invocation, the schedule
    function, the schedules table, the mail and its audit record, their logs and traces."""
    firing = firing or Firing()
    gb_seconds = firing.schedule_function_sec * facts.schedule_memory_mb / 1024
    # One record per mailed run, whatever the number of recipients.
    mail_record = Appends(1 if firing.recipients else 0, AuditWork())
    return [
        Line(
            "EventBridge Scheduler",
            Price.SCHEDULER_INVOCATION,
            0,
            "1 invocation per firing (list price; see the free invocations below)",
        ),
        Line(
            "Schedule function (Lambda)",
            gb_seconds * Price.LAMBDA_ARM_GB_SECOND + Price.LAMBDA_REQUEST,
            0,
            f"1 invocation x {firing.schedule_function_sec} s x {facts.schedule_memory_mb} MB = {gb_seconds:g} GB-s",
        ),
        Line(
            "DynamoDB (schedules table)",
            firing.schedule_write_units * Price.DYNAMODB_WRITE_UNIT + firing.schedule_reads * Price.DYNAMODB_READ_UNIT,
            0,
            f"{firing.schedule_write_units} write units (the firing's idempotency record, the run's outcome and "
            f"its by_user index copy), {firing.schedule_reads} schedule reads",
        ),
        Line(
            "SES",
            firing.recipients * Price.SES_MESSAGE,
            0,
            f"{firing.recipients} message per run (one per recipient; the link, never the file)",
        ),
        Line(
            "Audit trail (the mail's record)",
            mail_record.total,
            0,
            f"the callback function's delivery.made (channel mail): {mail_record.basis}",
        ),
        Line(
            "CloudWatch Logs, X-Ray",
            work.log_bytes_per_invocation / GB * Price.LOGS_INGESTED_GB + Price.XRAY_TRACE,
            0,
            f"{work.log_bytes_per_invocation} B of the schedule function's logs, 1 trace",
        ),
    ]


def _schedule_costs(facts: StackFacts, work: Workload, per_export: float) -> list[str]:
    """The scheduled exports' section: per 1,000 schedules firing daily or hourly."""
    lines = schedule_lines(facts, work)
    firing = Firing()
    overhead = sum(line.per_export for line in lines)
    firings = {name: SCHEDULES * per_schedule for name, per_schedule in SCHEDULE_MIXES}
    columns = [f"{SCHEDULES:,} {name} schedules ({count:,} firings)" for name, count in firings.items()]

    def row(service: str, per_firing: float, basis: str, bold: bool = False) -> list[str]:
        cells = [_money(per_firing), *(_money(per_firing * count) for count in firings.values())]
        return [f"**{service}**" if bold else service, *(f"**{c}**" if bold else c for c in cells), basis]

    hourly = firings["hourly"]
    return [
        "## Scheduled exports",
        "",
        *_wrapped(
            f"Per {SCHEDULES:,} export schedules (docs/schedules.md) a month, each firing daily (30 times) or hourly "
            f"({Price.HOURS_PER_MONTH} times). A firing is an EventBridge Scheduler invocation of the schedule "
            f"function ({firing.schedule_function_sec} s), {firing.schedule_reads} reads and "
            f"{firing.schedule_write_units} write units of the schedules table, {firing.recipients} mail through SES "
            "and its record in the audit trail, and its run: an export as in the table above (with a callback: a "
            "scheduled run always goes through the callback function, which records its outcome and mails)."
        ),
        "",
        *_table(
            ["Item", "Per firing", *columns, "Basis"],
            [
                *(row(line.service, line.per_export, line.basis) for line in lines),
                row("Scheduling", overhead, "", bold=True),
                row("The runs (exports as above)", per_export, "the per-export total of the table above"),
                row("Total", overhead + per_export, "", bold=True),
            ],
        ),
        "",
        *_wrapped(
            f"Scheduler's first {Price.SCHEDULER_FREE_INVOCATIONS_PER_MONTH:,} invocations a month are free (per "
            f"account): {SCHEDULES:,} hourly schedules fire {hourly:,} times, so that line is $0 until about "
            f"{Price.SCHEDULER_FREE_INVOCATIONS_PER_MONTH // Price.HOURS_PER_MONTH:,} hourly schedules. Fixed and not "
            "above: the schedule group (free), the alarms on the schedules (in the alarms line of the main table), the "
            f"schedules table's storage ({SCHEDULES:,} items of about 2 KB, and firing records until they expire: "
            "< $0.01). A run that fails pays its retries as any export. A schedule whose cron time falls in a DST gap "
            "(02:30 in Berlin) has one more, one-time Scheduler schedule for that firing (docs/schedules.md, "
            '"Time zones and daylight saving time"): one more firing a year per gap (the run that day that would '
            "otherwise be missing), and one more Scheduler API call in each firing."
        ),
        "",
    ]


def _event_costs() -> list[str]:
    """The lifecycle events (docs/events.md): custom events put on the stack's bus, per export."""
    low, high = VOLUMES
    events = (2, 3)  # created and completed (or failed); and delivered, with a callback
    costs = [f"${count * high * Price.EVENTBRIDGE_EVENT:,.2f}" for count in events]
    return [
        "## Lifecycle events",
        "",
        *_wrapped(
            f"Every export puts {events[0]} events on the stack's EventBridge bus (created, then completed or "
            f"failed), {events[1]} with a delivered callback, at ${Price.EVENTBRIDGE_EVENT * 1e6:.2f} per million: "
            f"{costs[0]} or {costs[1]} a month at {high:,} exports, under $0.01 at {low:,}. Not in the table above. "
            "The bus itself costs nothing; the rules' targets (docs/events.md) cost what they cost."
        ),
        "",
    ]


@dataclass(frozen=True)
class DeliveryWork:
    """One file delivered to one destination (docs/destinations.md), as this estimate assumes it:
    delivered at the first attempt, to SFTP (a secret read) or S3 (an assumed role, free)."""

    # DeliverFiles, and HasDeliveries after a callback (HasCallback goes there directly otherwise).
    transitions: int = 2
    # The callback function's run: copy the file from our bucket, connect, write, rename.
    run_sec: float = 1.0
    # The task (read, then its deliveries written: 3 write units) and the destination (read).
    read_units: int = 2
    write_units: int = 3
    # The SFTP login's secret (Secrets Manager), read once per delivery.
    secret_reads: int = 1
    # Our file out to the customer's server on the Internet, or their bucket in another region.
    transfer_out: bool = True


def delivery_lines(facts: StackFacts, work: Workload, delivery: DeliveryWork | None = None) -> list[Line]:
    """What one file delivery costs, by service."""
    d = delivery or DeliveryWork()
    gb = work.file_bytes / 1024**3
    record = Appends(1, AuditWork())
    return [
        Line(
            "Step Functions (Standard)",
            d.transitions * Price.STEP_FUNCTIONS_TRANSITION,
            0,
            f"{d.transitions} transitions",
        ),
        Line(
            "Lambda (callback function)",
            d.run_sec * facts.callback_memory_mb / 1024 * Price.LAMBDA_ARM_GB_SECOND + Price.LAMBDA_REQUEST,
            0,
            f"1 invocation, {d.run_sec:g} s at {facts.callback_memory_mb} MB",
        ),
        Line(
            "DynamoDB",
            d.read_units * Price.DYNAMODB_READ_UNIT + d.write_units * Price.DYNAMODB_WRITE_UNIT,
            0,
            f"{d.read_units} reads, {d.write_units} write units",
        ),
        Line("S3", Price.S3_GET_REQUEST, 0, "1 GET of our file (their PUT is billed to them)"),
        Line("Secrets Manager", d.secret_reads * Price.SECRETS_API_CALL, 0, f"{d.secret_reads} secret read (SFTP)"),
        Line(
            "Audit trail (delivery.made)",
            record.total + Price.DYNAMODB_READ_UNIT,
            0,
            f"the callback function's record: {record.basis}; 1 more read of the destination (its kind)",
        ),
        Line(
            "Data transfer out",
            gb * Price.DATA_TRANSFER_OUT_GB if d.transfer_out else 0,
            0,
            f"{work.file_bytes // 1024} KB to the customer",
        ),
    ]


def _delivery_costs(facts: StackFacts, work: Workload) -> list[str]:
    """Per thousand file deliveries (docs/destinations.md)."""
    lines = delivery_lines(facts, work)
    per_thousand = sum(line.per_export for line in lines) * 1000
    return [
        "## File deliveries",
        "",
        *_wrapped(
            f"Per 1,000 files of {work.file_bytes // 1024} KB delivered to customers' destinations "
            "(docs/destinations.md), each at the first attempt; a retry costs one more transition and invocation. "
            "A scheduled run's mail reads each of its destinations once more, for its name: 1 read unit "
            f"({_money(Price.DYNAMODB_READ_UNIT * 1000)} per 1,000)."
        ),
        "",
        *_table(
            ["Service", "Per 1,000 deliveries", "Basis"],
            [[line.service, _money(line.per_export * 1000), line.basis] for line in lines],
        ),
        "",
        f"In all {_money(per_thousand)} per 1,000 deliveries, on top of the exports themselves.",
        "",
    ]


def _wrapped(paragraph: str) -> list[str]:
    """A paragraph as the document's lines (at most 100 characters)."""
    return textwrap.wrap(paragraph, width=100, break_on_hyphens=False)


def _vpc_costs(zones: int = 2) -> list[str]:
    """The fixed monthly cost of a worker in private subnets (``-c worker_vpc``), not in the
    table above: its way out to AWS, per availability zone of its subnets."""
    endpoints = len(WORKER_INTERFACE_ENDPOINTS)
    endpoint_month = endpoints * zones * Price.INTERFACE_ENDPOINT_HOUR * Price.HOURS_PER_MONTH
    nat_month = zones * Price.NAT_GATEWAY_HOUR * Price.HOURS_PER_MONTH
    return [
        "## The worker in a VPC",
        "",
        "Not in the table: with `-c worker_vpc` the worker reaches AWS from private subnets through VPC",
        f"endpoints or a NAT gateway (a fixed monthly cost, here for subnets in {zones} availability zones).",
        "The DynamoDB and S3 gateway endpoints are free.",
        "",
        *_table(
            ["Way out", "Monthly, fixed", "Per GB"],
            [
                [
                    f"{endpoints} interface endpoints ({', '.join(WORKER_INTERFACE_ENDPOINTS)}) x {zones} zones",
                    _money(endpoint_month),
                    _money(Price.INTERFACE_ENDPOINT_GB),
                ],
                [f"a NAT gateway per zone ({zones})", _money(nat_month), _money(Price.NAT_GATEWAY_GB)],
            ],
        ),
        "",
        "Split exports' partitions read the database from the same subnets; their bytes to S3 go through",
        "the free gateway endpoint either way.",
        "",
        *_wrapped(
            "With `-c delivery_vpc` (a fixed egress address for customers' SFTP allowlists, docs/destinations.md) "
            "the callback function needs the NAT gateways (its connections must leave from their Elastic IPs): "
            f"the same fixed cost, paid once when both functions use the same VPC, and {_money(Price.NAT_GATEWAY_GB)} "
            "per GB of what it sends through them (the files it delivers, its calls to AWS APIs that have no "
            "gateway endpoint)."
        ),
        "",
    ]


def synthesized_template(stage: str) -> dict[str, Any]:
    """The template of ``stage`` as ``cdk synth`` would write it, without bundling the functions."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import json

    from aws_cdk import App
    from aws_cdk.assertions import Template

    from infra.settings import StageSettings
    from infra.stack import ExportsStack

    # prod refuses to synthesize without an alarm destination; the address costs nothing here.
    context = {
        **json.loads((REPO_ROOT / "cdk.json").read_text())["context"],
        "stage": stage,
        "alarm_email": "oncall@example.com",
    }
    app = App(context={**context, "aws:cdk:bundling-stacks": []})
    stack = ExportsStack(app, "Estimate", settings=StageSettings.from_context(context.get))
    return dict(Template.from_stack(stack).to_json())


def main(argv: list[str] | None = None) -> None:
    """Print the estimate, or write it to a file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="prod", choices=("dev", "prod"))
    parser.add_argument("--write", type=Path, help="write the Markdown here instead of printing it")
    args = parser.parse_args(argv)
    text = render(synthesized_template(args.stage), args.stage)
    if args.write:
        args.write.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
