"""Every promise of the infrastructure, asserted on the synthesized templates.

Values shared with the function code are compared with exports.core.config in test_infra_config_parity.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match

from exports.accepting import idempotency
from exports.core.config.api import API_VERSION_PREFIX, PUBLIC_PATHS, Cors
from exports.core.config.env import Env
from exports.core.config.limits import Capacity
from exports.core.config.metrics import (
    ERROR_CODE_DIMENSION,
    METRICS_NAMESPACE,
    SOURCE_DIMENSION,
    USER_CAUSED_FAILURES,
    Metric,
    metrics_namespace,
)
from exports.core.config.names import SERVICE_NAME, Names
from exports.core.config.queues import LANES
from exports.core.config.results import Results
from exports.core.config.retry import PUSH_BATCH_RETRY
from exports.core.config.tables import CustomersTable, OrdersTable, SchedulesTable, TaskTable
from infra.api import PREFLIGHT_PATH, PROTECTED_ROUTES
from infra.function_factory import RUNTIME
from infra.functions import DESTINATION_SECRET_ACTIONS
from infra.monitoring import LAMBDA_CONCURRENCY_USAGE, SUSTAINED_THROTTLE_PERIODS
from infra.queues import lane_id
from infra.schedules import MANAGE_ACTIONS
from infra.workflows import fan_out_state_machine_name, lifecycle_state_machine_name, redelivery_state_machine_name
from tests.builders import FakeContext, http_event

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
POWERTOOLS_ENV = ("POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL")


def of_type(synth, resource_type):
    return synth.template.find_resources(resource_type)


def service_functions(synth):
    """Our functions: every AWS::Lambda::Function but CDK's own helpers (dev's bucket auto-delete)."""
    return {
        logical_id: function
        for logical_id, function in of_type(synth, "AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == "handler.lambda_handler"
    }


def test_the_only_other_function_is_cdks_bucket_auto_delete_in_dev(dev, prod):
    others = set(of_type(dev, "AWS::Lambda::Function")) - set(service_functions(dev))
    assert [logical_id for logical_id in others if "AutoDeleteObjects" not in logical_id] == []
    assert len(others) == 1
    assert set(of_type(prod, "AWS::Lambda::Function")) == set(service_functions(prod))


def ssl_only_statement(action, principal=None):
    return Match.object_like(
        {
            "Effect": "Deny",
            "Action": action,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            "Principal": principal or {"AWS": "*"},
        }
    )


def allowed_pairs(synth, service_function):
    """(action, resource) pairs the function's role may use, resources as canonical JSON."""
    policies = [
        resource
        for resource in of_type(synth, "AWS::IAM::Policy").values()
        if synth.ref(service_function.role) in resource["Properties"]["Roles"]
    ]
    pairs = set()
    for policy in policies:
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow"
            # The conditioned grants: the worker's listing, under the results prefix only; handing
            # Scheduler its role, and mail from the sender (their conditions: test_infra_schedules.py);
            # invoking a SigV4 source's function URL (test_infra_sources.py); assuming destinations'
            # roles (its condition: test_the_api_and_the_deliverer_assume_only_other_accounts_roles_...).
            conditioned = (
                "s3:ListBucket",
                "iam:PassRole",
                ["ses:SendEmail", "ses:SendRawEmail"],
                "lambda:InvokeFunctionUrl",
                "lambda:InvokeFunction",
                "sts:AssumeRole",
            )
            assert "Condition" not in statement or statement["Action"] in conditioned, statement
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            pairs |= {(action, json.dumps(resource, sort_keys=True)) for action in actions for resource in resources}
    return pairs


def expected_pairs(grants):
    return {(action, json.dumps(resource, sort_keys=True)) for actions, resource in grants for action in actions}


def join(*parts):
    return {"Fn::Join": ["", list(parts)]}


def lifecycle_arn(synth, name=lifecycle_state_machine_name):
    """The lifecycle (or another) state machine's ARN as the template spells it: built from its
    fixed name."""
    return join(
        "arn:",
        {"Ref": "AWS::Partition"},
        ":states:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        f":stateMachine:{name(synth.stack.stack_name)}",
    )


def group_schedules_arn(synth, suffix="", prefix=""):
    """The ARN of every schedule of the stack's Scheduler group (named ``<prefix>*<suffix>``), as
    the template spells it."""
    return join(
        "arn:",
        {"Ref": "AWS::Partition"},
        ":scheduler:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        ":schedule/",
        synth.ref(synth.stack.scheduling.group),
        f"/{prefix}*{suffix}",
    )


TABLE_ITEM_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]


def common_grants(synth, service_function):
    """What every function may do: write its own logs, send X-Ray traces."""
    return [
        (["xray:PutTraceSegments", "xray:PutTelemetryRecords"], "*"),
        (["logs:CreateLogStream", "logs:PutLogEvents"], synth.arn(service_function.log_group)),
    ]


# --- Lambda functions -------------------------------------------------------------------------


def test_every_function_is_python_on_arm64_traced_with_powertools_settings(dev):
    functions = service_functions(dev)
    assert len(functions) == len(dev.stack.functions.all) == 8
    for function in functions.values():
        props = function["Properties"]
        assert props["Runtime"] == RUNTIME.name
        assert props["Runtime"] >= "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Handler"] == "handler.lambda_handler"
        variables = props["Environment"]["Variables"]
        assert variables["POWERTOOLS_SERVICE_NAME"] == SERVICE_NAME
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == metrics_namespace(dev.stack.stack_name)
        assert variables["POWERTOOLS_LOG_LEVEL"] == dev.settings.log_level


def test_log_level_follows_the_stage(dev, prod):
    for synth in (dev, prod):
        for function in service_functions(synth).values():
            assert (
                function["Properties"]["Environment"]["Variables"]["POWERTOOLS_LOG_LEVEL"] == synth.settings.log_level
            )
    assert dev.settings.log_level != prod.settings.log_level


def test_every_function_logs_to_its_own_group_with_the_stage_retention(dev, prod):
    for synth in (dev, prod):
        for service_function in synth.stack.functions.all:
            function = synth.props(service_function.function)
            assert function["LoggingConfig"]["LogGroup"] == synth.ref(service_function.log_group)
            log_group = synth.props(service_function.log_group)
            assert log_group["RetentionInDays"] == synth.settings.log_retention_days


def test_the_functions_get_the_resource_names_through_the_shared_env_var_names(dev):
    stack = dev.stack
    values = {
        Env.TASKS_TABLE: dev.ref(stack.tables.tasks),
        Env.ORDERS_TABLE: dev.ref(stack.tables.orders),
        Env.RESULTS_BUCKET: dev.ref(stack.storage.bucket),
        Env.DOWNLOAD_URL_TTL_SEC: str(Results.DOWNLOAD_URL_TTL_SEC),
        Env.RETENTION_HOURS: str(dev.settings.results_retention_hours),
        Env.LIFECYCLE_STATE_MACHINE_ARN: lifecycle_arn(dev),
        Env.WEBHOOK_SECRET_ARN: dev.ref(stack.webhook_secret.secret),
    }
    for service_function in stack.functions.all:
        variables = dev.props(service_function.function)["Environment"]["Variables"]
        assert {name: variables[name] for name in values if name in variables} == {
            name: value for name, value in values.items() if name in variables
        }


