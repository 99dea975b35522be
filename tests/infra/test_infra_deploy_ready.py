"""What a first deploy on a real account needs (issue 16): alarms that can notify and reach
someone, concurrency caps, log group, bucket and naming rules that hold in a busy account, and
a Cognito client with only the flows the guide uses. Asserted on the shared synthesized stacks."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest
from aws_cdk import App, CfnElement, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Annotations, Match, Template

from exports.core.config.tables import CustomersTable, OrdersTable, TaskTable
from infra.function_factory import ServiceFunction, removal_policy
from infra.monitoring import RUNBOOK_DOC, Monitoring, Runbooks, Severity
from infra.schedules import ScheduleRunbooks
from infra.settings import StageSettings
from infra.sizing import Sizing
from infra.stack import ExportsStack
from infra.workflows import VENDED_LOGS_PREFIX
from tests.infra.conftest import CDK_CONTEXT, SKIP_BUNDLING

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]


def alarms(synth):
    return [alarm["Properties"] for alarm in synth.template.find_resources("AWS::CloudWatch::Alarm").values()]


def topic_statements(synth, topic):
    (policy,) = [
        policy
        for policy in synth.template.find_resources("AWS::SNS::TopicPolicy").values()
        if policy["Properties"]["Topics"] == [synth.ref(topic)]
    ]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def rendered_pattern(synth, value):
    """An ARN pattern of the template with the pseudo parameters written as ``<AWS::...>``."""
    return synth.rendered(value)


# --- Alarms can notify ------------------------------------------------------------------------


@pytest.mark.parametrize("topic_name", ["paging_topic", "tickets_topic"])
@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_cloudwatch_may_publish_to_the_alarm_topics_for_this_accounts_alarms_only(assembly, stage, topic_name):
    synth = getattr(assembly, stage)
    topic = getattr(synth.stack.monitoring, topic_name)

    (allow,) = [statement for statement in topic_statements(synth, topic) if statement["Effect"] == "Allow"]

    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Resource"] == synth.ref(topic)
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = rendered_pattern(synth, allow["Condition"]["ArnLike"]["aws:SourceArn"])
    assert source_arn == (
        f"arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:{synth.stack.stack_name}-*"
    )
    # The pattern covers every alarm of the stack, and the SSL-only Deny is still there.
    for alarm in alarms(synth):
        assert fnmatch.fnmatchcase(alarm["AlarmName"], source_arn.rsplit(":", 1)[1])
    (deny,) = [statement for statement in topic_statements(synth, topic) if statement["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_dev_without_a_destination_warns_at_synth(dev, prod):
    Annotations.from_stack(dev.stack).has_warning("*", Match.string_like_regexp("needs an alarm destination"))
    Annotations.from_stack(prod.stack).has_no_warning("*", Match.string_like_regexp("needs an alarm destination"))


def test_existing_topics_get_their_kind_of_alarm_too_and_no_recovery_floods_either():
    # Given a stage whose destinations are existing topics (a pager integration's, a ticket queue's)
    pager, tickets = "arn:aws:sns:eu-west-1:123456789012:pager", "arn:aws:sns:eu-west-1:123456789012:tickets"
    context = {"stage": "prod", "alarm_topic_arn": pager, "ticket_topic_arn": tickets}
    stack = Stack(App(), "Bare")
    monitoring = Monitoring(stack, "Monitoring", settings=StageSettings.from_context(context.get))
    monitoring.add_alarm(
        "Ticket",
        metric=cloudwatch.Metric(namespace="X", metric_name="Y"),
        threshold=1,
        description="A ticket.",
        runbook=Runbooks.CALLBACK_FAILED,
        severity=Severity.TICKET,
    )

    # When it builds its alarms, Then each notifies its own topic and the existing one of its kind
    # when it fires, and neither on OK (a first deploy would send one per alarm as each leaves
    # INSUFFICIENT_DATA)
    template = Template.from_stack(stack)

    def ref(topic):
        element = topic.node.default_child
        assert isinstance(element, CfnElement)
        return {"Ref": stack.resolve(stack.get_logical_id(element))}

    found = {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
    }
    assert "Bare-Ticket" in found and len(found) > 1
    for alarm in found.values():
        ticket = alarm["AlarmDescription"].startswith("[ticket] ")
        expected = [ref(monitoring.tickets_topic), tickets] if ticket else [ref(monitoring.paging_topic), pager]
        assert alarm["AlarmActions"] == expected
        assert "OKActions" not in alarm
    template.resource_count_is("AWS::SNS::Subscription", 0)


def test_a_ticket_address_of_its_own_takes_the_tickets_from_the_on_call_address():
    context = {"stage": "prod", "alarm_email": "oncall@example.com", "ticket_email": "tickets@example.com"}
    stack = Stack(App(), "Bare")
    monitoring = Monitoring(stack, "Monitoring", settings=StageSettings.from_context(context.get))

    subscriptions = [
        (resource["Properties"]["Endpoint"], resource["Properties"]["TopicArn"]["Ref"])
        for resource in Template.from_stack(stack).find_resources("AWS::SNS::Subscription").values()
    ]

    def logical_id(topic):
        return stack.resolve(stack.get_logical_id(topic.node.default_child))

    assert sorted(subscriptions) == sorted(
        [
            ("oncall@example.com", logical_id(monitoring.paging_topic)),
            ("tickets@example.com", logical_id(monitoring.tickets_topic)),
        ]
    )


# --- Coverage and runbooks --------------------------------------------------------------------


def runbook_anchors():
    """The anchors of docs/alarms.md's headings, as GitHub makes them."""
    headings = [line.lstrip("#").strip() for line in (REPO_ROOT / RUNBOOK_DOC).read_text().splitlines()]
    return {re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-") for heading in headings if heading}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_alarm_says_what_to_do_and_links_its_runbook_section(assembly, stage):
    synth = getattr(assembly, stage)
    anchors = runbook_anchors()

    for alarm in alarms(synth):
        description = alarm["AlarmDescription"]
        match = re.search(rf"Runbook: {re.escape(RUNBOOK_DOC)}#([a-z0-9-]+)\. \S", description)
        assert match, description
        assert match.group(1) in anchors, f"{alarm['AlarmName']}: no section #{match.group(1)} in {RUNBOOK_DOC}"
        assert len(description) <= 1024  # CloudWatch's limit


def test_every_runbook_is_used_by_an_alarm_and_documented(dev, prod):
    used = {
        re.search(r"#([a-z0-9-]+)\.", alarm["AlarmDescription"]).group(1) for alarm in [*alarms(dev), *alarms(prod)]
    }

    runbooks = {runbook.anchor for runbook in (*Runbooks.all(), *ScheduleRunbooks.all())}
    assert runbooks == used
    assert runbooks <= runbook_anchors()


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_runbooks_table_names_every_alarm_of_the_stack(assembly, stage):
    synth = getattr(assembly, stage)
    runbook = (REPO_ROOT / RUNBOOK_DOC).read_text()
    names = {alarm["AlarmName"].removeprefix(f"{synth.stack.stack_name}-") for alarm in alarms(synth)}

    assert {name for name in names if f"`{name}`" not in runbook} == set()


def test_each_table_alarms_on_any_throttled_read_or_write(dev):
    by_name = {alarm["AlarmName"].removeprefix(f"{dev.stack.stack_name}-"): alarm for alarm in alarms(dev)}
    tables = dev.stack.tables

    for name, table, index in (
        ("Tasks", tables.tasks, TaskTable.USER_INDEX),
        ("Orders", tables.orders, OrdersTable.DAY_INDEX),
        ("Customers", tables.customers, CustomersTable.DAY_INDEX),
    ):
        alarm = by_name[f"{name}TableThrottles"]
        assert alarm["Threshold"] == 1
        (expression,) = [query["Expression"] for query in alarm["Metrics"] if "Expression" in query]
        stats = {query["Id"]: query["MetricStat"] for query in alarm["Metrics"] if "MetricStat" in query}

        # The table's own series and its index's: DynamoDB counts an index's throttles only there.
        def sorted_dimensions(dimensions):
            return json.dumps(sorted(dimensions, key=lambda dimension: dimension["Name"]))

        series = sorted(
            (stat["Metric"]["MetricName"], sorted_dimensions(stat["Metric"]["Dimensions"])) for stat in stats.values()
        )
        table_only = [{"Name": "TableName", "Value": dev.ref(table)}]
        with_index = [*table_only, {"Name": "GlobalSecondaryIndexName", "Value": index}]
        assert series == sorted(
            (metric, sorted_dimensions(dimensions))
            for metric in ("ReadThrottleEvents", "WriteThrottleEvents")
            for dimensions in (table_only, with_index)
        )
        # The alarm sums them all: any throttled read or write counts.
        assert all(f"FILL({metric_id}, 0)" in expression for metric_id in stats)
        assert expression.count("+") == len(stats) - 1
        for stat in stats.values():
            assert stat["Metric"]["Namespace"] == "AWS/DynamoDB"
            assert stat["Stat"] == "Sum"


# --- Limits and names -------------------------------------------------------------------------


def test_reserved_concurrency_is_opt_in_and_then_caps_the_lifecycle_callback_and_schedule_functions(dev, prod):
    """A fresh account's concurrency quota (often 10) refuses any reservation and the first
    deploy rolls back: the default stage reserves nothing; -c reserved_concurrency=true (prod
    here) caps the functions that absorb bursts by being throttled."""
    for service_function in dev.stack.functions.__dict__.values():
        if isinstance(service_function, ServiceFunction):
            assert "ReservedConcurrentExecutions" not in dev.props(service_function.function)
    functions = prod.stack.functions
    for service_function, cap in (
        (functions.lifecycle, Sizing.LIFECYCLE_RESERVED_CONCURRENCY),
        (functions.callback, Sizing.CALLBACK_RESERVED_CONCURRENCY),
        (functions.schedule, Sizing.SCHEDULE_RESERVED_CONCURRENCY),
    ):
        assert prod.props(service_function.function)["ReservedConcurrentExecutions"] == cap
    # The API scales with requests and the worker is capped per lane by its event sources.
    for service_function in (functions.api, functions.worker, functions.stream, functions.push):
        assert "ReservedConcurrentExecutions" not in prod.props(service_function.function)


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_dashboard_is_named_per_stack_and_region(assembly, stage):
    """Dashboards are global to the account: the same stack name in two regions must not collide."""
    synth = getattr(assembly, stage)
    (dashboard,) = synth.template.find_resources("AWS::CloudWatch::Dashboard").values()

    assert synth.rendered(dashboard["Properties"]["DashboardName"]) == f"{synth.stack.stack_name}-<AWS::Region>"


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_state_machine_logs_under_the_vended_logs_prefix_in_a_group_new_per_stack_creation(assembly, stage):
    synth = getattr(assembly, stage)
    for state_machine in (synth.stack.lifecycle, synth.stack.fan_out):
        props = synth.props(state_machine)
        (destination,) = props["LoggingConfiguration"]["Destinations"]
        group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]

        name = synth.template.to_json()["Resources"][group_id]["Properties"]["LogGroupName"]
        # The UUID of AWS::StackId: a kept group of a deleted stack never holds the next one's name.
        assert name == {
            "Fn::Join": [
                "",
                [
                    f"{VENDED_LOGS_PREFIX}{props['StateMachineName']}-",
                    {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]},
                ],
            ]
        }
        assert VENDED_LOGS_PREFIX == "/aws/vendedlogs/states/"


