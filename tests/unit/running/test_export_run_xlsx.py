"""run_export with the XLSX engines: the stream engine by default, openpyxl by configuration;
the time limit for both, the /tmp limit for openpyxl only."""

import hashlib
import io
import shutil
import zipfile
from collections import namedtuple
from datetime import datetime, time

import pytest
from openpyxl import load_workbook
from pydantic import ValidationError

from exports.core.config.env import Env
from exports.core.config.settings import WorkerSettings, XlsxEngine
from exports.core.errors import ExportFailed
from exports.core.task import ExportFormat
from exports.running.export_run import run_export
from exports.running.progress import ProgressReporter
from exports.running.writers import xlsx_limits
from exports.running.writers.xlsx_engine import zip_stream
from tests.unit.export_fakes import NumbersExport, make_world, number_row, running_task

Usage = namedtuple("Usage", "total used free")
ENVIRONMENT = {
    Env.TASKS_TABLE: "tasks",
    Env.TASK_QUEUE_URLS: '{"normal": "https://queue"}',
    Env.RESULTS_BUCKET: "results",
    Env.LIFECYCLE_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:x",
    Env.FAN_OUT_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:fan-out",
    Env.EVENT_BUS: "exports-events",
}


def run(world, task, remaining_ms=None):
    return run_export(task, ProgressReporter(task, world.deps), world.deps, remaining_ms)


def xlsx_export(rows_total=30, remaining_ms=None, **settings):
    world = make_world(NumbersExport(rows_total=rows_total, page_rows=7), **settings)
    result = run(world, running_task(world, fmt=ExportFormat.XLSX), remaining_ms)
    return world, result, world.files.objects[result.key]["body"]


def entries(body):
    return [info.filename for info in zipfile.ZipFile(io.BytesIO(body)).infolist()]


def test_the_stream_engine_is_the_default_and_openpyxl_can_be_chosen_by_environment():
    assert XlsxEngine.DEFAULT == XlsxEngine.STREAM
    assert WorkerSettings.from_env(ENVIRONMENT).xlsx_engine == "stream"
    assert WorkerSettings.from_env({**ENVIRONMENT, Env.XLSX_ENGINE: "openpyxl"}).xlsx_engine == "openpyxl"
    with pytest.raises(ValidationError):
        WorkerSettings.from_env({**ENVIRONMENT, Env.XLSX_ENGINE: "xlsxwriter"})


def test_an_xlsx_export_is_written_by_the_stream_engine_by_default():
    world, result, body = xlsx_export()

    assert "xl/styles.xml" in entries(body) and "docProps/app.xml" not in entries(body)
    rows = list(load_workbook(io.BytesIO(body)).active.iter_rows(values_only=True))
    assert rows[0] == ("N", "Day", "Amount", "Text")
    assert len(rows) == 31 and result.rows == 30
    n, day, amount, _ = number_row(7)
    assert rows[8] == (n, datetime.combine(day, time()), float(amount), "=1+1")
    assert world.files.tags[result.key]["sha256"] == hashlib.sha256(body).hexdigest() == result.sha256
    assert result.bytes == len(body)


def test_both_engines_write_the_same_cells():
    _, _, ours = xlsx_export(rows_total=50)
    _, _, reference = xlsx_export(rows_total=50, xlsx_engine="openpyxl")

    def cells(body):
        sheet = load_workbook(io.BytesIO(body)).active
        return [[(c.value, c.data_type, c.number_format, c.font.b) for c in row] for row in sheet.iter_rows()]

    assert "docProps/app.xml" in entries(reference)
    assert cells(ours) == cells(reference)


def test_the_stream_engine_never_looks_at_the_temporary_disk(monkeypatch, private_tempdir):
    def no_disk(_path):
        raise AssertionError("the stream engine writes no temporary file")

    monkeypatch.setattr(shutil, "disk_usage", no_disk)

    _, result, _ = xlsx_export(rows_total=100)

    assert result.rows == 100
    assert list(private_tempdir.iterdir()) == []


def test_the_stream_engine_stops_with_xlsx_too_large_while_there_is_time_to_abort():
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    looks = []

    def remaining_ms():
        looks.append(1)
        return (
            (xlsx_limits.TIME_MARGIN_SEC + 600) * 1000 if len(looks) < 4 else (xlsx_limits.TIME_MARGIN_SEC - 1) * 1000
        )

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.XLSX), remaining_ms)

    assert failed.value.code == "XLSX_TOO_LARGE"
    assert "40 rows" in failed.value.message
    assert world.files.objects == {} and world.files.uploads == {} and len(world.files.aborted) == 1
    assert world.queue.sent == []


def test_a_workbook_that_would_pass_two_gib_stops_with_xlsx_too_large(monkeypatch):
    monkeypatch.setattr(zip_stream, "MAX_ARCHIVE_BYTES", 3_000)
    world = make_world(NumbersExport(rows_total=1_000, page_rows=100))

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.XLSX))

    assert failed.value.code == "XLSX_TOO_LARGE"
    assert "2 GiB" in failed.value.message and "export CSV or csv.gz" in failed.value.message
    assert world.files.objects == {} and world.files.uploads == {} and len(world.files.aborted) == 1


# The openpyxl engine's disk and save-time limits are tested in test_export_run.py.


def test_the_stream_engine_needs_no_time_to_save_beyond_the_margin():
    # openpyxl needs time to zip its temporary files; the stream engine has written everything.
    _, result, _ = xlsx_export(rows_total=100, remaining_ms=lambda: (xlsx_limits.TIME_MARGIN_SEC + 1) * 1000)
    assert result.rows == 100