def test_each_function_gets_exactly_the_variables_its_settings_read(dev, prod):
    functions = dev.stack.functions
    common = {Env.TASKS_TABLE, Env.RETENTION_HOURS}  # the callback ends no task: no retention
    # The tables exports.toml's orders_dynamodb and audit_log name (their table_env): the demo
    # orders (no settings read it) and the audit table (the API's and the audit function's settings do).
    registry = {Env.ORDERS_TABLE, Env.AUDIT_TABLE}
    tasks = {Env.TASK_QUEUE_URLS, Env.RESULTS_BUCKET, Env.LIFECYCLE_STATE_MACHINE_ARN}
    push = {Env.CONNECTIONS_TABLE, Env.RESULTS_BUCKET, Env.DOWNLOAD_URL_TTL_SEC, Env.WEBSOCKET_ENDPOINT}
    # Scheduled exports (dev sends no mail); test_infra_schedules.py pins which settings read them.
    scheduling = {
        Env.SCHEDULES_TABLE,
        Env.SCHEDULE_GROUP,
        Env.SCHEDULE_TARGET_ARN,
        Env.SCHEDULER_ROLE_ARN,
        Env.SCHEDULE_DLQ_ARN,
        Env.MAX_SCHEDULES_PER_USER,
        Env.MIN_SCHEDULE_INTERVAL_MIN,
    }
    submit = (
        common
        | registry
        | tasks
        | {
            Env.DOWNLOAD_URL_TTL_SEC,
            Env.MAX_ACTIVE_TASKS_PER_USER,
            Env.MAX_BACKLOG,
            Env.CONNECTIONS_TABLE,
            Env.EVENT_BUS,
        }
        | (scheduling & functions.api.spec.runtime_settings.variables())
    )
    # ... and the workflow of a delivery retried on request
    destinations = {Env.DESTINATIONS_TABLE, Env.DESTINATION_PRINCIPAL_ARN, Env.REDELIVERY_STATE_MACHINE_ARN}
    expected = {
        # stream tickets: the push channel's URL; delivery destinations (docs/destinations.md)
        functions.api: submit | {Env.WEBSOCKET_URL} | destinations,
        # A firing is submitted as the API's submit path does.
        functions.schedule: submit | (destinations & functions.schedule.spec.runtime_settings.variables()),
        functions.worker: common
        | registry
        | tasks
        | {
            Env.HOT_KEY_RATE_PER_MINUTE,
            Env.HOT_KEY_BURST,
            Env.FAN_OUT_STATE_MACHINE_ARN,
            Env.MAX_PARTITIONS,
            Env.PARTITION_ROWS,
            Env.EVENT_BUS,
        },
        # No registry, no queue, no workflow: the task, its file's link and the signing key; the
        # lifecycle events' bus (delivered, schedule paused); the audit table (a run's mail, the
        # pause after failures in a row; the packaged declaration's [tenants], at its default path).
        functions.callback: {
            Env.TASKS_TABLE,
            Env.RESULTS_BUCKET,
            Env.DOWNLOAD_URL_TTL_SEC,
            Env.WEBHOOK_SECRET_ARN,
            Env.EVENT_BUS,
            Env.AUDIT_TABLE,
            # the destinations it delivers files to
            Env.DESTINATIONS_TABLE,
        }
        | ({Env.SCHEDULES_TABLE} & functions.callback.spec.runtime_settings.variables()),
        functions.lifecycle: common | {Env.LIFECYCLE_STATE_MACHINE_ARN},
        # The push channel: connections, links of completed tasks, the management endpoint; the
        # registry (tenancy-bound values); $connect also verifies JWTs of the API's issuer.
        functions.push: common | registry | push,
        functions.stream: common | registry | push | {Env.JWT_ISSUER, Env.JWT_AUDIENCE},
        # The audit trail, the declaration's [tenants] and the worker's memory (CPU-seconds).
        functions.audit: common | registry | {Env.WORKER_MEMORY_MB},
    }
    for service_function in functions.all:
        reads = service_function.spec.runtime_settings
        variables = set(dev.props(service_function.function)["Environment"]["Variables"]) - set(POWERTOOLS_ENV)
        assert variables == expected[service_function], service_function.node.id
        # Nothing but what its settings read and the declared tables' variables, and everything
        # they require.
        assert set(reads.REQUIRED.values()) <= variables <= reads.variables() | registry
    # prod also passes the declared sources' overrides, to the two functions that build the registry.
    for service_function in prod.stack.functions.all:
        variables = set(prod.props(service_function.function)["Environment"]["Variables"]) - set(POWERTOOLS_ENV)
        assert variables <= service_function.spec.runtime_settings.variables() | registry


def test_a_function_whose_settings_require_a_variable_the_stack_lacks_is_refused():
    from infra.functions import CALLBACK

    with pytest.raises(ValueError, match=f"callback function needs {Env.RESULTS_BUCKET}"):
        CALLBACK.own_environment({Env.TASKS_TABLE: "tasks"})


def test_the_functions_that_queue_tasks_find_each_lanes_queue_by_lane_name(dev):
    # WorkerSettings and ApiSettings read a JSON object {lane name: queue URL}; CloudFormation fills in the URLs.
    lanes = {lane.lane.name: dev.stand_in(lane.queue) for lane in dev.stack.queues.lanes}
    assert set(lanes) == {lane.name for lane in LANES}
    functions = dev.stack.functions
    for service_function in (functions.api, functions.worker):
        variables = dev.props(service_function.function)["Environment"]["Variables"]
        assert json.loads(dev.rendered(variables[Env.TASK_QUEUE_URLS])) == lanes
    for service_function in (functions.lifecycle, functions.callback):
        assert Env.TASK_QUEUE_URLS not in dev.props(service_function.function)["Environment"]["Variables"]


def test_the_admission_limits_reach_only_the_functions_that_apply_them(dev, prod):
    for synth in (dev, prod):
        limits = synth.settings.admission
        functions = synth.stack.functions
        api = synth.props(functions.api.function)["Environment"]["Variables"]
        worker = synth.props(functions.worker.function)["Environment"]["Variables"]
        assert (int(api[Env.MAX_ACTIVE_TASKS_PER_USER]), int(api[Env.MAX_BACKLOG])) == (
            limits.max_active_tasks_per_user,
            limits.max_backlog,
        )
        assert (float(worker[Env.HOT_KEY_RATE_PER_MINUTE]), int(worker[Env.HOT_KEY_BURST])) == (
            limits.hot_key_rate_per_minute,
            limits.hot_key_burst,
        )
        hot_key = {Env.HOT_KEY_RATE_PER_MINUTE, Env.HOT_KEY_BURST}
        quota = {Env.MAX_ACTIVE_TASKS_PER_USER, Env.MAX_BACKLOG}
        assert not hot_key & set(api)
        assert not quota & set(worker)
        for service_function in (functions.lifecycle, functions.callback):
            variables = synth.props(service_function.function)["Environment"]["Variables"]
            assert not (hot_key | quota) & set(variables)
    assert prod.settings.admission != dev.settings.admission


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_function_can_build_its_settings_from_its_environment(assembly, stage):
    # Its settings' from_env is the first thing every handler does: a missing variable breaks it on AWS.
    synth = getattr(assembly, stage)
    functions = synth.stack.functions
    parsed = {}
    for service_function in functions.all:
        variables = synth.props(service_function.function)["Environment"]["Variables"]
        # CloudFormation fills in the references; stand-in strings take their place here.
        environ = {name: synth.rendered(value) for name, value in variables.items()}
        parsed[service_function] = service_function.spec.runtime_settings.from_env(environ)
    api, worker = parsed[functions.api], parsed[functions.worker]
    callback, lifecycle = parsed[functions.callback], parsed[functions.lifecycle]
    for settings in parsed.values():
        assert settings.tasks_table == synth.stand_in(synth.stack.tables.tasks)
    for settings in (api, worker, lifecycle):
        assert settings.retention_hours == synth.settings.results_retention_hours
    for settings in (api, worker):
        assert set(settings.queue_urls) == {lane.name for lane in LANES}
        assert settings.results_bucket == synth.stand_in(synth.stack.storage.bucket)
    assert api.max_active_tasks_per_user == synth.settings.admission.max_active_tasks_per_user
    assert api.max_backlog == synth.settings.admission.max_backlog
    assert worker.hot_key_rate_per_minute == synth.settings.admission.hot_key_rate_per_minute
    assert worker.hot_key_burst == synth.settings.admission.hot_key_burst
    assert worker.max_partitions == synth.settings.max_partitions
    assert worker.fan_out_state_machine_arn
    assert callback.webhook_secret_arn is not None
    assert callback.results_bucket == synth.stand_in(synth.stack.storage.bucket)
    assert lifecycle.state_machine_arn == api.state_machine_arn == worker.state_machine_arn


