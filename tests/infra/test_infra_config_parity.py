"""The template uses the values of exports.core.config, the module the function code reads: nothing typed twice."""

from __future__ import annotations

import pytest

from exports.core.config.audit import Audit
from exports.core.config.callbacks import Callback
from exports.core.config.env import Env
from exports.core.config.limits import Admission, Capacity, HotKey, Limits
from exports.core.config.push import Push
from exports.core.config.queues import LANES, Queue
from exports.core.config.results import Results
from exports.core.config.retry import HOT_KEY_DEFERRAL, MESSAGE_RETRY, TASK_RETRY
from exports.core.config.tables import CustomersTable, OrdersTable, TaskTable
from exports.core.config.worker import Worker, XlsxLimits
from exports.running.writers import xlsx_limits
from infra.sizing import Sizing

pytestmark = pytest.mark.infra


def key_schema(keys):
    return {key["KeyType"]: key["AttributeName"] for key in keys}


def test_every_lanes_queue_redrive_and_timing_equal_the_config(dev):
    assert len(dev.stack.queues.lanes) == len(LANES)
    for lane in dev.stack.queues.lanes:
        queue = dev.props(lane.queue)
        assert queue["RedrivePolicy"]["maxReceiveCount"] == MESSAGE_RETRY.attempts
        assert queue["VisibilityTimeout"] == Queue.VISIBILITY_TIMEOUT_SEC
        assert queue["MessageRetentionPeriod"] == Queue.RETENTION_SEC
        assert queue["ReceiveMessageWaitTimeSeconds"] == Queue.LONG_POLL_SEC
        assert dev.props(lane.dead_letters)["MessageRetentionPeriod"] == Queue.DLQ_RETENTION_SEC


def test_the_visibility_timeout_is_at_least_six_worker_timeouts(dev):
    worker = dev.props(dev.stack.functions.worker.function)
    for lane in dev.stack.queues.lanes:
        assert dev.props(lane.queue)["VisibilityTimeout"] >= 6 * worker["Timeout"]


def test_function_timeouts_memory_and_batch_equal_the_config(dev):
    worker = dev.props(dev.stack.functions.worker.function)
    api = dev.props(dev.stack.functions.api.function)
    assert worker["Timeout"] == Worker.FUNCTION_TIMEOUT_SEC
    assert (worker["MemorySize"], api["MemorySize"], api["Timeout"]) == (
        Sizing.WORKER_MEMORY_MB,
        Sizing.API_MEMORY_MB,
        Sizing.API_TIMEOUT_SEC,
    )
    mappings = dev.template.find_resources("AWS::Lambda::EventSourceMapping").values()
    sizes = [mapping["Properties"]["BatchSize"] for mapping in mappings]
    # The lanes' queues, and the tasks stream (the push function, the audit function)
    assert sorted(sizes) == sorted([Worker.BATCH_SIZE] * len(LANES) + [Push.BATCH_SIZE, Audit.BATCH_SIZE])


def test_the_workers_temporary_disk_equals_the_config_and_the_other_functions_keep_the_default(dev, prod):
    # XLSX sheets wait in /tmp until the workbook is saved (XlsxLimits); nothing else writes there.
    for synth in (dev, prod):
        functions = synth.stack.functions
        worker = synth.props(functions.worker.function)
        assert worker["EphemeralStorage"] == {"Size": XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB}
        for service_function in (functions.api, functions.lifecycle, functions.callback):
            assert "EphemeralStorage" not in synth.props(service_function.function)
    # Lambda accepts 512..10240 MiB; the reserve the export keeps free must leave room for rows.
    assert 512 <= XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB <= 10240
    assert xlsx_limits.TMP_RESERVE_BYTES < XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB * 1024 * 1024 // 4


