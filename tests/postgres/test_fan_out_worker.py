"""A split export end to end on moto, which executes the fan-out workflow's Distributed Map
(each partition a worker invocation), with a real PostgreSQL: the assembled file equals the
single worker's, and a cancel leaves no object and no open upload."""

from __future__ import annotations

import dataclasses
import io
import time
from pathlib import Path
from typing import Any

import boto3
import openpyxl
import pytest

from exports.domain.task import ExportFormat
from exports.services.control import cancel_export
from exports.services.worker import Outcome
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.integration.conftest import retry_clock, running_aws  # noqa: F401  (moto executing workflows)
from tests.postgres.conftest import write_declaration
from tests.postgres.test_worker_postgres import DECLARATION, create, leftovers, run, worker_dependencies

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


def _wait_for_fan_outs(resources: Resources, limit_sec: float = 60) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    deadline = time.monotonic() + limit_sec
    while True:
        executions = sfn.list_executions(stateMachineArn=resources.fan_out_state_machine_arn)["executions"]
        if all(item["status"] != "RUNNING" for item in executions) or time.monotonic() > deadline:
            return executions
        time.sleep(0.2)


def _ended(deps: Any, task: Any, limit_sec: float = 60) -> Any:
    deadline = time.monotonic() + limit_sec
    while time.monotonic() < deadline:
        current = deps.tasks.get(task.task_id)
        if current.is_terminal:
            return current
        time.sleep(0.2)
    raise AssertionError(f"task still {current.status}")


def _body(resources: Resources, key: str) -> bytes:
    return boto3.client("s3", region_name=REGION).get_object(Bucket=resources.bucket, Key=key)["Body"].read()


def _single(deps: Any, fmt: ExportFormat) -> Any:
    task = create(deps, {"rows": ROWS}, fmt)
    assert run(dataclasses.replace(deps, fan_out=None), task) is Outcome.COMPLETED
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

    def cells(key: str) -> list[list[tuple[Any, ...]]]:
        book = openpyxl.load_workbook(io.BytesIO(_body(running_aws, key)), read_only=True)
        return [list(sheet.iter_rows(values_only=True)) for sheet in book.worksheets]

    assert cells(done.result.key) == cells(single.result.key)
    assert done.result.rows == ROWS


def test_a_cancelled_split_export_leaves_no_object_and_no_upload(
    split_worker: Any,
    running_aws: Resources,  # noqa: F811
) -> None:
    task = create(split_worker, {"rows": ROWS, "pause": "0.002"})

    assert run(split_worker, task) is Outcome.FANNED_OUT
    cancel_export(task.task_id, "alice", split_worker)

    executions = _wait_for_fan_outs(running_aws)
    assert [item["status"] for item in executions] == ["SUCCEEDED"]  # by way of Abandon
    assert split_worker.tasks.get(task.task_id).status.value == "CANCELLED"
    keys, uploads = leftovers(running_aws)
    assert keys == [] and uploads == []