def test_each_function_has_its_own_role_without_managed_policies(dev):
    functions = service_functions(dev)
    roles = {json.dumps(f["Properties"]["Role"]) for f in functions.values()}
    assert len(roles) == len(functions) == 8
    for service_function in dev.stack.functions.all:
        props = dev.props(service_function.role)
        assert "ManagedPolicyArns" not in props
        assert props["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]
    # The only other roles are the lifecycle, fan-out and redelivery state machines' (test_infra_workflows.py),
    # EventBridge Scheduler's (test_infra_schedules.py) and, in dev, the one of CDK's bucket
    # auto-delete helper (a custom resource provider).
    others = set(of_type(dev, "AWS::IAM::Role")) - {dev.logical_id(f.role) for f in dev.stack.functions.all}
    assert len(others) == 5
    assert len([logical_id for logical_id in others if "AutoDeleteObjects" in logical_id]) == 1


def test_the_api_function_may_do_exactly_what_its_code_does(dev):
    stack = dev.stack
    api = stack.functions.api
    results = join(dev.arn(stack.storage.bucket), f"/{Results.KEY_PREFIX}/*")
    user_index = join(dev.arn(stack.tables.tasks), f"/index/{TaskTable.USER_INDEX}")

    assert allowed_pairs(dev, api) == expected_pairs(
        [
            *common_grants(dev, api),
            # tasks, and the admission items: quota and dedup (a transaction of Put + Update),
            # releasing dedup markers, throughput statistics, Idempotency-Key records
            (TABLE_ITEM_ACTIONS, dev.arn(stack.tables.tasks)),
            (["dynamodb:Query"], user_index),
            # submit to any lane; read every lane's depth (backpressure, estimates)
            *((["sqs:SendMessage", "sqs:GetQueueAttributes"], dev.arn(queue)) for queue in stack.queues.task_queues),
            (["s3:GetObject"], results),
            # start a task's lifecycle execution; hand a cancelled task's outcome to it
            (["states:StartExecution", "states:SendTaskSuccess"], lifecycle_arn(dev)),
            # start the redelivery execution of a delivery retried on request (nothing else of it)
            (["states:StartExecution"], lifecycle_arn(dev, redelivery_state_machine_name)),
            # store a push channel ticket
            (["dynamodb:PutItem"], dev.arn(stack.tables.connections)),
            # schedules: their items, a user's list; the Scheduler schedule of each, which is
            # handed Scheduler's role (test_infra_schedules.py checks the scopes)
            ([*TABLE_ITEM_ACTIONS, "dynamodb:ConditionCheckItem"], dev.arn(stack.tables.schedules)),
            (["dynamodb:Query"], join(dev.arn(stack.tables.schedules), f"/index/{SchedulesTable.USER_INDEX}")),
            (list(MANAGE_ACTIONS), group_schedules_arn(dev)),
            (["iam:PassRole"], dev.arn(stack.scheduling.role)),
            # the audit trail: append links, downloads and schedule changes (conditional puts),
            # read a tenant's records (Query) and usage (GetItem)
            (
                ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:GetItem"],
                dev.arn(stack.tables.audit),
            ),
            # lifecycle events (docs/events.md): on the stack's bus only
            (["events:PutEvents"], dev.arn(stack.events.bus)),
            # destinations (docs/destinations.md): items and a tenant's count (transactions), a
            # tenant's partition; their secrets under one prefix; customers' roles (verify)
            (
                [*TABLE_ITEM_ACTIONS, "dynamodb:ConditionCheckItem", "dynamodb:Query"],
                dev.arn(stack.tables.destinations),
            ),
            (list(DESTINATION_SECRET_ACTIONS), destination_secrets_arn()),
            (["sts:AssumeRole"], join("arn:", {"Ref": "AWS::Partition"}, ":iam::*:role/*")),
        ]
    )


def destination_secrets_arn():
    return join(
        "arn:",
        {"Ref": "AWS::Partition"},
        ":secretsmanager:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        f":secret:{Names.DESTINATION_SECRET_PREFIX}*",
    )


@pytest.mark.parametrize("name", ["api", "callback"])
def test_the_api_and_the_deliverer_assume_only_other_accounts_roles_and_only_with_an_external_id(dev, name):
    """The API (verify) and the callback function (file deliveries) assume customers' roles;
    only other accounts' roles, only with an ExternalId; no other function may."""
    function = getattr(dev.stack.functions, name)
    statements = [
        statement
        for resource in of_type(dev, "AWS::IAM::Policy").values()
        if dev.ref(function.role) in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "sts:AssumeRole"
    ]

    assert [statement["Condition"] for statement in statements] == [
        {
            "StringNotEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}},
            "Null": {"sts:ExternalId": "false"},
        }
    ]
    assuming = (dev.stack.functions.api, dev.stack.functions.callback)
    for other in (f for f in dev.stack.functions.all if f not in assuming):
        assert not any(action == "sts:AssumeRole" for action, _ in allowed_pairs(dev, other)), other.node.id


def test_the_worker_may_do_exactly_what_its_code_and_its_event_source_need(dev):
    stack = dev.stack
    worker = stack.functions.worker
    results = join(dev.arn(stack.storage.bucket), f"/{Results.KEY_PREFIX}/*")
    day_index = join(dev.arn(stack.tables.orders), f"/index/{OrdersTable.DAY_INDEX}")
    consume = ["sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage"]

    assert allowed_pairs(dev, worker) == expected_pairs(
        [
            *common_grants(dev, worker),
            # tasks (ending one releases its dedup marker), hot-key buckets and throughput statistics
            (TABLE_ITEM_ACTIONS, dev.arn(stack.tables.tasks)),
            # the declared types' demo table (exports.toml's orders_dynamodb), by its day index only,
            # and the audit table (exports.toml's audit_log), by key
            (["dynamodb:Query"], day_index),
            (["dynamodb:Query"], dev.arn(stack.tables.audit)),
            # each lane's event source; retries, deferred tasks and hand-overs go back to any lane
            *(([*consume, "sqs:GetQueueAttributes", "sqs:SendMessage"], dev.arn(q)) for q in stack.queues.task_queues),
            # multipart uploads (PutObject) and aborts, the checkpoint (put, get, delete), the
            # result's tags, and deleting a file it could not record
            (
                ["s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging"],
                results,
            ),
            # the checkpoint look-up lists its key (conditioned to the results prefix, below)
            (["s3:ListBucket"], dev.arn(stack.storage.bucket)),
            (["states:SendTaskSuccess"], lifecycle_arn(dev)),
            # start the fan-out execution of an export it splits
            (["states:StartExecution"], lifecycle_arn(dev, fan_out_state_machine_name)),
            (["events:PutEvents"], dev.arn(stack.events.bus)),
        ]
    )


def test_the_worker_lists_only_under_the_results_prefix(dev):
    role_id = dev.logical_id(dev.stack.functions.worker.role)
    (listing,) = [
        statement
        for policy in dev.template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "s3:ListBucket"
    ]

    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"{Results.KEY_PREFIX}/*"]}}


def test_no_function_but_the_api_the_worker_and_the_schedule_function_touches_a_queue(dev):
    for service_function in (dev.stack.functions.lifecycle, dev.stack.functions.callback):
        assert not {action for action, _ in allowed_pairs(dev, service_function) if action.startswith("sqs:")}
    for service_function in dev.stack.functions.all:
        resources = {resource for action, resource in allowed_pairs(dev, service_function) if action.startswith("sqs:")}
        dead_letters = {json.dumps(dev.arn(lane.dead_letters), sort_keys=True) for lane in dev.stack.queues.lanes}
        assert not resources & dead_letters


