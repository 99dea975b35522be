"""The edges an attack round found from outside (issue 49), each exported through the worker in
every format it allows, on moto and the embedded PostgreSQL, and read back: a ``real`` at its
maximum, JSONB nested 500 levels, a negative parameter before a cast, a column named
``{query}``, duplicate keys of ``json``, large floats, instants past year 9999 in a zone, and
``timestamp`` without zone in Parquet."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from python_calamine import CalamineWorkbook

from exports.domain.ids import new_task_id
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat, new_task
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from tests.pdf_reading import reader
from tests.postgres.conftest import write_declaration
from tests.postgres.test_worker_postgres import run, worker_dependencies

DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.reals]
description = "a real at and near its maximum"
source = "db"
query = '''
SELECT n, x FROM (VALUES
  (1, '3.4028235e38'::real), (2, '-3.4028235e38'::real), (3, '3.4e38'::real), (4, '1e-45'::real)
) AS t (n, x)'''
order_key = ["n"]

[types.deep]
description = "a jsonb document nested 500 levels"
source = "db"
query = "SELECT 1 AS n, (repeat('[', 500) || '1' || repeat(']', 500))::jsonb AS doc"
order_key = ["n"]

[types.negatives]
description = "negative parameters before a cast"
source = "db"
query = "SELECT 1 AS n, %(i)s::text AS i_text, %(d)s::text AS d_text, %(i)s::integer + 1 AS i_plus"
order_key = ["n"]
[types.negatives.parameters.i]
type = "integer"
[types.negatives.parameters.d]
type = "decimal"

[types.braces]
description = "a result column named like a template field"
source = "db"
query = 'SELECT 1 AS n, 2 AS "{query}"'
order_key = ["n"]

[types.json_values]
description = "json with a duplicate key, and large floats"
source = "db"
query = '''
SELECT 1 AS n, '{"a": 1, "a": 2}'::json AS doc,
  3.4e38::float8 AS big, 1e300::float8 AS huge, 1e16::float8 AS round'''
order_key = ["n"]

[types.isolation]
description = "the transaction's isolation level"
source = "db"
query = "SELECT 1 AS n, current_setting('transaction_isolation') AS level"
order_key = ["n"]

[types.instants]
description = "an instant whose local time passes year 9999, and a timestamp without zone"
source = "db"
query = "SELECT 1 AS n, '9999-12-31 23:00:00+00'::timestamptz AS at, '2025-03-01 12:30:05'::timestamp AS local"
order_key = ["n"]
"""

TEXT_FORMATS = [ExportFormat.CSV, ExportFormat.JSONL, ExportFormat.XLSX, ExportFormat.PARQUET, ExportFormat.PDF]


