"""Scheduled exports on AWS, asserted on the synthesized templates: the schedules table, the
Scheduler group, its role and dead-letter queue, the schedule function, the IAM scopes, the mail
grant, the alarms, the context flags and the cost section."""

from __future__ import annotations

import json

import pytest

from exports.core.config.env import Env
from exports.core.config.queues import Queue
from exports.core.config.retry import SCHEDULE_FUNCTION_RETRY, SCHEDULE_TARGET_RETRY
from exports.core.config.schedules import Schedules
from exports.core.config.settings import ApiSettings, CallbackSettings
from exports.core.config.tables import SchedulesTable
from exports.schedules.eventbridge_scheduler import DEFERRED_FIRING_PREFIX, MOVED_FIRING_SUFFIX
from infra.schedules import (
    DEFERRED_FIRING_ACTIONS,
    MAIL_ACTIONS,
    MANAGE_ACTIONS,
    MOVED_FIRING_ACTIONS,
    PAUSE_ACTIONS,
    ScheduleRunbooks,
    schedule_function_name,
    schedule_group_name,
)
from infra.settings import Context, Mail, ScheduleLimits, StageSettings
from infra.sizing import Sizing
from scripts.cost_estimate import (
    SCHEDULE_MIXES,
    SCHEDULES,
    Appends,
    AuditWork,
    Firing,
    Price,
    Workload,
    render,
    schedule_lines,
    stack_facts,
)
from tests.infra.test_infra_resources import alarms_by_name, group_schedules_arn, join, of_type

pytestmark = pytest.mark.infra

SCHEDULER = "scheduler.amazonaws.com"


def key_schema(keys):
    return {key["KeyType"]: key["AttributeName"] for key in keys}


def statements_of(synth, role):
    """Every statement of the identity policies attached to ``role``."""
    return [
        statement
        for policy in of_type(synth, "AWS::IAM::Policy").values()
        if synth.ref(role) in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def as_list(value):
    return value if isinstance(value, list) else [value]


def granted(synth, role, prefix):
    """The statements of ``role`` with an action starting with ``prefix`` (``scheduler:``)."""
    return [s for s in statements_of(synth, role) if any(a.startswith(prefix) for a in as_list(s["Action"]))]


# --- The schedules table ----------------------------------------------------------------------


def test_the_schedules_table_keys_index_and_ttl_equal_the_config(dev, prod):
    for synth in (dev, prod):
        table = synth.props(synth.stack.tables.schedules)
        assert key_schema(table["KeySchema"]) == {
            "HASH": SchedulesTable.PARTITION_KEY,
            "RANGE": SchedulesTable.SORT_KEY,
        }
        (by_user,) = table["GlobalSecondaryIndexes"]
        assert by_user["IndexName"] == SchedulesTable.USER_INDEX
        assert key_schema(by_user["KeySchema"]) == {
            "HASH": SchedulesTable.USER_INDEX_PARTITION_KEY,
            "RANGE": SchedulesTable.USER_INDEX_SORT_KEY,
        }
        assert by_user["Projection"] == {"ProjectionType": "ALL"}
        assert {a["AttributeType"] for a in table["AttributeDefinitions"]} == {"S"}
        assert table["TimeToLiveSpecification"] == {"AttributeName": SchedulesTable.TTL_ATTRIBUTE, "Enabled": True}
        # No consumer reads its changes.
        assert "StreamSpecification" not in table


def test_the_schedules_table_is_kept_and_recoverable_as_the_tasks_table(dev, prod):
    for synth in (dev, prod):
        schedules, tasks = (synth.resource(table) for table in (synth.stack.tables.schedules, synth.stack.tables.tasks))
        for key in ("DeletionPolicy", "UpdateReplacePolicy"):
            assert schedules[key] == tasks[key]
        (replica,) = schedules["Properties"]["Replicas"]
        assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert replica["DeletionProtectionEnabled"] is synth.settings.protect_data
        assert schedules["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert prod.resource(prod.stack.tables.schedules)["DeletionPolicy"] == "RetainExceptOnCreate"
    assert dev.resource(dev.stack.tables.schedules)["DeletionPolicy"] == "Delete"


# --- The group, Scheduler's role, the dead-letter queue ---------------------------------------


def test_each_stack_has_its_own_schedule_group_named_after_it(dev, prod):
    names = set()
    for synth in (dev, prod):
        (group,) = of_type(synth, "AWS::Scheduler::ScheduleGroup").values()
        name = group["Properties"]["Name"]
        assert name == schedule_group_name(synth.stack.stack_name) == f"{synth.stack.stack_name}-schedules"
        names.add(name)
    assert len(names) == 2


def test_a_stack_name_too_long_for_a_schedule_group_is_refused():
    assert schedule_group_name("s" * 54) == "s" * 54 + "-schedules"
    # What the group allows, Lambda allows for the schedule function's name.
    assert len(schedule_function_name("s" * 54)) <= 64
    with pytest.raises(ValueError, match="over Scheduler's 64 characters"):
        schedule_group_name("s" * 55)


def test_only_scheduler_for_this_accounts_group_may_assume_its_role(dev):
    role = dev.props(dev.stack.scheduling.role)

    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": SCHEDULER},
            "Condition": {
                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                "ArnLike": {"aws:SourceArn": dev.arn(dev.stack.scheduling.group)},
            },
        }
    ]
    assert "ManagedPolicyArns" not in role