def test_the_lifecycle_function_may_only_touch_tasks_and_answer_its_workflow(dev):
    stack = dev.stack
    lifecycle = stack.functions.lifecycle

    assert allowed_pairs(dev, lifecycle) == expected_pairs(
        [
            *common_grants(dev, lifecycle),
            # timing a task out ends it: the quota count goes down, the dedup marker is deleted
            (["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"], dev.arn(stack.tables.tasks)),
            (["states:SendTaskSuccess"], lifecycle_arn(dev)),
        ]
    )


def test_the_callback_function_may_read_tasks_sign_links_read_the_signing_secret_and_deliver_files(dev):
    stack = dev.stack
    callback = stack.functions.callback
    results = join(dev.arn(stack.storage.bucket), f"/{Results.KEY_PREFIX}/*")

    assert allowed_pairs(dev, callback) == expected_pairs(
        [
            *common_grants(dev, callback),
            # it records attempts on ended tasks and never ends one: nothing to delete
            (["dynamodb:GetItem", "dynamodb:UpdateItem"], dev.arn(stack.tables.tasks)),
            (["s3:GetObject"], results),
            (["secretsmanager:GetSecretValue"], dev.ref(stack.webhook_secret.secret)),
            # a scheduled run's outcome on its schedule (dev sends no mail)
            (["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"], dev.arn(stack.tables.schedules)),
            (["events:PutEvents"], dev.arn(stack.events.bus)),
            # a run's mail and the pause after failures in a row, appended to the audit trail
            (["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"], dev.arn(stack.tables.audit)),
            # file deliveries (docs/destinations.md): read a destination and its secret, assume the
            # customer's role (its condition: the test above)
            (["dynamodb:GetItem"], dev.arn(stack.tables.destinations)),
            (["secretsmanager:GetSecretValue"], destination_secrets_arn()),
            (["sts:AssumeRole"], join("arn:", {"Ref": "AWS::Partition"}, ":iam::*:role/*")),
        ]
    )


def test_only_xray_gets_a_wildcard_resource(dev):
    for service_function in dev.stack.functions.all:
        wildcard = {action for action, resource in allowed_pairs(dev, service_function) if resource == '"*"'}
        assert wildcard == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_the_worker_reads_every_lane_with_partial_batch_failures_and_the_lanes_concurrency(dev):
    stack = dev.stack
    # (and the push and audit functions' mappings of the tasks stream: test_infra_push.py, test_infra_audit.py)
    dev.template.resource_count_is("AWS::Lambda::EventSourceMapping", len(LANES) + 2)
    for lane in stack.queues.lanes:
        dev.template.has_resource_properties(
            "AWS::Lambda::EventSourceMapping",
            {
                "EventSourceArn": dev.arn(lane.queue),
                "FunctionName": dev.ref(stack.functions.worker.function),
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "ScalingConfig": {"MaximumConcurrency": lane.lane.max_concurrency},
            },
        )
    mappings = [
        mapping
        for mapping in of_type(dev, "AWS::Lambda::EventSourceMapping").values()
        if mapping["Properties"]["FunctionName"] == dev.ref(stack.functions.worker.function)
    ]
    assert sum(m["Properties"]["ScalingConfig"]["MaximumConcurrency"] for m in mappings) == (
        Capacity.WORKER_MAX_CONCURRENCY
    )


# --- DynamoDB ---------------------------------------------------------------------------------


def test_tables_are_on_demand_with_point_in_time_recovery(dev, prod):
    for synth in (dev, prod):
        tables = of_type(synth, "AWS::DynamoDB::GlobalTable")
        assert len(tables) == 7  # tasks, connections, schedules, audit, destinations, demo orders and customers
        for table in tables.values():
            assert table["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
            (replica,) = table["Properties"]["Replicas"]
            assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_tables_are_protected_and_retained_in_prod_only(dev, prod):
    for synth, protected in ((dev, False), (prod, True)):
        for table in of_type(synth, "AWS::DynamoDB::GlobalTable").values():
            assert table["Properties"]["Replicas"][0]["DeletionProtectionEnabled"] is protected
            assert table["DeletionPolicy"] == ("RetainExceptOnCreate" if protected else "Delete")


def test_the_tasks_table_expires_records_by_ttl(dev):
    tasks = dev.props(dev.stack.tables.tasks)
    assert tasks["TimeToLiveSpecification"] == {"AttributeName": TaskTable.TTL_ATTRIBUTE, "Enabled": True}


def test_the_tables_have_the_indexes_the_code_queries(dev):
    tables = dev.stack.tables
    tasks, orders, customers = (dev.props(table) for table in (tables.tasks, tables.orders, tables.customers))
    assert [index["IndexName"] for index in tasks["GlobalSecondaryIndexes"]] == [TaskTable.USER_INDEX]
    assert [index["IndexName"] for index in orders["GlobalSecondaryIndexes"]] == [OrdersTable.DAY_INDEX]
    assert [index["IndexName"] for index in customers["GlobalSecondaryIndexes"]] == [CustomersTable.DAY_INDEX]
    # The readers return every attribute of an item from the index alone.
    for table in (tasks, orders, customers):
        assert [index["Projection"] for index in table["GlobalSecondaryIndexes"]] == [{"ProjectionType": "ALL"}]


# --- SQS --------------------------------------------------------------------------------------


def test_queues_are_encrypted_and_ssl_only(dev):
    queues = of_type(dev, "AWS::SQS::Queue")
    # and the push and audit mappings' on-failure queues, and the schedules' dead-letter queue
    assert len(queues) == 2 * len(LANES) + 3
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    policies = of_type(dev, "AWS::SQS::QueuePolicy")
    protected = {json.dumps(queue_ref) for policy in policies.values() for queue_ref in policy["Properties"]["Queues"]}
    assert protected == {
        *(json.dumps(dev.ref(queue)) for lane in dev.stack.queues.lanes for queue in (lane.queue, lane.dead_letters)),
        json.dumps(dev.ref(dev.stack.push.failed_batches)),
        json.dumps(dev.ref(dev.stack.audit.failed_batches)),
        json.dumps(dev.ref(dev.stack.scheduling.dead_letters)),
    }
    for policy in policies.values():
        assert (
            Match.array_with([ssl_only_statement("sqs:*")])
            .test(policy["Properties"]["PolicyDocument"]["Statement"])
            .is_success
        )


def test_each_lanes_queue_sends_messages_that_keep_failing_to_its_own_dlq(dev):
    for lane in dev.stack.queues.lanes:
        queue = dev.props(lane.queue)
        assert queue["RedrivePolicy"]["deadLetterTargetArn"] == dev.arn(lane.dead_letters)
        assert "RedrivePolicy" not in dev.props(lane.dead_letters)


# --- S3 ---------------------------------------------------------------------------------------


def test_buckets_are_private_encrypted_and_ssl_only(dev):
    buckets = of_type(dev, "AWS::S3::Bucket")
    assert len(buckets) == 2
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
            "SSEAlgorithm": "AES256"
        }
    for policy in of_type(dev, "AWS::S3::BucketPolicy").values():
        assert (
            Match.array_with([ssl_only_statement("s3:*")])
            .test(policy["Properties"]["PolicyDocument"]["Statement"])
            .is_success
        )


def test_results_expire_after_the_retention_and_incomplete_uploads_are_aborted(dev):
    rules = {rule["Id"]: rule for rule in dev.props(dev.stack.storage.bucket)["LifecycleConfiguration"]["Rules"]}
    assert rules["expire-results"] == {
        "Id": "expire-results",
        "Prefix": f"{Results.KEY_PREFIX}/",
        "ExpirationInDays": dev.settings.results_expiry_days,
        "Status": "Enabled",
    }
    assert rules["abort-incomplete-uploads"]["AbortIncompleteMultipartUpload"] == {
        "DaysAfterInitiation": Results.ABORT_INCOMPLETE_UPLOAD_DAYS
    }