def test_prod_keeps_its_data_and_logs_except_after_a_failed_create_and_dev_keeps_nothing(dev, prod):
    """A failed first prod deploy must leave nothing behind (RetainExceptOnCreate), a deleted
    prod stack keeps its data; no resource of either stage carries a plain Retain."""
    kept_types = {
        "AWS::DynamoDB::GlobalTable",
        "AWS::S3::Bucket",
        "AWS::Cognito::UserPool",
        "AWS::SecretsManager::Secret",
        "AWS::Logs::LogGroup",
    }
    for synth, policy in ((prod, "RetainExceptOnCreate"), (dev, "Delete")):
        resources = synth.template.to_json()["Resources"].values()
        kept = [resource for resource in resources if resource["Type"] in kept_types]
        assert {resource["Type"] for resource in kept} >= kept_types - (
            {"AWS::Cognito::UserPool"} if synth is prod else set()
        )
        assert {resource["DeletionPolicy"] for resource in kept} == {policy}
        assert {resource["UpdateReplacePolicy"] for resource in kept} <= {policy, "Retain"}
        assert "Retain" not in {resource.get("DeletionPolicy") for resource in resources}


def test_every_kept_resource_of_a_protected_stage_goes_with_a_failed_create():
    """The user pool (prod here takes tokens of an external issuer, so it has none) and every
    other kept resource take their policy from here."""
    assert removal_policy(StageSettings.preset("prod")) is RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
    assert removal_policy(StageSettings.preset("dev")) is RemovalPolicy.DESTROY