def test_scheduler_may_invoke_the_schedule_function_and_dead_letter_only(dev, prod):
    for synth in (dev, prod):
        scheduling = synth.stack.scheduling
        statements = statements_of(synth, scheduling.role)
        assert sorted(statements, key=lambda s: s["Action"]) == [
            {
                "Action": "lambda:InvokeFunction",
                "Effect": "Allow",
                "Resource": synth.arn(synth.stack.functions.schedule.function),
            },
            {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": synth.arn(scheduling.dead_letters)},
        ]


def test_the_dead_letter_queue_is_encrypted_tls_only_and_keeps_as_long_as_the_lanes(dev):
    queue = dev.props(dev.stack.scheduling.dead_letters)

    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == Queue.DLQ_RETENTION_SEC
    (policy,) = [
        p
        for p in of_type(dev, "AWS::SQS::QueuePolicy").values()
        if dev.ref(dev.stack.scheduling.dead_letters) in p["Properties"]["Queues"]
    ]
    assert {
        "Action": "sqs:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": dev.arn(dev.stack.scheduling.dead_letters),
    } in policy["Properties"]["PolicyDocument"]["Statement"]


# --- The schedule function --------------------------------------------------------------------


def test_the_schedule_function_is_sized_by_the_config_and_capped(dev, prod):
    for synth in (dev, prod):
        function = synth.props(synth.stack.functions.schedule.function)
        assert function["Timeout"] == Schedules.FUNCTION_TIMEOUT_SEC
        assert function["MemorySize"] == Sizing.SCHEDULE_MEMORY_MB
        # Capped where the stage reserves concurrency (prod here; a fresh account's quota refuses it).
        assert function.get("ReservedConcurrentExecutions") == (
            Sizing.SCHEDULE_RESERVED_CONCURRENCY if synth.settings.reserved_concurrency else None
        )
        assert function["Handler"] == "handler.lambda_handler"
        # It builds the registry, as the API does: the declaration is in its package.
        packaged = {target for _, target in synth.stack.functions.schedule.package.extra_files}
        assert packaged == {target for _, target in synth.stack.functions.api.package.extra_files}


def test_the_schedule_functions_failures_are_retried_then_dead_lettered(dev):
    scheduling, schedule = dev.stack.scheduling, dev.stack.functions.schedule
    (config_id, config), *others = of_type(dev, "AWS::Lambda::EventInvokeConfig").items()

    assert others == []
    assert config["Properties"] == {
        "FunctionName": dev.ref(schedule.function),
        "Qualifier": "$LATEST",
        "MaximumRetryAttempts": SCHEDULE_FUNCTION_RETRY.retries,
        "MaximumEventAgeInSeconds": SCHEDULE_FUNCTION_RETRY.max_age_sec,
        "DestinationConfig": {"OnFailure": {"Destination": dev.arn(scheduling.dead_letters)}},
    }
    # Lambda keeps a firing as long as Scheduler keeps retrying its delivery, at most 2 retries.
    assert SCHEDULE_FUNCTION_RETRY.max_age_sec == SCHEDULE_TARGET_RETRY.max_age_sec
    assert 0 <= SCHEDULE_FUNCTION_RETRY.retries <= 2 and 60 <= SCHEDULE_FUNCTION_RETRY.max_age_sec <= 6 * 3600
    # Lambda checks the destination against the role when the config is created: its policy first.
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": dev.arn(scheduling.dead_letters)} in (
        statements_of(dev, schedule.role)
    )
    policy_id = next(
        logical_id
        for logical_id, policy in of_type(dev, "AWS::IAM::Policy").items()
        if dev.ref(schedule.role) in policy["Properties"]["Roles"]
    )
    assert policy_id in dev.template.to_json()["Resources"][config_id]["DependsOn"]