def test_downloads_are_recorded_in_the_access_log_bucket(dev):
    logging = dev.props(dev.stack.storage.bucket)["LoggingConfiguration"]
    assert logging["DestinationBucketName"] == dev.ref(dev.stack.storage.access_logs)


def test_the_bucket_allows_browser_downloads_from_the_cors_origins_only(dev, prod):
    assert "CorsConfiguration" not in dev.props(dev.stack.storage.bucket)
    (rule,) = prod.props(prod.stack.storage.bucket)["CorsConfiguration"]["CorsRules"]
    assert rule["AllowedOrigins"] == list(prod.settings.cors_allowed_origins)
    assert rule["AllowedMethods"] == ["GET"]


def test_buckets_are_retained_in_prod(dev, prod):
    for synth, policy in ((dev, "Delete"), (prod, "RetainExceptOnCreate")):
        for bucket in of_type(synth, "AWS::S3::Bucket").values():
            assert bucket["DeletionPolicy"] == policy


# --- HTTP API ---------------------------------------------------------------------------------


def routes_by_key(synth):
    """The HTTP API's routes (the WebSocket API's: test_infra_push.py)."""
    return {
        route["Properties"]["RouteKey"]: route["Properties"]
        for route in of_type(synth, "AWS::ApiGatewayV2::Route").values()
        if route["Properties"]["ApiId"] == synth.ref(synth.stack.api.http_api)
    }


def test_every_v1_route_needs_a_jwt_and_only_the_docs_and_preflights_are_public(dev, prod):
    protected = {f"{method.value} {path}" for path, methods in PROTECTED_ROUTES for method in methods}
    for synth in (dev, prod):
        # With CORS on (prod), preflights reach the function without a token.
        preflight = {f"OPTIONS {PREFLIGHT_PATH}"} if synth.settings.cors_allowed_origins else set()
        public = {f"GET {path}" for path in PUBLIC_PATHS} | preflight
        routes = routes_by_key(synth)
        assert set(routes) == protected | public | {"$default"}
        for key, route in routes.items():
            if key in public:
                assert route["AuthorizationType"] == "NONE"
            else:
                assert key == "$default" or key.split(" ")[1].startswith(f"{API_VERSION_PREFIX}/")
                assert route["AuthorizationType"] == "JWT"
                assert "AuthorizerId" in route


def test_with_cors_a_preflight_route_without_authorizer_outranks_the_default_route(dev, prod):
    assert f"OPTIONS {PREFLIGHT_PATH}" not in routes_by_key(dev)
    routes = routes_by_key(prod)
    preflight = routes[f"OPTIONS {PREFLIGHT_PATH}"]
    assert preflight["AuthorizationType"] == "NONE" and "AuthorizerId" not in preflight
    assert preflight["Target"] == routes["$default"]["Target"]


def test_the_function_answers_a_preflight_without_a_token():
    from functions.submit.handler import lambda_handler

    for path in (f"{API_VERSION_PREFIX}/exports", f"{API_VERSION_PREFIX}/exports/exp_1/cancel"):
        headers = {"origin": "https://app.example.com", "access-control-request-method": "POST"}
        preflight = http_event("OPTIONS", path, user=None, headers=headers)
        assert lambda_handler(preflight, FakeContext())["statusCode"] == 204


def test_other_methods_and_unknown_paths_reach_the_function_behind_the_jwt(dev):
    """Without a ``$default`` route API Gateway itself answers ``404 {"message": "Not Found"}``
    to ``DELETE /v1/exports``, where the function answers 405 with ``Allow``."""
    routes = routes_by_key(dev)
    assert routes["$default"]["Target"] == routes[f"POST {API_VERSION_PREFIX}/exports"]["Target"]
    assert routes["$default"]["AuthorizerId"] == routes[f"POST {API_VERSION_PREFIX}/exports"]["AuthorizerId"]


def test_without_an_issuer_in_context_a_cognito_user_pool_issues_the_tokens(dev):
    api = dev.stack.api
    assert api.user_pool is not None
    assert api.user_pool_client is not None
    (authorizer,) = of_type(dev, "AWS::ApiGatewayV2::Authorizer").values()
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "JWT"
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    assert props["JwtConfiguration"]["Audience"] == [dev.ref(api.user_pool_client)]
    issuer = json.dumps(props["JwtConfiguration"]["Issuer"])
    assert "cognito-idp" in issuer
    assert dev.logical_id(api.user_pool) in issuer
    pool = dev.props(api.user_pool)
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    client = dev.props(api.user_pool_client)
    assert client.get("GenerateSecret", False) is False


def test_with_an_issuer_in_context_no_user_pool_is_created(prod):
    prod.template.resource_count_is("AWS::Cognito::UserPool", 0)
    (authorizer,) = of_type(prod, "AWS::ApiGatewayV2::Authorizer").values()
    assert authorizer["Properties"]["AuthorizerType"] == "JWT"
    assert authorizer["Properties"]["JwtConfiguration"] == {
        "Issuer": prod.settings.jwt.issuer,
        "Audience": list(prod.settings.jwt.audience),
    }


def test_the_default_stage_throttles_and_writes_json_access_logs(dev):
    props = dev.props(dev.stack.api.stage)
    assert props["StageName"] == "$default"
    assert props["AutoDeploy"] is True
    assert props["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": Capacity.API_THROTTLE_RATE_PER_SEC,
        "ThrottlingBurstLimit": Capacity.API_THROTTLE_BURST,
    }
    assert props["AccessLogSettings"]["DestinationArn"] == dev.arn(dev.stack.api.access_logs)
    log_format = json.loads(props["AccessLogSettings"]["Format"])
    assert log_format["requestId"] == "$context.requestId"
    assert log_format["status"] == "$context.status"
    assert dev.props(dev.stack.api.access_logs)["RetentionInDays"] == dev.settings.log_retention_days


def test_cors_comes_from_context(dev, prod):
    assert "CorsConfiguration" not in dev.props(dev.stack.api.http_api)
    cors = prod.props(prod.stack.api.http_api)["CorsConfiguration"]
    assert cors["AllowOrigins"] == list(prod.settings.cors_allowed_origins)
    assert set(cors["AllowHeaders"]) == set(Cors.ALLOW_HEADERS)
    assert set(cors["ExposeHeaders"]) == set(Cors.EXPOSE_HEADERS)
    assert cors["MaxAge"] == Cors.MAX_AGE_SEC


# The request headers the README documents, as a browser sends them, with the header each
# preflight then asks for (Access-Control-Request-Headers; Content-Type because the body is JSON).
DOCUMENTED_REQUEST_HEADERS = ("Authorization", "Content-Type", "Idempotency-Key")


@pytest.mark.parametrize("header", DOCUMENTED_REQUEST_HEADERS)
def test_the_preflight_of_every_documented_request_header_is_allowed(prod, header):
    """API Gateway answers a preflight itself from the CORS configuration: a requested header
    missing from AllowHeaders fails it, and the browser never sends the call."""
    readme = (REPO_ROOT / "README.md").read_text()
    cors = prod.props(prod.stack.api.http_api)["CorsConfiguration"]

    assert f"`{header}" in readme or f"{header}:" in readme
    assert header.lower() in {allowed.lower() for allowed in cors["AllowHeaders"]}
    assert "POST" in cors["AllowMethods"]
    # ... and the preflight route needs no token (the browser sends none).
    (preflight,) = [route for key, route in routes_by_key(prod).items() if key.startswith("OPTIONS ")]
    assert preflight["AuthorizationType"] == "NONE"


def test_every_header_the_api_reads_is_in_the_cors_rules():
    assert idempotency.HEADER in Cors.ALLOW_HEADERS
    assert all(header == header.lower() for header in (*Cors.ALLOW_HEADERS, *Cors.EXPOSE_HEADERS))


