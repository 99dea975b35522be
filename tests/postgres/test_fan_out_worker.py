"""A split export end to end on moto, which executes the fan-out workflow's Distributed Map
(each partition a worker invocation), with a real PostgreSQL: the assembled file equals the
single worker's, and a cancel leaves no object and no open upload."""

from __future__ import annotations

import dataclasses
import functools
import io
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import openpyxl
import pytest
import python_calamine
from types_boto3_stepfunctions.type_defs import ExecutionListItemTypeDef

from exports.api.control import cancel_export
from exports.core.errors import ExportFailed, SourceCode
from exports.core.task import ExportFormat
from exports.core.task_view import TaskView
from exports.export_types.loader import default_path
from exports.running.dynamodb_source_slots import DynamoSourceSlots
from exports.running.endings import Outcome
from exports.running.fan_out import partition as partition_module
from exports.running.formats import csv as csv_format_module
from exports.running.formats import xlsx as xlsx_format_module
from exports.running.writers import partitioned_xlsx
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.integration.conftest import retry_clock, running_aws  # noqa: F401  (moto executing workflows)
from tests.polling import poll_until
from tests.postgres.conftest import write_declaration
from tests.postgres.test_worker_postgres import DECLARATION, create, leftovers, run, worker_dependencies

# The tenant the demo types bind from the submitter's token (exports.toml).
ACME = {"tenant_id": "acme"}

SPLIT = DECLARATION + '[types.numbers.partitions]\nby = "order_key"\n'
ROWS = 3000


@pytest.fixture
def split_worker(running_aws: Resources, scratch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:  # noqa: F811
    """The worker's dependencies, splitting every 1,000 rows into at most 4 partitions; the
    workflow's invocations build their own from the same environment."""
    deps = worker_dependencies(
        monkeypatch, write_declaration(tmp_path, SPLIT), scratch, partition_rows=1000, max_partitions=4
    )
    yield deps
    _wait_for_fan_outs(running_aws)
    worker.dependencies.cache_clear()


def _wait_for_fan_outs(resources: Resources, limit_sec: float = 60) -> list[ExecutionListItemTypeDef]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    return poll_until(
        lambda: sfn.list_executions(stateMachineArn=resources.fan_out_state_machine_arn)["executions"],
        lambda executions: all(item["status"] != "RUNNING" for item in executions),
        timeout_sec=limit_sec,
        interval_sec=0.2,
    )


def _ended(deps: Any, task: Any, limit_sec: float = 60) -> Any:
    current = poll_until(
        lambda: deps.tasks.get(task.task_id),
        lambda current: current.is_terminal,
        timeout_sec=limit_sec,
        interval_sec=0.2,
    )
    assert current.is_terminal, f"task still {current.status}"
    return current


def _body(resources: Resources, key: str) -> bytes:
    return boto3.client("s3", region_name=REGION).get_object(Bucket=resources.bucket, Key=key)["Body"].read()


def _cells(resources: Resources, key: str) -> list[list[tuple[Any, ...]]]:
    book = openpyxl.load_workbook(io.BytesIO(_body(resources, key)), read_only=True)
    return [list(sheet.iter_rows(values_only=True)) for sheet in book.worksheets]


def one_worker(deps: Any) -> Any:
    """The same worker, splitting nothing (one partition at most): it writes the single worker's file."""
    return dataclasses.replace(deps, settings=deps.settings.model_copy(update={"max_partitions": 1}))


def _single(deps: Any, fmt: ExportFormat) -> Any:
    task = create(deps, {"rows": ROWS}, fmt)
    assert run(one_worker(deps), task) is Outcome.COMPLETED
    return deps.tasks.get(task.task_id)


@pytest.mark.parametrize("fmt", [ExportFormat.CSV, ExportFormat.CSV_GZ])
def test_a_split_csv_is_the_single_workers_file(split_worker: Any, running_aws: Resources, fmt: ExportFormat) -> None:  # noqa: F811
    task = create(split_worker, {"rows": ROWS}, fmt)

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task)
    assert done.status.value == "COMPLETED", done.error
    single = _single(split_worker, fmt)
    assert done.result.rows == single.result.rows == ROWS
    split_body = _body(running_aws, done.result.key)
    assert len(split_body) == done.result.bytes
    if fmt is ExportFormat.CSV:
        assert split_body == _body(running_aws, single.result.key)
        assert done.result.sha256 == single.result.sha256
    else:
        import gzip

        assert gzip.decompress(split_body) == gzip.decompress(_body(running_aws, single.result.key))
    executions = _wait_for_fan_outs(running_aws)
    assert [item["status"] for item in executions] == ["SUCCEEDED"]
    keys, uploads = leftovers(running_aws)
    assert uploads == [] and all("fan-out" not in key for key in keys)


