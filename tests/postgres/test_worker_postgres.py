"""The worker on declared PostgreSQL types, with moto for the tasks, queues and files: exports
that match the database, resumed CSV, failures, the per-source limit, cancel and deadline in
the middle of a query."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pyarrow.parquet as pq
import pytest

from exports.api.control import cancel_export
from exports.core.aws.clients import aws_client
from exports.core.aws.s3_results import S3ResultStore
from exports.core.config.env import Env
from exports.core.export_type import Column, ColumnKind
from exports.core.ids import new_task_id
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, new_task
from exports.core.task_view import TaskView
from exports.finishing.run_mail import run_message
from exports.finishing.webhooks.payload import event_body, event_payload
from exports.running.dynamodb_source_slots import DynamoSourceSlots
from exports.running.endings import Outcome
from exports.running.long_exports import CHECKPOINT_MARGIN_SEC
from exports.running.messages import process_task
from exports.running.writers import parquet_arrow, parquet_writer, xlsx_engine
from exports.schedules.model import Schedule, StoredCaller
from exports_client.models import TaskView as ClientTaskView
from exports_client.render import show, task_details
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.polling import poll_until
from tests.postgres.conftest import backends, write_declaration

PLENTY_MS = (CHECKPOINT_MARGIN_SEC + 600) * 1000
LOW_MS = (CHECKPOINT_MARGIN_SEC - 1) * 1000
DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"
max_concurrent_exports = 2

[types.numbers]
description = "numbers, slowly when asked"
source = "db"
query = "SELECT n, md5(n::text) AS digest FROM generate_series(1, %(rows)s) AS n WHERE pg_sleep(%(pause)s) IS NOT NULL"
order_key = ["n"]
[types.numbers.parameters.rows]
type = "integer"
[types.numbers.parameters.pause]
type = "decimal"
default = "0"

[types.bills]
description = "a relation the database does not have"
source = "db"
query = "SELECT id, total FROM invoices"

[types.bills_own]
description = "the same, with its own message for a failed read"
source = "db"
query = "SELECT id, total FROM invoices"
[types.bills_own.messages]
SOURCE_QUERY_FAILED = "Your bills are not available right now. Quote {reference} to our support."

[types.long_notes]
description = "a text longer than an XLSX cell holds in its third row"
source = "db"
query = "SELECT n, CASE WHEN n = 3 THEN repeat('x', 40000) ELSE 'short' END AS note FROM generate_series(1, 5) AS n"
order_key = ["n"]
"""


class NoLimit:
    """Every task may run now (the tests use one hot key often)."""

    def acquire(self, hot_key: str, now: datetime) -> float:
        return 0.0


def worker_dependencies(monkeypatch: pytest.MonkeyPatch, declaration: Path, uri: str, **settings: Any) -> Any:
    """The worker's real dependencies for ``declaration`` on the database ``uri`` (hot keys
    unlimited), with ``settings`` changed; the handler builds the same from the environment."""
    monkeypatch.setenv(Env.EXPORTS_CONFIG, str(declaration))
    monkeypatch.setenv("DB_URL", uri)
    worker.dependencies.cache_clear()
    real = worker.dependencies()
    return dataclasses.replace(
        real,
        limiter=NoLimit(),
        results=S3ResultStore(aws_client("s3"), real.settings.results_bucket),
        settings=real.settings.model_copy(update=settings),
    )


@pytest.fixture
def pg_worker(aws: Resources, scratch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The worker's real dependencies on moto and a PostgreSQL scratch database."""
    yield worker_dependencies(
        monkeypatch, write_declaration(tmp_path, DECLARATION), scratch, upload_part_bytes=5 * 1024 * 1024
    )
    worker.dependencies.cache_clear()


def create(
    deps: Any,
    filters: dict[str, Any],
    fmt: ExportFormat = ExportFormat.CSV,
    timeout_sec: int = 300,
    export_type: str = "numbers",
    caller: dict[str, Any] | None = None,
) -> Any:
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=fmt,
        filters=filters,
        caller=caller,
        now=now,
        retention=timedelta(hours=1),
        timeout_sec=timeout_sec,
    )
    deps.tasks.create(task, max_active=100)
    return task