# --- Monitoring -------------------------------------------------------------------------------


# The alarm id prefix of each function: api, worker, lifecycle, callback.
FUNCTION_ALARM_IDS = ("Api", "Worker", "LifecycleFunction", "Callback", "Stream", "Push", "AuditFunction")


def alarms_by_name(synth):
    prefix = f"{synth.stack.stack_name}-"
    return {
        alarm["Properties"]["AlarmName"].removeprefix(prefix): alarm["Properties"]
        for alarm in of_type(synth, "AWS::CloudWatch::Alarm").values()
    }


# The alarms that file a ticket (the tickets topic) instead of paging: customer-caused failures,
# a single worker error (the queue retries it), the push channel, the demo tables, refused
# submits, a worker run near its timeout, mail reputation (stages that mail).
TICKET_ALARMS = {
    "CallbackFailed",
    "FileDeliveryFailed",
    "WorkerErrors",
    "WorkerNearTimeout",
    "StreamErrors",
    "StreamThrottles",
    "PushErrors",
    "PushThrottles",
    "PushFailed",
    "WebSocketErrors",
    "PushIteratorAge",
    "ConnectionsTableThrottles",
    "OrdersTableThrottles",
    "CustomersTableThrottles",
    "ExportsRejected",
    "CapacityRefused",
    "MailBounceRate",
    "MailComplaintRate",
}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_alarm_pages_or_files_a_ticket_and_says_which(assembly, stage):
    synth = getattr(assembly, stage)
    monitoring = synth.stack.monitoring
    alarms = alarms_by_name(synth)

    for name, alarm in alarms.items():
        ticket = name in TICKET_ALARMS
        assert alarm["AlarmActions"] == [synth.ref(monitoring.tickets_topic if ticket else monitoring.paging_topic)]
        assert alarm["AlarmDescription"].startswith("[ticket] " if ticket else "[page] "), name
    # Mail reputation only where the stage mails.
    assert ({"MailBounceRate", "MailComplaintRate"} <= set(alarms)) == bool(synth.settings.mail.sender)


def test_every_alarm_notifies_the_alarm_topic(dev):
    alarms = alarms_by_name(dev)
    assert set(alarms) == {
        *(f"DeadLetters{lane_id(lane)}" for lane in LANES),
        *(f"OldestDeadLetter{lane_id(lane)}" for lane in LANES),
        *(f"OldestMessage{lane_id(lane)}" for lane in LANES),
        *(f"{function}{kind}" for function in FUNCTION_ALARM_IDS for kind in ("Errors", "Throttles")),
        *(f"{table}TableThrottles" for table in ("Tasks", "Connections", "Orders", "Customers", "Schedules", "Audit")),
        "AuditFailed",
        # scheduled exports (test_infra_schedules.py)
        "ScheduleDeadLetters",
        "SchedulerTargetErrors",
        "ScheduleFiringsLost",
        "ScheduleErrors",
        "PushFailed",
        "Api5xx",
        "ExportFailed",
        "CallbackFailed",
        "FileDeliveryFailed",
        "FileDeliveryFault",
        "EnqueueFailed",
        "LifecycleFailed",
        "LifecycleTimedOut",
        "FanOutFailed",
        "FanOutTimedOut",
        "LifecycleThrottled",
        "FanOutThrottled",
        # a delivery retried on request (docs/destinations.md)
        "RedeliveryFailed",
        "RedeliveryTimedOut",
        "RedeliveryThrottled",
        "WebSocketErrors",
        "PushIteratorAge",
        "ExportsTimedOut",
        "WorkerNearTimeout",
        "AccountConcurrency",
        "ExportsRejected",
        "CapacityRefused",
    }
    for alarm in alarms.values():
        # No OK notifications: a first deploy would send one per alarm leaving INSUFFICIENT_DATA.
        assert "OKActions" not in alarm
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        # No data is no fault; a dead letter (or a failed push or audit batch) keeps its alarm while SQS
        # publishes nothing.
        name = alarm["AlarmName"].removeprefix(f"{dev.stack.stack_name}-")
        dead_letters = name.startswith(("DeadLetters", "OldestDeadLetter")) or name in (
            "PushFailed",
            "AuditFailed",
            "ScheduleDeadLetters",
        )
        assert alarm["TreatMissingData"] == ("ignore" if dead_letters else "notBreaching")


def test_the_new_operator_alarms_watch_what_they_say(dev, prod):
    """Account concurrency against its quota, the worker's longest run against its timeout, the
    oldest dead letter against the DLQ's retention, the 429 share of submits, SES reputation."""
    for synth in (dev, prod):
        alarms, thresholds = alarms_by_name(synth), synth.settings.alarms
        concurrency = alarms["AccountConcurrency"]
        (expression,) = [query["Expression"] for query in concurrency["Metrics"] if "Expression" in query]
        assert expression == "100 * usage / SERVICE_QUOTA(usage)"
        (usage,) = [query["MetricStat"]["Metric"] for query in concurrency["Metrics"] if "MetricStat" in query]
        assert (usage["Namespace"], usage["MetricName"]) == ("AWS/Usage", "ResourceCount")
        assert {d["Name"]: d["Value"] for d in usage["Dimensions"]} == LAMBDA_CONCURRENCY_USAGE
        assert concurrency["Threshold"] == thresholds.account_concurrency_percent

        duration = alarms["WorkerNearTimeout"]
        assert (duration["MetricName"], duration["Statistic"]) == ("Duration", "Maximum")
        assert duration["Dimensions"] == [
            {"Name": "FunctionName", "Value": synth.ref(synth.stack.functions.worker.function)}
        ]
        timeout_ms = synth.props(synth.stack.functions.worker.function)["Timeout"] * 1000
        # Past the exports' own stop points (30 s, and 60 s for a CSV hand-over), before the kill.
        assert timeout_ms - 30_000 < duration["Threshold"] < timeout_ms

        for lane in synth.stack.queues.lanes:
            oldest = alarms[f"OldestDeadLetter{lane_id(lane.lane)}"]
            assert oldest["MetricName"] == "ApproximateAgeOfOldestMessage"
            assert oldest["Dimensions"] == [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [synth.logical_id(lane.dead_letters), "QueueName"]}}
            ]
            retention = synth.props(lane.dead_letters)["MessageRetentionPeriod"]
            assert oldest["Threshold"] == thresholds.oldest_dead_letter_age_sec < retention

        rejected = alarms["ExportsRejected"]
        stats = {q["Id"]: q["MetricStat"]["Metric"]["MetricName"] for q in rejected["Metrics"] if "MetricStat" in q}
        assert stats == {"accepted": Metric.SUBMITTED, "refused": Metric.REJECTED}
        (expression,) = [query["Expression"] for query in rejected["Metrics"] if "Expression" in query]
        assert f">= {thresholds.rejected_min_submits}" in expression
        assert rejected["Threshold"] == thresholds.rejected_percent

    prod_alarms = alarms_by_name(prod)
    for name, metric, threshold in (
        ("MailBounceRate", "Reputation.BounceRate", prod.settings.alarms.mail_bounce_rate),
        ("MailComplaintRate", "Reputation.ComplaintRate", prod.settings.alarms.mail_complaint_rate),
    ):
        alarm = prod_alarms[name]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Threshold"]) == ("AWS/SES", metric, threshold)
    assert "MailBounceRate" not in alarms_by_name(dev)  # dev sends no mail


def test_each_lanes_dlq_alarm_fires_on_the_first_dead_letter(dev):
    alarms = alarms_by_name(dev)
    for lane in dev.stack.queues.lanes:
        alarm = alarms[f"DeadLetters{lane_id(lane.lane)}"]
        assert alarm["Namespace"] == "AWS/SQS"
        assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarm["Dimensions"] == [
            {"Name": "QueueName", "Value": {"Fn::GetAtt": [dev.logical_id(lane.dead_letters), "QueueName"]}}
        ]
        assert (alarm["Statistic"], alarm["Threshold"]) == ("Maximum", 1)