def test_the_schedule_function_submits_as_the_api_and_pauses_its_schedule_only(dev):
    stack = dev.stack
    api, schedule = stack.functions.api, stack.functions.schedule
    submit_prefixes = ("sqs:", "states:")

    def submit_grants(role):
        return [
            (action, json.dumps(s["Resource"], sort_keys=True))
            for s in statements_of(dev, role)
            for action in as_list(s["Action"])
            if action.startswith(submit_prefixes)
            and json.dumps(dev.arn(stack.scheduling.dead_letters)) not in json.dumps(s)
        ]

    # The API alone retries a delivery on request (its redelivery execution).
    api_submit = [grant for grant in submit_grants(api.role) if stack.workflows.redelivery_name not in grant[1]]
    assert len(api_submit) == len(submit_grants(api.role)) - 1
    assert sorted(submit_grants(schedule.role)) == sorted(api_submit)
    tasks = [s for s in statements_of(dev, schedule.role) if s["Resource"] == dev.arn(stack.tables.tasks)]
    assert [sorted(as_list(s["Action"])) for s in tasks] == [
        sorted(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"])
    ]
    pausing, moving, retrying = granted(dev, schedule.role, "scheduler:")
    assert sorted(as_list(pausing["Action"])) == sorted(PAUSE_ACTIONS)
    assert pausing["Resource"] == group_schedules_arn(dev)
    # Creating and deleting only the one-time companions of firings moved out of a DST gap.
    assert sorted(as_list(moving["Action"])) == sorted(MOVED_FIRING_ACTIONS)
    assert moving["Resource"] == group_schedules_arn(dev, MOVED_FIRING_SUFFIX)
    # Creating only the one-time retries of firings refused for capacity (docs/capacity.md).
    assert sorted(as_list(retrying["Action"])) == sorted(DEFERRED_FIRING_ACTIONS)
    assert retrying["Resource"] == group_schedules_arn(dev, prefix=DEFERRED_FIRING_PREFIX)


# --- Variables --------------------------------------------------------------------------------


def schedule_function_arn(synth):
    """The schedules' target as the functions know it: built from the function's fixed name."""
    name = schedule_function_name(synth.stack.stack_name)
    assert synth.props(synth.stack.functions.schedule.function)["FunctionName"] == name
    return join(
        "arn:",
        {"Ref": "AWS::Partition"},
        ":lambda:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        f":function:{name}",
    )


def test_the_stack_has_a_value_for_every_scheduling_variable(dev, prod):
    for synth in (dev, prod):
        stack = synth.stack
        limits = synth.settings.schedule_limits
        values = {name: stack.resolve(value) for name, value in stack.functions.environment.items()}
        assert {name: values[name] for name in values if "SCHEDUL" in name} == {
            Env.SCHEDULES_TABLE: synth.ref(stack.tables.schedules),
            Env.SCHEDULE_GROUP: synth.ref(stack.scheduling.group),
            Env.SCHEDULE_TARGET_ARN: schedule_function_arn(synth),
            Env.SCHEDULER_ROLE_ARN: synth.arn(stack.scheduling.role),
            Env.SCHEDULE_DLQ_ARN: synth.arn(stack.scheduling.dead_letters),
            Env.MAX_SCHEDULES_PER_USER: str(limits.max_per_user),
            Env.MIN_SCHEDULE_INTERVAL_MIN: str(limits.min_interval_min),
        }
    assert dev.settings.schedule_limits == ScheduleLimits(
        Schedules.MAX_PER_USER_DEFAULT, Schedules.MIN_INTERVAL_MIN_DEFAULT
    )
    assert prod.settings.schedule_limits == ScheduleLimits(max_per_user=7, min_interval_min=60)
    # Mail only where a sender is configured.
    mail_variables = (Env.MAIL_SENDER, Env.MAIL_ALLOWED_DOMAINS, Env.MAIL_ATTACHMENT_MAX_BYTES)
    assert not set(mail_variables) & set(dev.stack.functions.environment)
    assert {name: prod.stack.functions.environment[name] for name in mail_variables} == {
        Env.MAIL_SENDER: "reports@acme.example",
        Env.MAIL_ALLOWED_DOMAINS: "acme.example,finance.acme.example",
        Env.MAIL_ATTACHMENT_MAX_BYTES: "2000000",
    }


SCHEDULING_VARIABLES = {
    Env.SCHEDULES_TABLE,
    Env.SCHEDULE_GROUP,
    Env.SCHEDULE_TARGET_ARN,
    Env.SCHEDULER_ROLE_ARN,
    Env.SCHEDULE_DLQ_ARN,
    Env.MAX_SCHEDULES_PER_USER,
    Env.MIN_SCHEDULE_INTERVAL_MIN,
    Env.MAIL_SENDER,
    Env.MAIL_ALLOWED_DOMAINS,
}


def test_the_functions_get_the_scheduling_variables_their_settings_read(prod):
    # Each function takes what its settings read (test_infra_resources.py); prod configures mail.
    functions = prod.stack.functions
    for service_function in (functions.api, functions.schedule, functions.callback):
        variables = set(prod.props(service_function.function)["Environment"]["Variables"])
        assert (
            variables & SCHEDULING_VARIABLES
            == service_function.spec.runtime_settings.variables() & SCHEDULING_VARIABLES
        )
    # The attachment limit goes to the function that mails, only.
    callback = prod.props(functions.callback.function)["Environment"]["Variables"]
    assert callback[Env.MAIL_ATTACHMENT_MAX_BYTES] == "2000000"
    for service_function in (functions.api, functions.schedule, functions.worker):
        assert Env.MAIL_ATTACHMENT_MAX_BYTES not in prod.props(service_function.function)["Environment"]["Variables"]


def test_the_settings_read_the_variables_of_the_runtime_wiring():
    # /work/briefs/schedules-wiring.md: the API (and the schedule function, which parses the
    # API's settings) read every scheduling variable, the callback the table and the mail.
    assert ApiSettings.variables() >= SCHEDULING_VARIABLES
    assert CallbackSettings.variables() >= {
        Env.SCHEDULES_TABLE,
        Env.MAIL_SENDER,
        Env.MAIL_ALLOWED_DOMAINS,
        Env.MAIL_ATTACHMENT_MAX_BYTES,
    }


@pytest.mark.parametrize("limit", [-1, Schedules.MAIL_ATTACHMENT_MAX_BYTES + 1])
def test_an_attachment_limit_outside_what_ses_takes_is_refused(limit):
    with pytest.raises(ValueError, match="mail_attachment_max_bytes"):
        StageSettings.from_context({"mail_sender": "reports@acme.example", "mail_attachment_max_bytes": limit}.get)


# --- IAM scopes -------------------------------------------------------------------------------


def test_only_the_api_and_the_schedule_function_touch_schedules_and_only_in_the_group(assembly):
    for synth in (assembly.dev, assembly.prod):
        functions = synth.stack.functions
        for service_function in functions.all:
            statements = granted(synth, service_function.role, "scheduler:")
            grants: dict[object, list[tuple[tuple[str, ...], str, str]]] = {
                functions.api: [(MANAGE_ACTIONS, "", "")],
                functions.schedule: [
                    (PAUSE_ACTIONS, "", ""),
                    (MOVED_FIRING_ACTIONS, MOVED_FIRING_SUFFIX, ""),
                    (DEFERRED_FIRING_ACTIONS, "", DEFERRED_FIRING_PREFIX),
                ],
            }
            expected = grants.get(service_function)
            if expected is None:
                assert statements == [], service_function.node.id
                continue
            assert len(statements) == len(expected)
            for statement, (actions, suffix, prefix) in zip(statements, expected, strict=True):
                assert sorted(as_list(statement["Action"])) == sorted(actions)
                assert statement["Resource"] == group_schedules_arn(synth, suffix, prefix)
                assert "Condition" not in statement
        # Nowhere a wildcard action of Scheduler.
        text = json.dumps(synth.template.to_json())
        assert '"scheduler:*"' not in text


def test_only_the_scheduler_role_may_be_passed_and_only_to_scheduler(assembly):
    for synth in (assembly.dev, assembly.prod):
        functions = synth.stack.functions
        passing = {}
        for policy in of_type(synth, "AWS::IAM::Policy").values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "iam:PassRole" in as_list(statement["Action"]) or "iam:*" in as_list(statement["Action"]):
                    for role in policy["Properties"]["Roles"]:
                        passing[json.dumps(role)] = statement
        assert set(passing) == {json.dumps(synth.ref(f.role)) for f in (functions.api, functions.schedule)}
        for statement in passing.values():
            assert statement == {
                "Action": "iam:PassRole",
                "Effect": "Allow",
                "Resource": synth.arn(synth.stack.scheduling.role),
                "Condition": {"StringEquals": {"iam:PassedToService": SCHEDULER}},
            }


def test_the_schedules_table_is_granted_to_its_three_users_only(dev):
    stack = dev.stack
    functions = stack.functions
    table = dev.arn(stack.tables.schedules)
    index = join(table, f"/index/{SchedulesTable.USER_INDEX}")
    items = [
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ]
    expected = {
        functions.api: [(items, table), (["dynamodb:Query"], index)],
        # It reads a schedule by id, records the firing and the schedule's state; lists nothing.
        functions.schedule: [(items, table)],
        # A run's outcome on its schedule (read, update; the schedule's run records).
        functions.callback: [(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"], table)],
    }
    for service_function in functions.all:
        on_schedules = {
            (action, json.dumps(resource, sort_keys=True))
            for statement in statements_of(dev, service_function.role)
            for action in as_list(statement["Action"])
            for resource in as_list(statement["Resource"])
            if json.dumps(table) in json.dumps(resource)
        }
        assert on_schedules == {
            (action, json.dumps(resource, sort_keys=True))
            for actions, resource in expected.get(service_function, [])
            for action in actions
        }, service_function.node.id


def test_mail_is_sent_by_the_callback_only_from_the_senders_identity(dev, prod):
    for synth in (dev, prod):
        for service_function in synth.stack.functions.all:
            statements = granted(synth, service_function.role, "ses:")
            if synth is dev or service_function is not synth.stack.functions.callback:
                assert statements == [], (synth.stack.stack_name, service_function.node.id)
    (statement,) = granted(prod, prod.stack.functions.callback.role, "ses:")

    def identity(name):
        return join(
            "arn:",
            {"Ref": "AWS::Partition"},
            ":ses:",
            {"Ref": "AWS::Region"},
            ":",
            {"Ref": "AWS::AccountId"},
            f":identity/{name}",
        )

    assert sorted(as_list(statement["Action"])) == sorted(MAIL_ACTIONS)
    # The address or its domain, whichever is the verified identity; From must be the sender.
    assert sorted(statement["Resource"], key=json.dumps) == sorted(
        [identity("reports@acme.example"), identity("acme.example")], key=json.dumps
    )
    assert statement["Condition"] == {"StringEquals": {"ses:FromAddress": "reports@acme.example"}}


# --- Alarms -----------------------------------------------------------------------------------


def test_a_dead_letter_of_a_firing_alarms_at_once_and_keeps_its_state_while_sqs_is_silent(dev):
    alarm = alarms_by_name(dev)["ScheduleDeadLetters"]

    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [dev.logical_id(dev.stack.scheduling.dead_letters), "QueueName"]}}
    ]
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Maximum", 60, 1)
    assert alarm["TreatMissingData"] == "ignore"
    assert f"#{ScheduleRunbooks.DEAD_LETTERS.anchor}." in alarm["AlarmDescription"]