def test_a_split_workbook_has_the_single_workers_cells(split_worker: Any, running_aws: Resources) -> None:  # noqa: F811
    task = create(split_worker, {"rows": ROWS}, ExportFormat.XLSX)

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task)
    assert done.status.value == "COMPLETED", done.error
    single = _single(split_worker, ExportFormat.XLSX)

    assert _cells(running_aws, done.result.key) == _cells(running_aws, single.result.key)
    assert done.result.rows == ROWS


def test_a_cancelled_split_export_leaves_no_object_and_no_upload(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
) -> None:
    task = create(split_worker, {"rows": ROWS, "pause": "0.002"})

    assert run(split_worker, task) is Outcome.FANNED_OUT
    cancel_export(task.task_id, "alice", split_worker)

    executions = _wait_for_fan_outs(running_aws)
    # A cancel is no fault: the partitions stop, the assembler cleans up, the execution succeeds.
    assert [item["status"] for item in executions] == ["SUCCEEDED"]
    assert split_worker.tasks.get(task.task_id).status.value == "CANCELLED"
    keys, uploads = leftovers(running_aws)
    assert keys == [] and uploads == []


def test_a_deadline_in_the_middle_of_a_split_export_times_it_out_and_leaves_nothing(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = create(split_worker, {"rows": ROWS}, timeout_sec=10)
    real = partition_module._pages

    def past_the_deadline(pages: Any, progress: Any) -> Any:  # each partition reads its rows late
        time.sleep(max(0.0, (task.deadline - datetime.now(UTC)).total_seconds()) + 0.5)
        yield from real(pages, progress)

    monkeypatch.setattr(partition_module, "_pages", past_the_deadline)

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task, limit_sec=90)
    assert done.status.value == "TIMEOUT", done.error
    executions = _wait_for_fan_outs(running_aws, limit_sec=90)
    assert [item["status"] for item in executions] == ["SUCCEEDED"]  # the deadline is no fault either
    keys, uploads = leftovers(running_aws)
    assert keys == [] and uploads == []


def test_a_failing_partition_is_retried_alone(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[int] = []
    real = csv_format_module.upload_csv_partition

    def fails_once(upload: Any, columns: Any, partition: int, *args: Any, **kwargs: Any) -> Any:
        runs.append(partition)
        if partition == 1 and runs.count(1) == 1:
            raise RuntimeError("a transient fault in partition 1")
        return real(upload, columns, partition, *args, **kwargs)

    monkeypatch.setattr(csv_format_module, "upload_csv_partition", fails_once)
    task = create(split_worker, {"rows": ROWS})

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task)
    assert done.status.value == "COMPLETED", done.error
    assert sorted(runs) == [0, 1, 1, 2]
    assert done.attempt == 1 and done.retry_count == 0  # the export itself was not retried
    assert _body(running_aws, done.result.key) == _body(running_aws, _single(split_worker, ExportFormat.CSV).result.key)


def test_a_final_partition_error_fails_the_task_with_its_code_and_pages_once(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = csv_format_module.upload_csv_partition

    def query_fails(upload: Any, columns: Any, partition: int, *args: Any, **kwargs: Any) -> Any:
        if partition == 1:
            raise ExportFailed("the query of data source 'db' failed: boom", code=SourceCode.QUERY_FAILED)
        return real(upload, columns, partition, *args, **kwargs)

    monkeypatch.setattr(csv_format_module, "upload_csv_partition", query_fails)
    task = create(split_worker, {"rows": ROWS})

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task)
    assert done.status.value == "FAILED" and done.error.code == SourceCode.QUERY_FAILED
    assert done.retry_count == 0  # final: the export is not tried again
    executions = _wait_for_fan_outs(running_aws)
    # ExportFailed counts the task; the execution succeeds, so FanOutFailed does not page too.
    assert [item["status"] for item in executions] == ["SUCCEEDED"]
    assert leftovers(running_aws) == ([], [])


