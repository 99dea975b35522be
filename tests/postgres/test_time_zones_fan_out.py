"""A split export in a time zone (moto executing the fan-out workflow, a real PostgreSQL): its
partitions (written in Python) assemble into the single worker's file (CSV from COPY), across
Berlin's spring-forward change; a workbook's cells and headers agree too."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from exports.core.ids import new_task_id
from exports.core.task import ExportFormat, new_task
from exports.running.endings import Outcome
from functions.worker import handler as worker
from local_stack.embedded_aws import Resources
from tests.integration.conftest import retry_clock, running_aws  # noqa: F401  (moto executing workflows)
from tests.postgres.conftest import write_declaration
from tests.postgres.test_fan_out_worker import _body, _cells, _ended, _wait_for_fan_outs, one_worker
from tests.postgres.test_worker_postgres import run, worker_dependencies

ROWS = 3000
# 37 seconds apart from 2026-03-29 00:00 UTC: 31 hours, across Berlin's 02:00 that never happens.
DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.moments]
description = "instants across a change of offset"
source = "db"
query = \"\"\"
SELECT n, timestamptz '2026-03-29 00:00:00+00' + n * interval '37 seconds' AS at,
       timestamp '2026-03-29 00:00:00' + n * interval '37 seconds' AS wall
FROM generate_series(1, %(rows)s) AS n
\"\"\"
order_key = ["n"]
[types.moments.parameters.rows]
type = "integer"
[types.moments.partitions]
by = "order_key"
"""


@pytest.fixture
def zoned_worker(running_aws: Resources, scratch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:  # noqa: F811
    deps = worker_dependencies(
        monkeypatch, write_declaration(tmp_path, DECLARATION), scratch, partition_rows=1000, max_partitions=4
    )
    yield deps
    _wait_for_fan_outs(running_aws)
    worker.dependencies.cache_clear()


def create(deps: Any, fmt: ExportFormat, zone: str) -> Any:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type="moments",
        format=fmt,
        filters={"rows": ROWS},
        now=now,
        retention=timedelta(hours=1),
        timezone=zone,
    )
    deps.tasks.create(task, max_active=100)
    return task


def split_and_single(deps: Any, fmt: ExportFormat, zone: str) -> tuple[Any, Any]:
    task = create(deps, fmt, zone)
    assert run(deps, task) is Outcome.FANNED_OUT
    done = _ended(deps, task)
    assert done.status.value == "COMPLETED", done.error
    single = create(deps, fmt, zone)
    assert run(one_worker(deps), single) is Outcome.COMPLETED
    return done, deps.tasks.get(single.task_id)


def test_a_split_csv_in_berlin_is_the_single_workers_file(zoned_worker: Any, running_aws: Resources) -> None:  # noqa: F811
    split, single = split_and_single(zoned_worker, ExportFormat.CSV, "Europe/Berlin")

    body = _body(running_aws, split.result.key)
    assert body == _body(running_aws, single.result.key)
    assert len(split.partition_rows) > 1
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0] == ["n", "at", "wall"]
    times = [row[1] for row in rows[1:]]
    assert times[96] == "2026-03-29 01:59:49+01:00" and times[97] == "2026-03-29 03:00:26+02:00"
    assert rows[98][2] == "2026-03-29 01:00:26"  # the wall-clock column is not an instant


def test_a_split_workbook_in_kathmandu_has_the_single_workers_cells(zoned_worker: Any, running_aws: Resources) -> None:  # noqa: F811
    split, single = split_and_single(zoned_worker, ExportFormat.XLSX, "Asia/Kathmandu")

    cells = _cells(running_aws, split.result.key)
    assert cells == _cells(running_aws, single.result.key)
    assert cells[0][0] == ("n", "at (Asia/Kathmandu)", "wall")
    assert cells[0][1][1:] == (datetime(2026, 3, 29, 5, 45, 37), datetime(2026, 3, 29, 0, 0, 37))