def test_scheduler_target_errors_and_lost_firings_alarm_on_the_stacks_group(dev, prod):
    for synth in (dev, prod):
        alarms = alarms_by_name(synth)
        group = [{"Name": "ScheduleGroup", "Value": synth.ref(synth.stack.scheduling.group)}]
        errors = alarms["SchedulerTargetErrors"]
        assert (errors["Namespace"], errors["MetricName"], errors["Statistic"]) == (
            "AWS/Scheduler",
            "TargetErrorCount",
            "Sum",
        )
        assert (errors["Dimensions"], errors["Threshold"]) == (group, 1)
        lost = alarms["ScheduleFiringsLost"]
        (expression,) = [m for m in lost["Metrics"] if "Expression" in m]
        assert expression["Expression"] == "FILL(dropped, 0) + FILL(undeliverable, 0)"
        counted = {m["Id"]: m["MetricStat"]["Metric"] for m in lost["Metrics"] if "MetricStat" in m}
        assert counted == {
            "dropped": {"Namespace": "AWS/Scheduler", "MetricName": "InvocationDroppedCount", "Dimensions": group},
            "undeliverable": {
                "Namespace": "AWS/Scheduler",
                "MetricName": "InvocationsFailedToBeSentToDeadLetterCount",
                "Dimensions": group,
            },
        }
        assert lost["Threshold"] == 1