def test_a_partition_that_keeps_failing_retries_the_export_and_fails_the_execution(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = csv_format_module.upload_csv_partition

    def always_faulty(upload: Any, columns: Any, partition: int, *args: Any, **kwargs: Any) -> Any:
        if partition == 1:
            raise RuntimeError("a fault that outlasts the partition's retries")
        return real(upload, columns, partition, *args, **kwargs)

    monkeypatch.setattr(csv_format_module, "upload_csv_partition", always_faulty)
    task = create(split_worker, {"rows": ROWS})

    assert run(split_worker, task) is Outcome.FANNED_OUT

    executions = _wait_for_fan_outs(running_aws)
    assert [item["status"] for item in executions] == ["FAILED"]
    retried = split_worker.tasks.get(task.task_id)
    assert retried.status.value == "PENDING" and retried.retry_count == 1
    assert retried.error.code == "FAN_OUT_FAILED"


def test_a_split_workbooks_sheets_are_cut_across_its_partitions(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 700 rows a sheet: cuts inside partitions and a sheet spanning two of them (1,000 rows each).
    monkeypatch.setattr(
        xlsx_format_module, "plan_sheets", functools.partial(partitioned_xlsx.plan_sheets, max_rows_per_sheet=700)
    )
    task = create(split_worker, {"rows": ROWS}, ExportFormat.XLSX)

    assert run(split_worker, task) is Outcome.FANNED_OUT

    done = _ended(split_worker, task)
    assert done.status.value == "COMPLETED", done.error
    header, *rows = _cells(running_aws, _single(split_worker, ExportFormat.XLSX).result.key)[0]
    sheets = _cells(running_aws, done.result.key)
    assert [len(sheet) - 1 for sheet in sheets] == [700, 700, 700, 700, 200]
    assert sheets == [[header, *rows[start : start + 700]] for start in range(0, ROWS, 700)]
    book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(_body(running_aws, done.result.key)))
    assert [len(book.get_sheet_by_index(i).to_python()) for i in range(5)] == [701, 701, 701, 701, 201]


def test_partitions_waiting_for_a_source_slot_keep_the_tasks_lease(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    free = threading.Event()
    leases: list[Any] = []
    real = DynamoSourceSlots.acquire

    def busy_until_free(self: Any, source: str, limit: int, holder: str, now: Any) -> Any:
        if "#" in holder and not free.is_set():  # a partition's holder: every slot taken
            leases.append(split_worker.tasks.get(holder.partition("#")[0]).lease_expires_at)
            return None
        return real(self, source, limit, holder, now)

    monkeypatch.setattr(DynamoSourceSlots, "acquire", busy_until_free)
    task = create(split_worker, {"rows": ROWS})
    assert run(split_worker, task) is Outcome.FANNED_OUT
    claimed = split_worker.tasks.get(task.task_id).lease_expires_at

    deadline = time.monotonic() + 30
    while len(leases) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    free.set()

    assert max(leases) > claimed  # renewed while no partition could run
    done = _ended(split_worker, task)
    assert done.status.value == "COMPLETED", done.error
    assert done.rows_written == done.result.rows == ROWS


def test_the_demo_generated_orders_split_into_the_single_workers_file(
    running_aws: Resources,  # noqa: F811
    scratch: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The type make run offers for 5,000,000 rows (exports.toml), at 2,500 rows in 3 partitions;
    # every partition runs with the tenant bound at submit (recorded on the task).
    monkeypatch.setenv("EXPORTS_SHOP_DATABASE_URL", scratch)
    deps = worker_dependencies(monkeypatch, default_path(), scratch, partition_rows=1000, max_partitions=4)
    task = create(deps, {"rows": 2500}, export_type="generated_orders", caller=ACME)

    assert run(deps, task) is Outcome.FANNED_OUT
    assert TaskView.of(deps.tasks.get(task.task_id)).partitions == 3  # shown from the split on

    done = _ended(deps, task)
    assert done.status.value == "COMPLETED", done.error
    assert done.rows_written == done.result.rows == 2500 and set(done.partition_rows) == {"0", "1", "2"}
    assert TaskView.of(done).partitions == 3
    single = create(deps, {"rows": 2500}, export_type="generated_orders", caller=ACME)
    assert run(one_worker(deps), single) is Outcome.COMPLETED
    body = _body(running_aws, done.result.key)
    assert body == _body(running_aws, deps.tasks.get(single.task_id).result.key)
    assert body.splitlines()[1] == b"1,acme-GEN-00000001,2025-01-02,2025-01-01 00:00:06,customer-7,paid,2,79.19,"
    assert all(line.split(b",")[1].startswith(b"acme-GEN-") for line in body.splitlines()[1:])
    _wait_for_fan_outs(running_aws)
    worker.dependencies.cache_clear()