def test_dev_buckets_are_emptied_on_stack_deletion_and_prod_buckets_are_kept(dev, prod):
    auto_deleted = {
        json.dumps(resource["Properties"]["BucketName"])
        for resource in dev.template.find_resources("Custom::S3AutoDeleteObjects").values()
    }
    storage = dev.stack.storage

    assert auto_deleted == {json.dumps(dev.ref(storage.bucket)), json.dumps(dev.ref(storage.access_logs))}
    prod.template.resource_count_is("Custom::S3AutoDeleteObjects", 0)


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_no_arn_is_written_for_one_partition(assembly, stage):
    synth = getattr(assembly, stage)
    text = json.dumps(synth.template.to_json())

    assert "arn:aws:" not in text
    # The state machine's integrations use the stack's partition.
    definition = json.dumps(synth.props(synth.stack.lifecycle)["DefinitionString"])
    assert '":states:::lambda:invoke' in definition
    assert '{"Ref": "AWS::Partition"}' in definition


def test_no_infra_or_workflow_source_types_the_aws_partition():
    sources = [*(REPO_ROOT / "infra").glob("*.py"), REPO_ROOT / "exports" / "core" / "workflows.py"]

    assert [path.name for path in sources if "arn:aws:" in path.read_text()] == []


@pytest.fixture(scope="module")
def second_dev_stack(tmp_path_factory):
    """A second dev stack under another name, in the same app kind as the shared one."""
    app = App(context={**CDK_CONTEXT, **SKIP_BUNDLING}, outdir=str(tmp_path_factory.mktemp("blue")))
    stack = ExportsStack(
        app, "Blue", settings=StageSettings.from_context(CDK_CONTEXT.get), stack_name="exports-dev-blue"
    )
    return stack, Template.from_stack(stack)