def test_the_schedule_function_alarms_on_errors_and_throttles_page_no_one(dev):
    alarms = alarms_by_name(dev)
    errors = alarms["ScheduleErrors"]

    assert (errors["Namespace"], errors["MetricName"], errors["Statistic"], errors["Threshold"]) == (
        "AWS/Lambda",
        "Errors",
        "Sum",
        1,
    )
    assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": dev.ref(dev.stack.functions.schedule.function)}]
    # Throttled firings are queued and retried by Lambda, and Scheduler's throttles by Scheduler.
    assert "ScheduleThrottles" not in alarms
    text = json.dumps(list(alarms.values()))
    assert "InvocationThrottleCount" not in text and "TargetErrorThrottledCount" not in text


def test_the_dashboard_graphs_schedulers_numbers(dev):
    (dashboard,) = of_type(dev, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])

    for name in ("InvocationAttemptCount", "TargetErrorThrottledCount", "InvocationsSentToDeadLetterCount"):
        assert name in body


# --- Context flags ----------------------------------------------------------------------------


def settings_from(**context):
    return StageSettings.from_context(context.get)


def test_without_a_sender_no_mail_is_sent_and_the_limits_are_the_configs():
    settings = settings_from()

    assert settings.mail == Mail(sender=None, allowed_domains=())
    assert settings.schedule_limits == ScheduleLimits(
        Schedules.MAX_PER_USER_DEFAULT, Schedules.MIN_INTERVAL_MIN_DEFAULT
    )