@pytest.fixture
def deps(aws: Resources, scratch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    yield worker_dependencies(monkeypatch, write_declaration(tmp_path, DECLARATION), scratch)
    worker.dependencies.cache_clear()


def export(
    deps: Any, aws: Resources, export_type: str, fmt: ExportFormat, zone: str = "Etc/UTC", **filters: Any
) -> bytes:
    """The file of a task of ``export_type`` in ``fmt``: the task must complete."""
    done = finish(deps, export_type, fmt, zone, **filters)
    assert done.status is TaskStatus.COMPLETED, done.error
    body: bytes = (
        boto3.client("s3", region_name=REGION).get_object(Bucket=aws.bucket, Key=done.result.key)["Body"].read()
    )
    return body


def finish(deps: Any, export_type: str, fmt: ExportFormat, zone: str = "Etc/UTC", **filters: Any) -> Any:
    """A task of ``export_type`` in ``fmt``, run by the worker, as it ended."""
    now = datetime.now(UTC)
    task = new_task(
        task_id=new_task_id(now),
        user_id="alice",
        export_type=export_type,
        format=fmt,
        filters=filters,
        now=now,
        retention=timedelta(hours=1),
        timezone=zone,
    )
    deps.tasks.create(task, max_active=100)
    run(deps, task)
    return deps.tasks.get(task.task_id)


def rows_of(fmt: ExportFormat, body: bytes) -> list[dict[str, Any]]:
    """The file's rows as dicts of its columns, read back as a reader of the format would."""
    if fmt is ExportFormat.CSV:
        return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    if fmt is ExportFormat.JSONL:
        return [json.loads(line) for line in body.decode().splitlines()]
    if fmt is ExportFormat.PARQUET:
        return pq.read_table(pa.BufferReader(body)).to_pylist()
    if fmt is ExportFormat.XLSX:
        sheet = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
        return [dict(zip(map(str, sheet[0]), row, strict=True)) for row in sheet[1:]]
    text = "\n".join(page.extract_text() for page in reader(body).pages)
    return [{"text": text}]


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_a_real_at_its_maximum_exports_in_every_format(deps: Any, aws: Resources, fmt: ExportFormat) -> None:
    rows = rows_of(fmt, export(deps, aws, "reals", fmt))

    if fmt is ExportFormat.PDF:
        # Shown as XLSX shows a number (grouped, every digit), cut to the column's width.
        assert "340,282,35" in rows[0]["text"] and "-340,282,35" in rows[0]["text"]
        return
    values = [float(row["x"]) for row in rows]
    # The float4 widened (Parquet keeps the float4), or PostgreSQL's text of it.
    widened = [3.4028234663852886e38, -3.4028234663852886e38, 3.3999999521443642e38, 1.401298464324817e-45]
    assert values in (widened, [3.4028235e38, -3.4028235e38, 3.4e38, 1e-45])


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_jsonb_nested_500_levels_exports_in_every_format(deps: Any, aws: Resources, fmt: ExportFormat) -> None:
    rows = rows_of(fmt, export(deps, aws, "deep", fmt))

    if fmt is ExportFormat.PDF:
        assert "[[[[" in rows[0]["text"]
        return
    doc = rows[0]["doc"]
    value = doc if fmt is ExportFormat.JSONL else json.loads(doc)
    for _ in range(500):
        (value,) = value
    assert value == 1


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_a_negative_parameter_before_a_cast_exports_in_every_format(
    deps: Any, aws: Resources, fmt: ExportFormat
) -> None:
    rows = rows_of(fmt, export(deps, aws, "negatives", fmt, i=-5, d="-1.50"))

    if fmt is ExportFormat.PDF:
        assert "-5 -1.50 -4" in rows[0]["text"]
        return
    # A CSV text that starts with "-" is guarded against formulas with a leading apostrophe.
    guard = "'" if fmt is ExportFormat.CSV else ""
    assert (rows[0]["i_text"], rows[0]["d_text"], int(rows[0]["i_plus"])) == (f"{guard}-5", f"{guard}-1.50", -4)


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_a_column_named_like_a_template_field_exports_in_every_format(
    deps: Any, aws: Resources, fmt: ExportFormat
) -> None:
    rows = rows_of(fmt, export(deps, aws, "braces", fmt))

    if fmt is ExportFormat.PDF:
        assert "{query}" in rows[0]["text"]
        return
    assert int(rows[0]["{query}"]) == 2


def test_json_keeps_its_duplicate_keys_and_large_floats_stay_floats_in_json_lines(deps: Any, aws: Resources) -> None:
    body = export(deps, aws, "json_values", ExportFormat.JSONL).decode()

    pairs = json.loads(body, object_pairs_hook=lambda items: items)[1][1]
    assert pairs == [("a", 1), ("a", 2)]
    row = json.loads(body)
    assert all(isinstance(row[name], float) for name in ("big", "huge", "round")), body
    assert (row["big"], row["huge"], row["round"]) == (3.4e38, 1e300, 1e16)


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_an_instant_whose_local_time_passes_year_9999_exports_or_parquet_says_why_not(
    deps: Any, aws: Resources, fmt: ExportFormat, caplog: pytest.LogCaptureFixture
) -> None:
    if fmt is not ExportFormat.PARQUET:
        assert rows_of(fmt, export(deps, aws, "instants", fmt, zone="Asia/Tokyo"))
        return
    # The file would hold it, but pyarrow, pandas and Python could not read it back.
    failed = finish(deps, "instants", fmt, zone="Asia/Tokyo")

    assert (failed.status, failed.error.code) == (TaskStatus.FAILED, "PARQUET_VALUE_INVALID")
    assert any("outside years 1 to 9999" in getattr(record, "detail", "") for record in caplog.records)


def test_a_timestamp_without_zone_is_a_local_time_in_parquet(deps: Any, aws: Resources) -> None:
    table = pq.read_table(pa.BufferReader(export(deps, aws, "instants", ExportFormat.PARQUET)))

    assert table.schema.field("local").type == pa.timestamp("us")
    assert table.schema.field("at").type.tz is not None
    assert table.to_pylist()[0]["local"] == datetime(2025, 3, 1, 12, 30, 5)


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda fmt: fmt.value)
def test_every_format_reads_in_one_repeatable_read_snapshot(deps: Any, aws: Resources, fmt: ExportFormat) -> None:
    rows = rows_of(fmt, export(deps, aws, "isolation", fmt))

    assert "repeatable read" in (rows[0]["text"] if fmt is ExportFormat.PDF else rows[0]["level"])