def test_queue_age_worker_and_api_alarms_use_the_stage_thresholds(dev, prod):
    for synth in (dev, prod):
        alarms, thresholds = alarms_by_name(synth), synth.settings.alarms
        for lane in synth.stack.queues.lanes:
            oldest = alarms[f"OldestMessage{lane_id(lane.lane)}"]
            assert oldest["MetricName"] == "ApproximateAgeOfOldestMessage"
            assert oldest["Dimensions"] == [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [synth.logical_id(lane.queue), "QueueName"]}}
            ]
            assert oldest["Threshold"] == thresholds.oldest_message_age_sec
        functions = synth.stack.functions
        for alarm_id, service_function in zip(
            FUNCTION_ALARM_IDS,
            (
                functions.api,
                functions.worker,
                functions.lifecycle,
                functions.callback,
                functions.stream,
                functions.push,
                functions.audit,
            ),
            strict=True,
        ):
            for kind, metric in (("Errors", "Errors"), ("Throttles", "Throttles")):
                alarm = alarms[f"{alarm_id}{kind}"]
                # The callback function's errors less the retries it asks for (the test below).
                if "Metrics" in alarm:
                    queries = {query["Id"]: query for query in alarm["Metrics"]}
                    stat = queries["errors"]["MetricStat"]
                    alarm = {**alarm, **stat["Metric"], "Statistic": stat["Stat"]}
                assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Lambda", metric)
                assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": synth.ref(service_function.function)}]
                assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)
                # The lifecycle workflow's functions are throttled by design in a burst (and
                # retried): only throttles in every period of a row page; any other fault at once.
                # (Only where the stage reserves their concurrency: prod here.)
                sustained = (
                    kind == "Throttles"
                    and alarm_id in ("LifecycleFunction", "Callback")
                    and synth.settings.reserved_concurrency
                )
                periods = SUSTAINED_THROTTLE_PERIODS if sustained else 1
                assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (periods, periods)
        assert (alarms["Api5xx"]["Namespace"], alarms["Api5xx"]["MetricName"]) == ("AWS/ApiGateway", "5xx")
        assert alarms["Api5xx"]["Threshold"] == thresholds.api_5xx_per_5_min


@pytest.mark.parametrize(
    ("alarm_id", "metric"),
    [
        ("CallbackFailed", Metric.CALLBACK_FAILED),
        ("EnqueueFailed", Metric.ENQUEUE_FAILED),
        ("FileDeliveryFailed", Metric.FILE_DELIVERY_FAILED),
        ("FileDeliveryFault", Metric.FILE_DELIVERY_FAULT),
    ],
)
def test_failed_callbacks_and_enqueues_alarm_on_the_stages_business_metric(dev, prod, alarm_id, metric):
    for synth in (dev, prod):
        alarm = alarms_by_name(synth)[alarm_id]
        assert alarm["Namespace"] == metrics_namespace(synth.stack.stack_name)
        assert alarm["MetricName"] == metric
        # Powertools adds the service dimension to every metric it publishes.
        assert alarm["Dimensions"] == [{"Name": "service", "Value": SERVICE_NAME}]
        assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)
    # Two stacks in one account never share the numbers.
    assert alarms_by_name(dev)[alarm_id]["Namespace"] != alarms_by_name(prod)[alarm_id]["Namespace"]


def test_failed_exports_alarm_on_every_error_code_and_source_but_the_user_caused_ones(dev, prod):
    for synth in (dev, prod):
        alarm = alarms_by_name(synth)["ExportFailed"]
        (query,) = alarm["Metrics"]
        namespace = metrics_namespace(synth.stack.stack_name)
        # One sum over every series ExportFailed is published in (service, error_code, source),
        # but a file too large for its format or one run is what was asked, not a fault.
        assert query["Expression"] == (
            f'SELECT SUM({Metric.FAILED}) FROM SCHEMA("{namespace}", {ERROR_CODE_DIMENSION}, service, '
            f"{SOURCE_DIMENSION}) WHERE "
            + " AND ".join(f"{ERROR_CODE_DIMENSION} != '{code}'" for code in USER_CAUSED_FAILURES)
        )
        assert {"XLSX_TOO_LARGE", "EXPORT_TOO_LONG"} <= set(USER_CAUSED_FAILURES)
        assert query["Period"] == 300 and alarm["Threshold"] == 1


def test_the_new_alarms_watch_the_push_channel_the_state_machines_and_timed_out_exports(dev, prod):
    for synth in (dev, prod):
        alarms, thresholds = alarms_by_name(synth), synth.settings.alarms
        websocket = alarms["WebSocketErrors"]
        assert (websocket["Namespace"], websocket["MetricName"], websocket["Statistic"]) == (
            "AWS/ApiGateway",
            "ExecutionError",
            "Sum",
        )
        assert {dimension["Name"] for dimension in websocket["Dimensions"]} == {"ApiId", "Stage"}
        assert websocket["Threshold"] == thresholds.websocket_errors_per_5_min
        age = alarms["PushIteratorAge"]
        assert (age["Namespace"], age["MetricName"], age["Statistic"]) == ("AWS/Lambda", "IteratorAge", "Maximum")
        assert age["Dimensions"] == [{"Name": "FunctionName", "Value": synth.ref(synth.stack.functions.push.function)}]
        # Before the mapping gives records up at their maximum age.
        assert 0 < age["Threshold"] < PUSH_BATCH_RETRY.max_age_sec * 1000
        for machine_id, machine in (("Lifecycle", synth.stack.lifecycle), ("FanOut", synth.stack.fan_out)):
            throttled = alarms[f"{machine_id}Throttled"]
            assert (throttled["Namespace"], throttled["MetricName"]) == ("AWS/States", "ExecutionThrottled")
            assert throttled["Dimensions"] == [{"Name": "StateMachineArn", "Value": synth.ref(machine)}]
            assert throttled["Threshold"] == 1
        timed_out = alarms["ExportsTimedOut"]
        assert (timed_out["MetricName"], timed_out["Statistic"]) == (Metric.TIMED_OUT, "Sum")
        assert timed_out["Threshold"] == thresholds.timed_out_tasks_per_5_min > 1


def test_the_alarm_topics_are_ssl_only_and_mail_the_context_address(dev, prod):
    dev.template.resource_count_is("AWS::SNS::Subscription", 0)
    # Without a ticket destination of its own, the on-call address gets the tickets too.
    monitoring = prod.stack.monitoring
    for topic in (monitoring.paging_topic, monitoring.tickets_topic):
        prod.template.has_resource_properties(
            "AWS::SNS::Subscription",
            {"Protocol": "email", "Endpoint": prod.settings.alarm_email, "TopicArn": prod.ref(topic)},
        )
    policies = of_type(dev, "AWS::SNS::TopicPolicy").values()
    assert len(policies) == 2
    for policy in policies:
        assert (
            Match.array_with([ssl_only_statement("sns:Publish", principal="*")])
            .test(policy["Properties"]["PolicyDocument"]["Statement"])
            .is_success
        )