def test_mail_and_schedule_limits_come_from_context():
    settings = settings_from(
        mail_sender="Reports@ACME.example",
        mail_allowed_domains="acme.example, @Finance.acme.example,acme.example",
        max_schedules_per_user="3",
        min_schedule_interval_min=60,
    )

    # SES identities: the local part is case-sensitive, the domain is not.
    assert settings.mail == Mail(
        sender="Reports@acme.example", allowed_domains=("acme.example", "finance.acme.example")
    )
    assert settings.mail.sender_domain == "acme.example"
    assert settings.schedule_limits == ScheduleLimits(max_per_user=3, min_interval_min=60)
    assert settings_from(mail_sender="r@acme.example", mail_allowed_domains=["a.example"]).mail.allowed_domains == (
        "a.example",
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"mail_sender": "reports"}, "expected the address of a verified SES identity"),
        ({"mail_sender": "reports@localhost"}, "expected the address of a verified SES identity"),
        ({"mail_sender": "Reports <reports@acme.example>"}, "expected the address of a verified SES identity"),
        ({"mail_allowed_domains": "acme.example"}, "mail_allowed_domains needs mail_sender"),
        ({"mail_sender": "r@acme.example", "mail_allowed_domains": "x@acme.example"}, "is not a domain"),
        ({"mail_sender": "r@acme.example", "mail_allowed_domains": "-acme.example"}, "is not a domain"),
        ({"max_schedules_per_user": "0"}, "max_schedules_per_user=0: expected at least 1"),
        ({"min_schedule_interval_min": "a minute"}, "expected a whole number"),
    ],
)
def test_a_wrong_mail_or_schedule_setting_is_refused_naming_the_key(context, message):
    with pytest.raises(ValueError, match=message):
        settings_from(**context)