def physical_names(template):
    resources = template.to_json()["Resources"].values()
    return {
        "state machines": {
            r["Properties"]["StateMachineName"] for r in resources if r["Type"].endswith("StateMachine")
        },
        "alarms": {r["Properties"]["AlarmName"] for r in resources if r["Type"] == "AWS::CloudWatch::Alarm"},
        "dashboards": {
            json.dumps(r["Properties"]["DashboardName"]) for r in resources if r["Type"] == "AWS::CloudWatch::Dashboard"
        },
        "log groups": {
            json.dumps(r["Properties"]["LogGroupName"])
            for r in resources
            if r["Type"] == "AWS::Logs::LogGroup" and "LogGroupName" in r["Properties"]
        },
    }


def test_two_stacks_of_one_stage_share_no_physical_name(dev, second_dev_stack):
    stack, template = second_dev_stack
    ours, theirs = physical_names(dev.template), physical_names(template)

    for kind in ours:
        assert ours[kind], kind
        assert ours[kind].isdisjoint(theirs[kind]), kind
        for name in theirs[kind]:
            assert stack.stack_name in name, (kind, name)


# --- Cognito ----------------------------------------------------------------------------------


def test_the_created_app_client_allows_only_the_flows_the_guide_uses(dev):
    client = dev.props(dev.stack.api.user_pool_client)

    assert sorted(client["ExplicitAuthFlows"]) == [
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_USER_PASSWORD_AUTH",
        "ALLOW_USER_SRP_AUTH",
    ]
    assert client.get("AllowedOAuthFlowsUserPoolClient", False) is False
    assert "AllowedOAuthFlows" not in client
    assert "CallbackURLs" not in client
    assert "https://example.com" not in json.dumps(dev.template.to_json())


def test_an_alarm_without_a_runbook_cannot_be_added():
    stack = Stack(App(), "Bare")
    monitoring = Monitoring(stack, "Monitoring", settings=StageSettings.preset("dev"))
    metric = cloudwatch.Metric(namespace="X", metric_name="Y")

    with pytest.raises(TypeError):
        monitoring.add_alarm("NoRunbook", metric=metric, threshold=1, description="no runbook")  # type: ignore[call-arg]
