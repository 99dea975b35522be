"""The audit trail's resources (infra/audit.py, docs/audit.md): its table, the audit function's
stream mapping, each function's exact grants on the table, and its alarms."""

import json

import pytest

from exports.config.audit import Audit, AuditTable
from exports.config.retry import AUDIT_BATCH_RETRY
from infra.push import TASK_RECORDS
from tests.infra.test_infra_push import MAPPING_ACTIONS
from tests.infra.test_infra_resources import alarms_by_name, allowed_pairs, common_grants, expected_pairs, of_type

pytestmark = pytest.mark.infra


def test_the_audit_table_keys_and_ttl_equal_the_config_and_it_is_kept_as_the_tasks_table(dev, prod):
    for synth in (dev, prod):
        audit, tasks = synth.props(synth.stack.tables.audit), synth.props(synth.stack.tables.tasks)
        assert audit["KeySchema"] == [
            {"AttributeName": AuditTable.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": AuditTable.SORT_KEY, "KeyType": "RANGE"},
        ]
        assert audit["TimeToLiveSpecification"] == {"AttributeName": AuditTable.TTL_ATTRIBUTE, "Enabled": True}
        assert audit["Replicas"][0]["DeletionProtectionEnabled"] == tasks["Replicas"][0]["DeletionProtectionEnabled"]
        assert "StreamSpecification" not in audit


def test_the_audit_function_reads_task_records_from_the_start_retried_then_dead_lettered(dev):
    stack = dev.stack
    (mapping,) = [
        m["Properties"]
        for m in of_type(dev, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == dev.ref(stack.functions.audit.function)
    ]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [dev.logical_id(stack.tables.tasks), "StreamArn"]}
    # From the oldest record the stream keeps: a new mapping misses nothing still there.
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert (mapping["BatchSize"], mapping["MaximumBatchingWindowInSeconds"]) == (
        Audit.BATCH_SIZE,
        Audit.BATCHING_WINDOW_SEC,
    )
    assert (mapping["MaximumRetryAttempts"], mapping["MaximumRecordAgeInSeconds"]) == (
        AUDIT_BATCH_RETRY.retries,
        AUDIT_BATCH_RETRY.max_age_sec,
    )
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == dev.arn(stack.audit.failed_batches)
    assert json.loads(mapping["FilterCriteria"]["Filters"][0]["Pattern"]) == TASK_RECORDS


def test_each_function_may_do_exactly_what_the_audit_trail_needs(dev):
    stack = dev.stack
    table = dev.arn(stack.tables.audit)
    own = expected_pairs(
        [
            *common_grants(dev, stack.functions.audit),
            (["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"], table),
        ]
    )
    audit = allowed_pairs(dev, stack.functions.audit)
    assert own <= audit
    # Nothing else but what the mapping needs: it writes no task and deletes nothing.
    assert {action for action, _ in audit - own} <= MAPPING_ACTIONS
    on_table = {
        function.node.id: {
            action for action, resource in allowed_pairs(dev, function) if resource == json.dumps(table, sort_keys=True)
        }
        for function in stack.functions.all
    }
    assert on_table == {
        "Api": {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:GetItem"},
        "Audit": {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"},
        # A tenant's rows per day at a firing's submit; the pause a firing makes, appended.
        "Schedule": {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:GetItem"},
        # exports.toml's audit_log, an export of the caller's tenant's records.
        "Worker": {"dynamodb:Query"},
        "Lifecycle": set(),
        "Callback": set(),
        "Stream": set(),
        "Push": set(),
    }
    # No function may delete a record.
    assert all("dynamodb:DeleteItem" not in actions for actions in on_table.values())


def test_a_gap_in_the_audit_trail_pages(dev):
    alarms = alarms_by_name(dev)
    assert {"AuditFailed", "AuditFunctionErrors", "AuditFunctionThrottles", "AuditTableThrottles"} <= set(alarms)
    assert alarms["AuditFailed"]["Threshold"] == 1