def run(deps: Any, task: Any, remaining: Any = None) -> Outcome:
    message = TaskMessage(task.task_id, task.export_type, task.priority)
    return process_task(message, deps, remaining or (lambda: PLENTY_MS))


def time_for_pages(pages: int) -> Any:
    """An invocation that runs out of time after ``pages`` pages (the source looks once first)."""
    looks: list[int] = []

    def remaining() -> int:
        looks.append(1)
        return PLENTY_MS if len(looks) <= pages else LOW_MS

    return remaining


def body_of(aws: Resources, key: str) -> str:
    return boto3.client("s3", region_name=REGION).get_object(Bucket=aws.bucket, Key=key)["Body"].read().decode()


def leftovers(aws: Resources) -> tuple[list[str], list[Any]]:
    s3 = boto3.client("s3", region_name=REGION)
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=aws.bucket).get("Contents", [])]
    return keys, s3.list_multipart_uploads(Bucket=aws.bucket).get("Uploads", [])


def test_an_export_holds_exactly_the_rows_of_the_query(pg_worker: Any, aws: Resources, scratch: str) -> None:
    task = create(pg_worker, {"rows": 12_000})

    assert run(pg_worker, task) is Outcome.COMPLETED

    done = pg_worker.tasks.get(task.task_id)
    lines = list(csv.reader(io.StringIO(body_of(aws, done.result.key))))
    with psycopg.connect(scratch) as conn:
        expected = conn.execute("SELECT n, md5(n::text) FROM generate_series(1, 12000) AS n").fetchall()
    assert lines[0] == ["n", "digest"]
    assert [(int(n), digest) for n, digest in lines[1:]] == expected
    assert done.result.rows == 12_000


def test_a_long_csv_export_resumes_from_its_keyset_cursor_into_the_same_file(pg_worker: Any, aws: Resources) -> None:
    whole_task = create(pg_worker, {"rows": 23_000})
    assert run(pg_worker, whole_task) is Outcome.COMPLETED
    whole = body_of(aws, pg_worker.tasks.get(whole_task.task_id).result.key)

    task = create(pg_worker, {"rows": 23_000, "pause": "0.0"})
    invocations = 0
    while not pg_worker.tasks.get(task.task_id).is_terminal:
        invocations += 1
        run(pg_worker, pg_worker.tasks.get(task.task_id), time_for_pages(2))
        assert invocations < 20

    done = pg_worker.tasks.get(task.task_id)
    assert done.status is TaskStatus.COMPLETED and done.continuations >= 2
    assert body_of(aws, done.result.key) == whole
    assert leftovers(aws)[1] == []


def test_a_text_no_xlsx_cell_holds_fails_the_workbook_naming_its_column_in_the_log_and_csv_holds_it(
    pg_worker: Any, aws: Resources, caplog: pytest.LogCaptureFixture
) -> None:
    workbook = create(pg_worker, {}, fmt=ExportFormat.XLSX, export_type="long_notes")

    assert run(pg_worker, workbook) is Outcome.FAILED

    failed = pg_worker.tasks.get(workbook.task_id)
    assert failed.error.code == "XLSX_CELL_TOO_LONG"
    assert "32,767 characters" in failed.error.message and workbook.task_id in failed.error.message
    assert any("column 'note', row 3: a text of 40,000 characters" in getattr(r, "detail", "") for r in caplog.records)
    assert leftovers(aws) == ([], [])  # no file, no open upload
    text = create(pg_worker, {}, export_type="long_notes")
    assert run(pg_worker, text) is Outcome.COMPLETED
    lines = list(csv.reader(io.StringIO(body_of(aws, pg_worker.tasks.get(text.task_id).result.key))))
    assert lines[3] == ["3", "x" * 40_000]


def _channels(task: Any) -> dict[str, str]:
    """What every channel shows a caller of ``task``: the task (API, console, CLI), the push
    event, the signed webhook's body, the schedule's mail and the CLI's details."""
    now = datetime.now(UTC)
    schedule = Schedule(
        schedule_id="sch_1",
        user_id="alice",
        caller=StoredCaller(user_id="alice"),
        export_type=task.export_type,
        cron="0 8 * * 1",
        created_at=now,
        updated_at=now,
        anchor_at=now,
    )
    view = TaskView.of(task)
    cli = io.StringIO()
    show(task_details(ClientTaskView.model_validate_json(view.model_dump_json())), cli)
    return {
        "task": view.model_dump_json(),
        "push": json.dumps(event_body("export.failed", task, now)),
        "webhook": json.dumps(event_payload(task, now)),
        "mail": run_message(schedule, task, None, None, None).text,
        "cli": cli.getvalue(),
    }