def test_each_lane_reads_with_its_share_of_the_workers_and_the_shares_add_up_to_the_ceiling(dev):
    # The global limit on parallel exports (and queries against the data source) stays the config's.
    assert sum(lane.max_concurrency for lane in LANES) == Capacity.WORKER_MAX_CONCURRENCY
    by_queue = {
        mapping["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: mapping["Properties"]
        for mapping in dev.template.find_resources("AWS::Lambda::EventSourceMapping").values()
        if "ScalingConfig" in mapping["Properties"]  # the SQS mappings (not the tasks stream's)
    }
    assert {
        dev.logical_id(lane.queue): by_queue[dev.logical_id(lane.queue)]["ScalingConfig"]["MaximumConcurrency"]
        for lane in dev.stack.queues.lanes
    } == {dev.logical_id(lane.queue): lane.lane.max_concurrency for lane in dev.stack.queues.lanes}
    deployed = sum(mapping["ScalingConfig"]["MaximumConcurrency"] for mapping in by_queue.values())
    assert deployed == Capacity.WORKER_MAX_CONCURRENCY
    # SQS event sources accept a maximum concurrency of 2..1000.
    assert all(2 <= lane.max_concurrency <= 1000 for lane in LANES)


def test_the_lanes_serve_every_priority_exactly_once(dev):
    served = sorted(priority for lane in LANES for priority in range(lane.highest, lane.lowest + 1))
    assert served == list(range(Limits.PRIORITY_HIGHEST, Limits.PRIORITY_LOWEST + 1))
    assert [lane.lane.name for lane in dev.stack.queues.lanes] == [lane.name for lane in LANES]


def test_the_admission_limits_default_to_the_config(dev):
    api = dev.props(dev.stack.functions.api.function)["Environment"]["Variables"]
    worker = dev.props(dev.stack.functions.worker.function)["Environment"]["Variables"]
    assert int(api[Env.MAX_ACTIVE_TASKS_PER_USER]) == Admission.MAX_ACTIVE_TASKS_PER_USER
    assert int(api[Env.MAX_BACKLOG]) == Admission.MAX_BACKLOG
    assert float(worker[Env.HOT_KEY_RATE_PER_MINUTE]) == HotKey.RATE_PER_MINUTE
    assert int(worker[Env.HOT_KEY_BURST]) == HotKey.BURST


def test_the_lifecycle_functions_sizes_equal_the_config_and_a_callback_attempt_fits(dev):
    lifecycle = dev.props(dev.stack.functions.lifecycle.function)
    callback = dev.props(dev.stack.functions.callback.function)
    assert (lifecycle["MemorySize"], lifecycle["Timeout"]) == (Sizing.LIFECYCLE_MEMORY_MB, Sizing.LIFECYCLE_TIMEOUT_SEC)
    assert (callback["MemorySize"], callback["Timeout"]) == (Sizing.CALLBACK_MEMORY_MB, Sizing.CALLBACK_TIMEOUT_SEC)
    # The function must outlive its one HTTP attempt, or Lambda's timeout replaces the
    # CallbackRetryable error that the workflow retries on.
    assert callback["Timeout"] > Callback.REQUEST_TIMEOUT_SEC


def test_the_retry_and_deferral_delays_fit_the_queues(dev):
    # Retries and hot-key deferrals are re-sent with a delay: SQS takes at most 15 minutes, and a
    # waiting message must not outlive the queue's retention.
    assert TASK_RETRY.base_sec <= TASK_RETRY.cap_sec <= 900
    assert HOT_KEY_DEFERRAL.cap_sec <= 900
    for lane in dev.stack.queues.lanes:
        queue = dev.props(lane.queue)
        assert queue["MessageRetentionPeriod"] > max(TASK_RETRY.cap_sec, HOT_KEY_DEFERRAL.cap_sec)
        assert "DelaySeconds" not in queue


def test_table_keys_indexes_and_ttl_equal_the_config(dev):
    tasks, orders = dev.props(dev.stack.tables.tasks), dev.props(dev.stack.tables.orders)
    assert key_schema(tasks["KeySchema"]) == {"HASH": TaskTable.PARTITION_KEY}
    (by_user,) = tasks["GlobalSecondaryIndexes"]
    assert by_user["IndexName"] == TaskTable.USER_INDEX
    assert key_schema(by_user["KeySchema"]) == {
        "HASH": TaskTable.USER_INDEX_PARTITION_KEY,
        "RANGE": TaskTable.USER_INDEX_SORT_KEY,
    }
    assert tasks["TimeToLiveSpecification"]["AttributeName"] == TaskTable.TTL_ATTRIBUTE
    assert key_schema(orders["KeySchema"]) == {"HASH": OrdersTable.PARTITION_KEY}
    (by_day,) = orders["GlobalSecondaryIndexes"]
    assert by_day["IndexName"] == OrdersTable.DAY_INDEX
    assert key_schema(by_day["KeySchema"]) == {
        "HASH": OrdersTable.DAY_INDEX_PARTITION_KEY,
        "RANGE": OrdersTable.DAY_INDEX_SORT_KEY,
    }


def test_the_customers_table_keys_and_index_equal_the_config(dev, prod):
    for synth in (dev, prod):
        customers = synth.props(synth.stack.tables.customers)
        assert key_schema(customers["KeySchema"]) == {"HASH": CustomersTable.PARTITION_KEY}
        (by_signup_day,) = customers["GlobalSecondaryIndexes"]
        assert by_signup_day["IndexName"] == CustomersTable.DAY_INDEX
        assert key_schema(by_signup_day["KeySchema"]) == {
            "HASH": CustomersTable.DAY_INDEX_PARTITION_KEY,
            "RANGE": CustomersTable.DAY_INDEX_SORT_KEY,
        }
        assert by_signup_day["Projection"] == {"ProjectionType": "ALL"}
        # The reader sends every key attribute as a string (examples/demo_plugins/dynamodb_customers.py).
        assert {attribute["AttributeType"] for attribute in customers["AttributeDefinitions"]} == {"S"}
        assert {attribute["AttributeName"] for attribute in customers["AttributeDefinitions"]} == {
            CustomersTable.PARTITION_KEY,
            CustomersTable.DAY_INDEX_PARTITION_KEY,
            CustomersTable.DAY_INDEX_SORT_KEY,
        }


def test_result_retention_and_upload_cleanup_equal_the_config(dev, prod):
    for synth in (dev, prod):
        rules = {
            rule["Id"]: rule for rule in synth.props(synth.stack.storage.bucket)["LifecycleConfiguration"]["Rules"]
        }
        retention_sec = synth.settings.results_retention_hours * 3600 + Worker.FUNCTION_TIMEOUT_SEC
        assert rules["expire-results"]["ExpirationInDays"] == -(-retention_sec // (24 * 3600))
        assert rules["expire-results"]["Prefix"] == f"{Results.KEY_PREFIX}/"
        days = rules["abort-incomplete-uploads"]["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        assert days == Results.ABORT_INCOMPLETE_UPLOAD_DAYS
        functions = synth.stack.functions
        # Every function that ends tasks stamps their expiry (the callback ends none).
        for function in (functions.api, functions.worker, functions.lifecycle):
            variables = synth.props(function.function)["Environment"]["Variables"]
            assert int(variables["EXPORTS_RETENTION_HOURS"]) == synth.settings.results_retention_hours
            assert Results.RETENTION_HOURS_MIN <= synth.settings.results_retention_hours <= Results.RETENTION_HOURS_MAX