def test_the_dashboard_shows_the_business_metrics(dev):
    (dashboard,) = of_type(dev, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    shown = (
        Metric.SUBMITTED,
        Metric.COMPLETED,
        Metric.TIMED_OUT,
        Metric.CANCELLED,
        Metric.CALLBACK_DELIVERED,
        Metric.CALLBACK_FAILED,
        Metric.ROWS_EXPORTED,
        Metric.DURATION_MS,
        Metric.DEDUPLICATED,
        Metric.DEFERRED,
        Metric.SOURCE_DEFERRED,
        Metric.REJECTED,
        Metric.RETRIED,
        Metric.REDELIVERED,
        Metric.DUPLICATE_DELIVERY,
    )
    namespace = metrics_namespace(dev.stack.stack_name)
    for name in shown:
        assert f'\\"{namespace}\\",\\"{name}\\",\\"service\\",\\"{SERVICE_NAME}\\"' in body
    assert f'\\"{METRICS_NAMESPACE}\\",' not in body
    # Failed exports, summed and by error code and source, through Metrics Insights.
    assert f"GROUP BY {ERROR_CODE_DIMENSION}, {SOURCE_DIMENSION}" in body


# --- Outputs ----------------------------------------------------------------------------------


def test_outputs_name_what_a_client_and_an_operator_need(dev, prod):
    common = {
        "ApiUrl",
        "ResultsBucketName",
        "AccessLogsBucketName",
        "TasksTableName",
        "SchedulesTableName",
        "AuditTableName",
        "ScheduleGroupName",
        "ScheduleDeadLetterQueueUrl",
        "WebSocketUrl",
        "OrdersTableName",
        "CustomersTableName",
        *(f"TaskQueueUrl{lane_id(lane)}" for lane in LANES),
        *(f"DeadLetterQueueUrl{lane_id(lane)}" for lane in LANES),
        "AlarmTopicArn",
        "TicketTopicArn",
        "DashboardName",
        "LifecycleStateMachineArn",
        "FanOutStateMachineArn",
        "RedeliveryStateMachineArn",
        "EventBusName",
        "WebhookSecretArn",
    }
    assert set(dev.template.to_json()["Outputs"]) == common | {"UserPoolId", "UserPoolClientId"}
    assert set(prod.template.to_json()["Outputs"]) == common
    for lane in dev.stack.queues.lanes:
        dev.template.has_output(f"TaskQueueUrl{lane_id(lane.lane)}", {"Value": dev.ref(lane.queue)})
        dev.template.has_output(f"DeadLetterQueueUrl{lane_id(lane.lane)}", {"Value": dev.ref(lane.dead_letters)})
    dev.template.has_output("ResultsBucketName", {"Value": dev.ref(dev.stack.storage.bucket)})
    dev.template.has_output("AccessLogsBucketName", {"Value": dev.ref(dev.stack.storage.access_logs)})
    dev.template.has_output("TasksTableName", {"Value": dev.ref(dev.stack.tables.tasks)})
    dev.template.has_output("SchedulesTableName", {"Value": dev.ref(dev.stack.tables.schedules)})
    dev.template.has_output("AuditTableName", {"Value": dev.ref(dev.stack.tables.audit)})
    dev.template.has_output("ScheduleGroupName", {"Value": dev.ref(dev.stack.scheduling.group)})
    dev.template.has_output("ScheduleDeadLetterQueueUrl", {"Value": dev.ref(dev.stack.scheduling.dead_letters)})
    dev.template.has_output("OrdersTableName", {"Value": dev.ref(dev.stack.tables.orders)})
    dev.template.has_output("CustomersTableName", {"Value": dev.ref(dev.stack.tables.customers)})
    dev.template.has_output("LifecycleStateMachineArn", {"Value": dev.ref(dev.stack.lifecycle)})
    dev.template.has_output("FanOutStateMachineArn", {"Value": dev.ref(dev.stack.fan_out)})
    dev.template.has_output("WebhookSecretArn", {"Value": dev.ref(dev.stack.webhook_secret.secret)})
    api_url = json.dumps(dev.template.to_json()["Outputs"]["ApiUrl"]["Value"])
    assert dev.logical_id(dev.stack.api.http_api) in api_url


def test_the_deploy_guide_names_every_output(dev, prod):
    guide = (REPO_ROOT / "docs" / "deploy.md").read_text()
    outputs = set(dev.template.to_json()["Outputs"]) | set(prod.template.to_json()["Outputs"])

    assert [name for name in sorted(outputs) if f"`{name}`" not in guide] == []
    (lanes_row,) = [line for line in guide.splitlines() if line.startswith("| `TaskQueueUrl")]
    assert ", ".join(f"{lane.highest}-{lane.lowest}" for lane in LANES) in lanes_row


# --- Secrets Manager --------------------------------------------------------------------------


def test_the_webhook_secret_is_generated_by_cloudformation_as_a_base64_key(dev):
    (secret,) = of_type(dev, "AWS::SecretsManager::Secret").values()
    generate = secret["Properties"]["GenerateSecretString"]

    # Letters and digits only, no spaces: every character is in the base64 alphabet, and a multiple
    # of 4 characters decodes without padding.
    assert generate == {"PasswordLength": 32, "ExcludePunctuation": True, "IncludeSpace": False}
    assert "SecretString" not in secret["Properties"]


def test_a_value_of_that_shape_signs_callbacks_once_prefixed(dev):
    import secrets
    import string

    from exports.finishing.webhooks.signing import SECRET_PREFIX, sign

    (secret,) = of_type(dev, "AWS::SecretsManager::Secret").values()
    length = secret["Properties"]["GenerateSecretString"]["PasswordLength"]
    value = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(length))

    assert sign(SECRET_PREFIX + value, "msg_1", 1_700_000_000, b"{}").startswith("v1,")


def test_the_webhook_secret_is_kept_in_prod_only(dev, prod):
    for synth, policy, replaced in ((dev, "Delete", "Delete"), (prod, "RetainExceptOnCreate", "Retain")):
        (secret,) = of_type(synth, "AWS::SecretsManager::Secret").values()
        assert (secret["DeletionPolicy"], secret["UpdateReplacePolicy"]) == (policy, replaced)


# --- Lifecycle events -----------------------------------------------------------------------


def test_the_functions_that_publish_lifecycle_events_name_the_stacks_bus_and_may_put_only_there(dev, prod):
    for synth in (dev, prod):
        functions, bus = synth.stack.functions, synth.stack.events.bus
        synth.template.resource_count_is("AWS::Events::EventBus", 1)
        synth.template.has_output("EventBusName", {"Value": synth.ref(bus)})
        publishers = (functions.api, functions.worker, functions.callback, functions.schedule)
        for service_function in functions.all:
            variables = synth.props(service_function.function)["Environment"]["Variables"]
            puts = {
                resource for action, resource in allowed_pairs(synth, service_function) if action.startswith("events:")
            }
            if service_function in publishers:
                assert variables[Env.EVENT_BUS] == synth.ref(bus)
                assert puts == {json.dumps(synth.arn(bus), sort_keys=True)}
            else:
                assert Env.EVENT_BUS not in variables and puts == set()


def test_a_delivery_failed_on_our_side_pages_and_one_on_the_customers_side_is_a_ticket(dev):
    alarms = alarms_by_name(dev)
    fault, failed = alarms["FileDeliveryFault"], alarms["FileDeliveryFailed"]
    assert fault["AlarmDescription"].startswith("[page]") and failed["AlarmDescription"].startswith("[ticket]")
    assert "#file-delivery-fault" in fault["AlarmDescription"]
    assert "FileDeliveryFault" not in TICKET_ALARMS


def test_the_callback_functions_error_alarm_pages_on_its_faults_not_on_the_retries_it_asks_for(dev):
    # A receiver or a customer's server that refuses makes the function raise for the workflow
    # to retry; those errors are counted (CallbackRetryRaised) and subtracted.
    alarm = alarms_by_name(dev)["CallbackErrors"]
    queries = {query["Id"]: query for query in alarm["Metrics"]}

    assert alarm["AlarmDescription"].startswith("[page]")
    (expression,) = [query for query in queries.values() if "Expression" in query]
    assert expression["Expression"] == "errors - FILL(retries, 0)" and expression.get("ReturnData", True)
    assert queries["errors"]["MetricStat"]["Metric"]["MetricName"] == "Errors"
    assert queries["retries"]["MetricStat"]["Metric"]["MetricName"] == Metric.CALLBACK_RETRY_RAISED
    assert "Metrics" not in alarms_by_name(dev)["LifecycleFunctionErrors"]
