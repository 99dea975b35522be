"""The cost estimate reads its stack facts from the template and prices both volumes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from exports.core.config.names import Names
from exports.core.config.queues import LANES
from exports.core.config.worker import Worker, XlsxLimits
from exports.core.workflows import lifecycle_definition
from infra.sizing import Sizing
from scripts.cost_estimate import (
    LAMBDA_INCLUDED_EPHEMERAL_MB,
    SCENARIOS,
    VOLUMES,
    Appends,
    AuditWork,
    DeliveryWork,
    Price,
    Scenario,
    Workload,
    business_metric_series,
    cost_lines,
    delivery_lines,
    function_calls,
    render,
    stack_facts,
    state_transitions,
    states_entered,
)

pytestmark = pytest.mark.infra

# The definition as exports.core.workflows writes it, with function names instead of ARNs.
DEFINITION = lifecycle_definition(Names.LIFECYCLE_FUNCTION, Names.CALLBACK_FUNCTION)


def test_the_stack_facts_come_from_the_template(prod):
    facts = stack_facts(prod.template.to_json())

    assert (facts.api_memory_mb, facts.worker_memory_mb) == (Sizing.API_MEMORY_MB, Sizing.WORKER_MEMORY_MB)
    assert (facts.lifecycle_memory_mb, facts.callback_memory_mb) == (
        Sizing.LIFECYCLE_MEMORY_MB,
        Sizing.CALLBACK_MEMORY_MB,
    )
    assert facts.worker_batch_size == Worker.BATCH_SIZE
    assert facts.worker_ephemeral_storage_mb == XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB
    assert facts.lanes == len(LANES)
    assert facts.log_retention_days == prod.settings.log_retention_days
    assert facts.results_expiry_days == prod.settings.results_expiry_days
    assert facts.alarms == len(prod.template.find_resources("AWS::CloudWatch::Alarm"))
    alarms = [alarm["Properties"] for alarm in prod.template.find_resources("AWS::CloudWatch::Alarm").values()]
    # A math expression's alarm pays per metric (a table's throttles: table and index series,
    # reads and writes), the ExportFailed query per series it analyzes (counted from the workload).
    expected = sum(
        sum("MetricStat" in query for query in alarm["Metrics"]) if "Metrics" in alarm else 1 for alarm in alarms
    )
    assert facts.alarm_metrics == expected
    assert facts.alarm_metrics > facts.alarms - facts.insights_alarms
    assert facts.insights_alarms == 1
    # The lifecycle, the fan-out and the redelivery (a delivery retried on request).
    assert (facts.dashboards, facts.state_machines, facts.secrets) == (1, 3, 1)
    assert facts.lifecycle_definition["States"].keys() == DEFINITION["States"].keys()


@pytest.mark.parametrize(
    ("scenario", "states"),
    [
        (Scenario("normal end, no callback", has_callback=False), ["AwaitEnd", "HasCallback", "Done"]),
        (
            Scenario("normal end, callback", has_callback=True),
            ["AwaitEnd", "HasCallback", "Deliver", "HasDeliveries", "Done"],
        ),
        (
            Scenario("deadline, callback", has_callback=True, deadline=True),
            ["AwaitEnd", "Expire", "HasCallback", "Deliver", "HasDeliveries", "Done"],
        ),
        (
            Scenario("two failed attempts", has_callback=True, failed_callback_attempts=2),
            ["AwaitEnd", "HasCallback", "Deliver", "Deliver", "Deliver", "HasDeliveries", "Done"],
        ),
        (
            Scenario("receiver down", has_callback=True, failed_callback_attempts=4),
            ["AwaitEnd", "HasCallback", *["Deliver"] * 4, "GiveUp", "HasDeliveries", "Done"],
        ),
    ],
)
def test_the_walk_follows_the_definition(scenario, states):
    assert states_entered(DEFINITION, scenario) == states


def test_a_task_costs_four_to_seven_transitions_unless_its_receiver_is_down():
    # The execution's start counts as one transition.
    normal, with_callback, deadline, *receiver_down = (state_transitions(DEFINITION, s) for s in SCENARIOS)

    # A task with callbacks: one Choice more after them (HasDeliveries: are there files to deliver?).
    assert (normal, with_callback, deadline) == (4, 6, 7)
    assert receiver_down == [10, 11]
    assert function_calls(DEFINITION, SCENARIOS[2]) == (2, 1)


def test_every_item_costs_something_and_more_exports_cost_more(prod):
    lines = cost_lines(stack_facts(prod.template.to_json()), Workload())

    low, high = VOLUMES
    assert all(line.per_export > 0 or line.fixed > 0 for line in lines)
    assert sum(line.monthly(high) for line in lines) > sum(line.monthly(low) for line in lines) > 0
    (step_functions,) = [line for line in lines if line.service.startswith("Step Functions")]
    assert "6 state transitions" in step_functions.basis


def test_the_workers_temporary_disk_is_priced_above_the_included_512_mb_only(prod):
    facts = stack_facts(prod.template.to_json())
    work = Workload()

    def storage_lines(facts):
        return [line for line in cost_lines(facts, work) if line.service == "Lambda ephemeral storage"]

    def storage(facts):
        (line,) = storage_lines(facts)
        return line

    default = replace(facts, worker_ephemeral_storage_mb=LAMBDA_INCLUDED_EPHEMERAL_MB)
    doubled = replace(facts, worker_ephemeral_storage_mb=2 * facts.worker_ephemeral_storage_mb)
    assert storage_lines(default) == []
    assert 0 < storage(facts).per_export < storage(doubled).per_export
    assert storage(facts).fixed == 0
    assert f"{XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB} MB" in storage(facts).basis
    # Billed per GB-second of every worker run: the configured size above 512 MB, for the run.
    extra_gb = (XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB - LAMBDA_INCLUDED_EPHEMERAL_MB) / 1024
    assert storage(facts).per_export == pytest.approx(extra_gb * work.worker_run_sec * Price.LAMBDA_EPHEMERAL_GB_SECOND)


def test_alarms_are_priced_per_metric_and_export_failed_per_series(prod):
    facts = stack_facts(prod.template.to_json())
    work = Workload()

    def metrics_line(work):
        (line,) = [line for line in cost_lines(facts, work) if line.service.startswith("CloudWatch metrics")]
        return line

    more_codes = replace(work, failed_export_series=work.failed_export_series + 1)
    # One more series of ExportFailed: one more custom metric, and one more metric its alarm analyzes.
    assert metrics_line(more_codes).fixed - metrics_line(work).fixed == pytest.approx(
        Price.CUSTOM_METRIC_MONTH + Price.ALARM_METRIC_MONTH
    )
    assert business_metric_series(more_codes) == business_metric_series(work) + 1
    assert f"{facts.alarm_metrics + work.failed_export_series} metrics" in metrics_line(work).basis


def test_sqs_is_priced_per_lane(prod):
    facts = stack_facts(prod.template.to_json())
    one_lane = replace(facts, lanes=1)

    (sqs,) = [line for line in cost_lines(facts, Workload()) if line.service == "SQS"]
    (sqs_one_lane,) = [line for line in cost_lines(one_lane, Workload()) if line.service == "SQS"]
    # Every lane's queue is long-polled while idle, and every lane's depth is read at submit.
    assert sqs.fixed == pytest.approx(len(LANES) * sqs_one_lane.fixed)
    assert sqs.per_export > sqs_one_lane.per_export
    assert f"{len(LANES)} lane queues" in sqs.basis


def test_the_estimate_names_both_volumes_and_the_step_functions_price(prod):
    text = render(prod.template.to_json(), "prod")

    assert "| 1,000 exports/month | 1,000,000 exports/month |" in text
    assert "## Step Functions" in text
    assert "AwaitEnd → Expire → HasCallback → Deliver → HasDeliveries → Done | 7 |" in text
    assert "**Total**" in text


def test_the_published_estimate_prices_the_workers_temporary_disk():
    # docs/cost.md is regenerated by the script; a stale copy would not know the worker's /tmp.
    from scripts.cost_estimate import REPO_ROOT

    text = (REPO_ROOT / "docs" / "cost.md").read_text()

    assert f"worker /tmp {XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB} MB" in text
    assert "| Lambda ephemeral storage |" in text


def test_the_published_estimate_is_the_scripts_output_for_todays_template():
    from scripts.cost_estimate import REPO_ROOT, render, synthesized_template

    published = (REPO_ROOT / "docs" / "cost.md").read_text()

    assert published == render(synthesized_template("prod"), "prod")
    assert "3 state machines" in published and "## The worker in a VPC" in published


def test_snapstart_is_priced_for_the_functions_that_snapshot(prod):
    from scripts.cost_estimate import SECONDS_PER_MONTH, SnapStartWork, snapstart_lines

    facts = stack_facts(prod.template.to_json())
    work = Workload()

    cached, restores = snapstart_lines(facts, work, SnapStartWork(restored_share_of_requests=0.5))

    # The API function and the WebSocket function, read from the template's SnapStart settings
    assert sorted(facts.snap_start_memory_mb) == sorted([Sizing.API_MEMORY_MB, Sizing.PUSH_MEMORY_MB])
    memory_gb = (Sizing.API_MEMORY_MB + Sizing.PUSH_MEMORY_MB) / 1024
    assert cached.per_export == 0
    assert cached.fixed == pytest.approx(memory_gb * SECONDS_PER_MONTH * Price.SNAPSTART_CACHE_GB_SECOND)
    requests = 1 + work.status_polls + work.downloads
    assert restores.per_export == pytest.approx(requests * 0.5 * memory_gb * Price.SNAPSTART_RESTORE_GB)
    assert "## SnapStart" in render(prod.template.to_json(), "prod")


def test_a_file_delivery_is_priced_per_service_and_its_transitions_are_the_workflows(prod):
    facts = stack_facts(prod.template.to_json())
    lines = delivery_lines(facts, Workload())

    assert all(line.per_export > 0 for line in lines)
    (lambda_line,) = [line for line in lines if line.service.startswith("Lambda")]
    assert f"at {Sizing.CALLBACK_MEMORY_MB} MB" in lambda_line.basis
    # After a callback: HasDeliveries, then DeliverFiles (the choice, then the one attempt).
    after_callback = DEFINITION["States"]["Deliver"]["Next"]
    assert [after_callback, DEFINITION["States"][after_callback]["Choices"][0]["Next"]] == [
        "HasDeliveries",
        "DeliverFiles",
    ]
    assert DeliveryWork().transitions == 2
    without_transfer = delivery_lines(facts, Workload(), DeliveryWork(transfer_out=False))
    assert sum(line.per_export for line in without_transfer) < sum(line.per_export for line in lines)
    # Its delivery.made record: one append, and the destination read again for its kind.
    (record,) = [line for line in lines if line.service.startswith("Audit trail")]
    assert record.per_export == pytest.approx(Appends(1, AuditWork()).total + Price.DYNAMODB_READ_UNIT)


def test_an_append_is_a_chain_query_and_a_transaction_of_the_record_and_its_marker_kept_for_the_retention():
    one = Appends(1, AuditWork(record_bytes=1500, retention_days=300))

    # 1500 B: 2 KB of record and 1 KB of marker, each a transactional write (two units per KB).
    assert (one.write_units, one.read_units) == (6, 1)
    assert one.operations == pytest.approx(6 * Price.DYNAMODB_WRITE_UNIT + Price.DYNAMODB_READ_UNIT)
    # Ten months of a month's records, with point-in-time recovery.
    assert one.storage == pytest.approx(1500 / 1024**3 * 10 * (Price.DYNAMODB_GB_MONTH + Price.DYNAMODB_PITR_GB_MONTH))
    assert Appends(3, AuditWork()).total == pytest.approx(3 * Appends(1, AuditWork()).total)