def test_the_deploy_guide_documents_the_mail_flags_and_the_limits_defaults():
    from tests.infra.conftest import REPO_ROOT

    guide = (REPO_ROOT / "docs" / "deploy.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in guide.splitlines() if line.startswith("| `")}

    assert (
        f"| {Schedules.MAX_PER_USER_DEFAULT} (`Schedules.MAX_PER_USER_DEFAULT`) |"
        in rows[f"`{Context.MAX_SCHEDULES_PER_USER}`"]
    )
    assert (
        f"| {Schedules.MIN_INTERVAL_MIN_DEFAULT} (`Schedules.MIN_INTERVAL_MIN_DEFAULT`) |"
        in (rows[f"`{Context.MIN_SCHEDULE_INTERVAL_MIN}`"])
    )
    assert "| none (mail off) |" in rows[f"`{Context.MAIL_SENDER}`"]
    assert "sandbox" in guide and "create-email-identity" in guide


# --- Cost -------------------------------------------------------------------------------------


def test_a_firing_costs_schedulers_invocation_the_function_the_table_and_the_mail(prod):
    facts = stack_facts(prod.template.to_json())
    firing = Firing()
    lines = {line.service: line for line in schedule_lines(facts, Workload())}

    assert facts.schedule_memory_mb == Sizing.SCHEDULE_MEMORY_MB
    assert lines["EventBridge Scheduler"].per_export == pytest.approx(1.00 / 1e6)
    assert lines["SES"].per_export == pytest.approx(firing.recipients * 0.10 / 1000)
    # The mail's delivery.made record, one append per mailed run.
    assert lines["Audit trail (the mail's record)"].per_export == pytest.approx(Appends(1, AuditWork()).total)
    function = lines["Schedule function (Lambda)"]
    gb_seconds = firing.schedule_function_sec * Sizing.SCHEDULE_MEMORY_MB / 1024
    assert function.per_export == pytest.approx(gb_seconds * Price.LAMBDA_ARM_GB_SECOND + Price.LAMBDA_REQUEST)
    table = lines["DynamoDB (schedules table)"]
    assert table.per_export == pytest.approx(
        firing.schedule_write_units * Price.DYNAMODB_WRITE_UNIT + firing.schedule_reads * Price.DYNAMODB_READ_UNIT
    )
    assert all(line.fixed == 0 for line in lines.values())


def test_the_published_cost_of_1000_schedules_is_the_scripts(prod):
    from tests.infra.conftest import REPO_ROOT

    published = (REPO_ROOT / "docs" / "cost.md").read_text()
    section = published[published.index("## Scheduled exports") :].split("\n## ", 1)[0]
    facts = stack_facts(prod.template.to_json())
    per_firing = sum(line.per_export for line in schedule_lines(facts, Workload()))

    assert SCHEDULES == 1_000 and dict(SCHEDULE_MIXES) == {"daily": 30, "hourly": 730}
    (scheduling,) = [line for line in section.splitlines() if line.startswith("| **Scheduling** |")]
    expected = [f"${per_firing * SCHEDULES * per_schedule:,.2f}" for _, per_schedule in SCHEDULE_MIXES]
    assert [cell.strip().strip("*") for cell in scheduling.split("|")[3:5]] == expected
    assert "first 14,000,000 invocations a month are free" in section
    # The guide's link to the section.
    assert "cost.md#scheduled-exports" in (REPO_ROOT / "docs" / "deploy.md").read_text()
    # The whole document stays the script's output (test_infra_cost.py renders it for the same template).
    assert section in render(prod.template.to_json(), "prod")