@pytest.mark.parametrize("export_type", ["bills", "bills_own"])
def test_a_failed_query_shows_callers_a_code_and_a_reference_and_logs_the_database_s_words(
    pg_worker: Any, export_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    task = create(pg_worker, {}, export_type=export_type)

    assert run(pg_worker, task) is Outcome.FAILED

    failed = pg_worker.tasks.get(task.task_id)
    assert failed.error.code == "SOURCE_QUERY_FAILED"
    for channel, text in _channels(failed).items():
        for leak in ("invoices", "relation", "42P01", "SQLSTATE", "does not exist", "'db'", "psycopg"):
            assert leak not in text, (channel, leak)
        assert task.task_id in text, channel
    if export_type == "bills_own":
        assert failed.error.message == f"Your bills are not available right now. Quote {task.task_id} to our support."
    logged = [record for record in caplog.records if getattr(record, "task_id", None) == task.task_id]
    assert any('relation "invoices" does not exist (SQLSTATE 42P01)' in getattr(r, "detail", "") for r in logged)


def test_an_unreachable_database_retries_then_fails(
    pg_worker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DB_URL", f"postgresql://postgres@/none?host={tmp_path}")
    worker.dependencies.cache_clear()
    deps = dataclasses.replace(pg_worker, registry=worker.dependencies().registry)
    task = create(deps, {"rows": 10})

    outcomes = []
    for _ in range(task.max_retries + 1):
        outcomes.append(run(deps, deps.tasks.get(task.task_id)))

    assert outcomes == [Outcome.RETRY_SCHEDULED] * task.max_retries + [Outcome.FAILED]
    failed = deps.tasks.get(task.task_id)
    assert failed.error.code == "SOURCE_UNAVAILABLE" and "'db'" not in failed.error.message


def running_in_thread(deps: Any, task: Any) -> tuple[threading.Thread, list[Outcome]]:
    outcomes: list[Outcome] = []
    thread = threading.Thread(target=lambda: outcomes.append(run(deps, task)))
    thread.start()
    return thread, outcomes


def wait_for(condition: Any, within: float = 15) -> None:
    poll_until(condition, timeout_sec=within, fail="condition not met in time")


def test_a_cancel_in_the_middle_of_a_query_stops_it_and_leaves_nothing(
    pg_worker: Any, aws: Resources, scratch: str, atomic_dynamodb: None
) -> None:
    deps = dataclasses.replace(pg_worker, settings=pg_worker.settings.model_copy(update={"progress_interval_sec": 0.5}))
    task = create(deps, {"rows": 1, "pause": "60"})
    thread, outcomes = running_in_thread(deps, task)
    wait_for(lambda: backends(scratch, f"exports:{task.task_id}"))

    cancel_export(task.task_id, "alice", deps)
    thread.join(timeout=20)

    assert outcomes == [Outcome.LOST_OWNERSHIP]
    assert deps.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert leftovers(aws) == ([], [])
    wait_for(lambda: not backends(scratch, f"exports:{task.task_id}"), within=5)


@pytest.mark.parametrize(
    ("fmt", "module", "name", "from_rows_writer"),
    [
        (ExportFormat.PARQUET, parquet_arrow, "write_parquet_batches", parquet_writer.write_parquet_stream),
        (ExportFormat.XLSX, xlsx_engine, "write_xlsx_batches", xlsx_engine.write_xlsx_stream),
    ],
)
def test_a_parquet_or_xlsx_export_is_read_through_arrow_into_the_file_its_rows_make(
    pg_worker: Any,
    aws: Resources,
    scratch: str,
    monkeypatch: pytest.MonkeyPatch,
    fmt: ExportFormat,
    module: Any,
    name: str,
    from_rows_writer: Any,
) -> None:
    # More than one row group (ROW_GROUP_ROWS), one driver batch and one write of the XLSX engine.
    task = create(pg_worker, {"rows": 70_000}, fmt)
    written: list[int] = []
    through_arrow = getattr(module, name)

    def spied(*arguments: Any) -> int:
        written.append(through_arrow(*arguments))
        return written[-1]

    monkeypatch.setattr(module, name, spied)

    assert run(pg_worker, task) is Outcome.COMPLETED
    assert written == [70_000]

    done = pg_worker.tasks.get(task.task_id)
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()
    with psycopg.connect(scratch) as conn:
        rows = conn.execute("SELECT n, md5(n::text) FROM generate_series(1, 70000) AS n").fetchall()
    from_rows = io.BytesIO()
    columns = [Column("n", "n", ColumnKind.INTEGER), Column("digest", "digest", ColumnKind.STRING)]
    from_rows_writer(columns, iter(rows), from_rows)
    assert body == from_rows.getvalue() and done.result.rows == 70_000
    if fmt is ExportFormat.PARQUET:
        assert pq.ParquetFile(io.BytesIO(body)).metadata.num_row_groups == 2


def test_a_cancel_in_the_middle_of_a_parquet_query_stops_it_and_leaves_nothing(
    pg_worker: Any, aws: Resources, scratch: str, atomic_dynamodb: None
) -> None:
    deps = dataclasses.replace(pg_worker, settings=pg_worker.settings.model_copy(update={"progress_interval_sec": 0.5}))
    task = create(deps, {"rows": 1, "pause": "60"}, ExportFormat.PARQUET)
    thread, outcomes = running_in_thread(deps, task)
    wait_for(lambda: backends(scratch, f"exports:{task.task_id}"))

    cancel_export(task.task_id, "alice", deps)
    thread.join(timeout=20)

    assert outcomes == [Outcome.LOST_OWNERSHIP]
    assert deps.tasks.get(task.task_id).status is TaskStatus.CANCELLED
    assert leftovers(aws) == ([], [])
    wait_for(lambda: not backends(scratch, f"exports:{task.task_id}"), within=5)


def test_a_deadline_in_the_middle_of_a_query_times_the_task_out(pg_worker: Any, aws: Resources, scratch: str) -> None:
    task = create(pg_worker, {"rows": 1, "pause": "60"}, timeout_sec=10)

    started = time.monotonic()
    outcome = run(pg_worker, task)

    assert outcome in (Outcome.TIMED_OUT, Outcome.LOST_OWNERSHIP)
    assert time.monotonic() - started < 25
    assert pg_worker.tasks.get(task.task_id).status is TaskStatus.TIMEOUT
    assert leftovers(aws) == ([], [])
    wait_for(lambda: not backends(scratch, f"exports:{task.task_id}"), within=5)


def test_the_source_limit_holds_across_concurrent_workers_and_defers_the_rest(
    pg_worker: Any, aws: Resources, scratch: str, atomic_dynamodb: None
) -> None:
    tasks = [create(pg_worker, {"rows": 3, "pause": f"1.{index}"}) for index in range(5)]
    most = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            most[0] = max(most[0], len(backends(scratch)))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [running_in_thread(pg_worker, task) for task in tasks]
    for thread, _ in threads:
        thread.join(timeout=30)
    stop.set()
    watcher.join()

    outcomes = [outcome for _, results in threads for outcome in results]
    assert sorted(outcomes).count(Outcome.COMPLETED) == 2 and outcomes.count(Outcome.DEFERRED) == 3
    assert most[0] == 2
    deferred = [task for task, (_, results) in zip(tasks, threads, strict=True) if results == [Outcome.DEFERRED]]
    assert all(pg_worker.tasks.get(task.task_id).status is TaskStatus.PENDING for task in deferred)
    slots = DynamoSourceSlots(aws_client("dynamodb"), pg_worker.settings.tasks_table)
    assert slots.holders("db", 2) == []  # released after each run
    # Deferred, never lost: each comes back and completes once a slot is free.
    for task in deferred:
        assert run(pg_worker, pg_worker.tasks.get(task.task_id)) is Outcome.COMPLETED


@pytest.fixture
def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from tests.integration.conftest import serialise_shared_state

    serialise_shared_state(monkeypatch)
    yield
