"""run_export with fakes: one complete file, hand-over to new invocations, clean failures, progress."""

import gzip
import hashlib
import io
import itertools
import shutil
import zlib
from collections import namedtuple

import pytest
from openpyxl import load_workbook

from exports.core.errors import ExportFailed, LostOwnership, RetryableError
from exports.core.ports import TaskMessage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat
from exports.running.checkpoint import decode_checkpoint, encode_checkpoint
from exports.running.endings import Outcome
from exports.running.export_run import run_export
from exports.running.formats.run import HandedOver
from exports.running.long_exports import CHECKPOINT_MARGIN_SEC, HANDOVER_DELAY_SEC, MAX_CONTINUATIONS
from exports.running.messages import process_task
from exports.running.progress import ProgressReporter
from exports.running.writers import xlsx_limits
from tests.unit.builders import make_task
from tests.unit.export_fakes import (
    NumbersExport,
    PlainNumbersExport,
    make_world,
    number_row,
    numbers_in,
    reclaim,
    running_task,
)

PLENTY_MS = (CHECKPOINT_MARGIN_SEC + 600) * 1000
LOW_MS = (CHECKPOINT_MARGIN_SEC - 1) * 1000


def budget(checks_with_time_left):
    """Remaining time that is plenty for the first ``checks_with_time_left`` looks, then low."""
    calls = []

    def remaining_ms():
        calls.append(1)
        return PLENTY_MS if len(calls) <= checks_with_time_left else LOW_MS

    return remaining_ms


def run(world, task, remaining_ms=None):
    return run_export(task, ProgressReporter(task, world.deps), world.deps, remaining_ms)


def run_in_invocations(world, task, pages_per_invocation):
    """Invoke until the export completes; each invocation has time for a few pages."""
    invocations = 1
    while True:
        outcome = run(world, task, budget(pages_per_invocation - 1))
        if not isinstance(outcome, HandedOver):
            return outcome, invocations
        invocations += 1
        task = reclaim(world, task.task_id)


def one_shot(fmt, export_type=None, **fields):
    world = make_world(export_type or NumbersExport())
    result = run(world, running_task(world, fmt=fmt, **fields))
    return result, world.files.objects[result.key]["body"]


@pytest.mark.parametrize("fmt", [ExportFormat.CSV, ExportFormat.CSV_GZ])
def test_an_export_out_of_time_continues_in_new_invocations_and_ends_as_one_file(fmt):
    expected_result, expected_body = one_shot(fmt, csv_bom=True)
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    task = running_task(world, fmt=fmt, csv_bom=True)

    result, invocations = run_in_invocations(world, task, pages_per_invocation=3)

    assert invocations == 4
    body = world.files.objects[result.key]["body"]
    assert result.sha256 == hashlib.sha256(body).hexdigest()
    assert (result.rows, result.bytes) == (100, len(body))
    if fmt is ExportFormat.CSV:
        assert body == expected_body
        assert result == expected_result
    else:
        # Each hand-over flushes the compressor, so the deflate blocks differ; the content may not.
        assert gzip.decompress(body) == gzip.decompress(expected_body)
    assert world.files.tags[result.key] == {"rows": "100", "bytes": str(len(body)), "sha256": result.sha256}
    assert world.files.checkpoints == {} and world.files.uploads == {} and world.files.aborted == []
    assert world.tasks.get(task.task_id).continuations == 3
    if fmt is ExportFormat.CSV_GZ:
        inflate = zlib.decompressobj(wbits=31)
        text = inflate.decompress(body)
        assert inflate.eof and inflate.unused_data == b""  # one gzip member
        assert text.startswith(b"\xef\xbb\xbfN,Day,Amount,Text\r\n")
        assert text.count(b"\xef\xbb\xbf") == 1 and text.count(b"N,Day") == 1


def test_a_multi_part_export_carries_unsent_bytes_and_part_numbers_across_invocations():
    export = NumbersExport(rows_total=260_000, page_rows=5_000)
    expected_result, expected_body = one_shot(ExportFormat.CSV, export)
    world = make_world(export)

    result, invocations = run_in_invocations(world, running_task(world), pages_per_invocation=7)

    body = world.files.objects[result.key]["body"]
    assert invocations == 8  # 52 pages, 7 an invocation
    assert len(body) > 2 * 5 * 1024 * 1024
    assert world.files.objects[result.key]["parts"] == len(body) // (5 * 1024 * 1024) + 1
    assert body == expected_body
    assert result.sha256 == expected_result.sha256 == hashlib.sha256(body).hexdigest()


def test_the_hand_over_saves_a_checkpoint_and_queues_the_task_without_spending_a_retry():
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    task = running_task(world)

    assert isinstance(run(world, task, budget(3)), HandedOver)

    waiting = world.tasks.get(task.task_id)
    assert waiting.status is TaskStatus.PENDING
    assert (waiting.continuations, waiting.retry_count, waiting.error) == (1, 0, None)
    assert (waiting.rows_written, waiting.progress) == (40, 40)
    assert waiting.lease_expires_at is None
    ((message, delay),) = world.queue.sent
    assert (message.task_id, delay) == (task.task_id, HANDOVER_DELAY_SEC)
    (blob,) = world.files.checkpoints.values()
    checkpoint, tail = decode_checkpoint(blob)
    assert (checkpoint.rows, checkpoint.cursor, checkpoint.parts) == (40, {"next": 40}, [])
    assert checkpoint.bytes == len(tail) > 0
    assert len(world.files.uploads) == 1 and not world.files.aborted
    assert ("ExportContinued", 1) in world.metrics.points


def test_without_a_time_budget_the_export_never_hands_over():
    world = make_world(NumbersExport(rows_total=50, page_rows=1))
    result = run(world, running_task(world))
    assert result.rows == 50 and world.queue.sent == []


def test_the_worker_passes_the_invocations_time_left_to_the_run():
    world = make_world(NumbersExport())
    task = make_task(export_type="numbers", format=ExportFormat.CSV, filters={})
    world.tasks.tasks[task.task_id] = task
    message = TaskMessage(task.task_id, task.export_type, task.priority)
    assert process_task(message, world.deps, budget(0)) is Outcome.CONTINUED
    assert world.tasks.get(task.task_id).rows_written == 10


def test_a_type_without_cursors_fails_export_too_long_and_leaves_nothing_behind():
    world = make_world(PlainNumbersExport())
    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, export_type="plain_numbers"), budget(0))
    assert failed.value.code == "EXPORT_TOO_LONG"
    assert "cannot continue" in failed.value.message
    assert world.files.uploads == {} and world.files.objects == {} and world.files.checkpoints == {}
    assert len(world.files.aborted) == 1


def test_continuations_are_bounded():
    world = make_world(NumbersExport())
    task = running_task(world, continuations=MAX_CONTINUATIONS)
    with pytest.raises(ExportFailed) as failed:
        run(world, task, budget(0))
    assert failed.value.code == "EXPORT_TOO_LONG"
    assert world.queue.sent == []


def test_a_failure_after_resuming_aborts_the_upload_and_drops_the_checkpoint():
    def fail_at_60(first):
        if first == 60:
            raise RetryableError("source throttled")

    world = make_world(NumbersExport(before_page=fail_at_60))
    task = running_task(world)
    assert isinstance(run(world, task, budget(2)), HandedOver)

    with pytest.raises(RetryableError):
        run(world, reclaim(world, task.task_id))

    assert world.files.uploads == {} and world.files.checkpoints == {} and world.files.objects == {}
    assert world.files.aborted == ["upload-1"]


@pytest.mark.parametrize("damage", ["fingerprint", "garbage"])
def test_a_checkpoint_that_does_not_fit_is_discarded_and_the_export_starts_over(damage):
    expected_result, expected_body = one_shot(ExportFormat.CSV)
    world = make_world(NumbersExport())
    task = running_task(world)
    assert isinstance(run(world, task, budget(2)), HandedOver)
    (key,) = world.files.checkpoints
    if damage == "garbage":
        world.files.checkpoints[key] = b"not a checkpoint"
    else:
        checkpoint, tail = decode_checkpoint(world.files.checkpoints[key])
        other = checkpoint.model_copy(update={"fingerprint": "0" * 64})
        world.files.checkpoints[key] = encode_checkpoint(other, tail)

    result = run(world, reclaim(world, task.task_id))

    assert world.files.objects[result.key]["body"] == expected_body
    assert result.rows == expected_result.rows == 100
    assert world.files.checkpoints == {}
    if damage == "fingerprint":
        assert world.files.aborted == ["upload-1"]


def test_a_task_taken_away_during_the_hand_over_leaves_nothing_behind():
    world = make_world(NumbersExport())
    task = running_task(world)

    def cancel(first):
        if first == 20:
            current = world.tasks.get(task.task_id)
            world.tasks.tasks[task.task_id] = current.model_copy(update={"status": TaskStatus.CANCELLED})

    numbers_in(world.deps.registry).before_page = cancel
    with pytest.raises(LostOwnership) as lost:
        run(world, task, budget(2))

    assert type(lost.value) is LostOwnership
    assert world.files.uploads == {} and world.files.checkpoints == {} and world.files.objects == {}


def test_progress_is_written_at_most_every_interval_against_the_expected_rows():
    world = make_world(NumbersExport(rows_total=100, page_rows=5, expected=200, before_page=lambda _: None))
    numbers_in(world.deps.registry).before_page = lambda _: world.clock.advance(0.7)
    task = running_task(world)
    started = world.clock()

    run(world, task)

    times = [started]
    for moment, _ in world.tasks.writes:
        assert moment is not None  # the world's tasks fake writes with its clock
        times.append(moment)
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(times)]
    assert len(gaps) >= 5 and all(gap >= 2.0 for gap in gaps)
    percents = [written.progress for _, written in world.tasks.writes]
    rows = [written.rows_written for _, written in world.tasks.writes]
    assert percents == [r * 100 // 200 for r in rows]
    assert percents == sorted(percents) and max(percents) == 45


def test_progress_is_measured_against_the_plans_count_when_the_type_knows_none():
    # A type that splits when large counted its rows to plan; a single worker's run of it uses that.
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    numbers_in(world.deps.registry).before_page = lambda _: world.clock.advance(2.5)
    task = running_task(world)

    run_export(task, ProgressReporter(task, world.deps), world.deps, None, planned_rows=400)

    assert [written.progress for _, written in world.tasks.writes][:3] == [2, 5, 7]


@pytest.mark.parametrize("fmt", [ExportFormat.CSV, ExportFormat.JSONL, ExportFormat.PDF, ExportFormat.PARQUET])
def test_progress_of_an_unplanned_export_is_rows_read_against_the_sources_count_not_the_estimate(fmt):
    # The submit's estimate is the mean of the type's recent runs (3,000 rows here); the run
    # counts its own 100 rows, so each write is rows read against them, not 100/3,000 = 3 %.
    world = make_world(NumbersExport(rows_total=100, page_rows=10, fractions=False, counted=100))
    numbers_in(world.deps.registry).before_page = lambda _: world.clock.advance(2.5)
    task = running_task(world, fmt=fmt).model_copy(update={"estimated_rows": 3000})

    run(world, task)

    writes = [written for _, written in world.tasks.writes]
    assert len(writes) >= 5
    assert [written.progress for written in writes] == [min(written.rows_written, 99) for written in writes]


def test_a_long_export_counts_its_rows_once_and_its_continuations_go_on_against_that_count():
    world = make_world(NumbersExport(rows_total=100, page_rows=10, fractions=False, counted=100))
    export = numbers_in(world.deps.registry)
    export.before_page = lambda _: world.clock.advance(2.5)
    task = running_task(world).model_copy(update={"estimated_rows": 3000})

    result, invocations = run_in_invocations(world, task, pages_per_invocation=3)

    assert result.rows == 100 and invocations > 2
    assert export.counts == 1  # a count(*) can be long: the checkpoint carries it on
    writes = [written for _, written in world.tasks.writes if written.status is TaskStatus.RUNNING]
    assert [written.progress for written in writes] == [min(written.rows_written, 99) for written in writes]


def test_progress_of_a_source_that_knows_nothing_follows_the_submits_estimate():
    world = make_world(NumbersExport(rows_total=100, page_rows=10, fractions=False))
    numbers_in(world.deps.registry).before_page = lambda _: world.clock.advance(2.5)
    task = running_task(world).model_copy(update={"estimated_rows": 50})

    run(world, task)

    percents = [written.progress for _, written in world.tasks.writes]
    assert percents[:4] == [20, 40, 60, 80] and max(percents) == 99  # past the estimate: 99 until done


def test_progress_without_an_expected_count_follows_the_sources_fraction():
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    numbers_in(world.deps.registry).before_page = lambda _: world.clock.advance(2.5)
    run(world, running_task(world))
    assert [written.progress for _, written in world.tasks.writes] == [10, 20, 30, 40, 50, 60, 70, 80, 90, 99]


@pytest.mark.parametrize(
    ("fmt", "content_type", "file_name"),
    [
        (ExportFormat.CSV, "text/csv; charset=utf-8", "numbers.csv"),
        (ExportFormat.CSV_GZ, "application/gzip", "numbers.csv.gz"),
        (ExportFormat.XLSX, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "numbers.xlsx"),
    ],
)
def test_each_format_has_its_content_type_file_name_and_upload_metadata(fmt, content_type, file_name):
    world = make_world(NumbersExport())
    task = running_task(world, fmt=fmt)
    result = run(world, task)
    assert (result.content_type, result.file_name) == (content_type, file_name)
    assert result.key == f"results/{task.task_id}/{task.attempt}/{file_name}"
    assert world.files.objects[result.key]["metadata"] == {
        "task-id": task.task_id,
        "export-type": "numbers",
        "format": fmt.value,
        "content_type": content_type,
        "file_name": file_name,
    }


def test_a_csv_gz_file_decompresses_to_the_csv_file():
    _, csv_body = one_shot(ExportFormat.CSV)
    _, gz_body = one_shot(ExportFormat.CSV_GZ)
    assert gzip.decompress(gz_body) == csv_body
    assert len(gz_body) < len(csv_body)


def test_an_xlsx_export_holds_every_row_typed():
    world = make_world(NumbersExport(rows_total=30, page_rows=7))
    result = run(world, running_task(world, fmt=ExportFormat.XLSX))
    body = world.files.objects[result.key]["body"]
    sheet = load_workbook(io.BytesIO(body)).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("N", "Day", "Amount", "Text")
    assert len(rows) == 31 and result.rows == 30
    assert rows[8][0] == 7 and rows[8][3] == "=1+1"
    assert world.files.tags[result.key]["sha256"] == hashlib.sha256(body).hexdigest() == result.sha256


def test_an_xlsx_export_stops_with_xlsx_too_large_while_there_is_time_to_abort(private_tempdir):
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    calls = []

    def remaining_ms():
        calls.append(1)
        return (
            (xlsx_limits.TIME_MARGIN_SEC + 600) * 1000 if len(calls) < 4 else (xlsx_limits.TIME_MARGIN_SEC - 1) * 1000
        )

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.XLSX), remaining_ms)

    assert failed.value.code == "XLSX_TOO_LARGE"
    assert "40 rows" in failed.value.message
    assert world.files.objects == {} and world.files.uploads == {} and len(world.files.aborted) == 1
    assert list(private_tempdir.iterdir()) == []
    assert world.queue.sent == []


Usage = namedtuple("Usage", "total used free")


def test_an_xlsx_export_stops_before_the_temporary_disk_fills_up(monkeypatch):
    readings = iter([Usage(10**10, 10**9, 10**9), Usage(10**10, 10**9, 10**9), Usage(10**10, 10**9, 10**6)])
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: next(readings))
    world = make_world(NumbersExport(rows_total=100, page_rows=10), xlsx_engine="openpyxl")

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.XLSX))

    assert failed.value.code == "XLSX_TOO_LARGE"
    assert "temporary disk" in failed.value.message and "after 20 rows" in failed.value.message
    assert world.files.objects == {}


def test_the_xlsx_time_limit_includes_saving_what_the_temporary_files_hold(monkeypatch):
    grown = 10 * xlsx_limits.SAVE_BYTES_PER_SEC  # ten seconds of saving
    readings = iter([Usage(10**12, 0, 10**11)] + [Usage(10**12, grown, 10**11)] * 20)
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: next(readings))
    world = make_world(NumbersExport(rows_total=100, page_rows=10), xlsx_engine="openpyxl")
    just_enough_without_saving = (xlsx_limits.TIME_MARGIN_SEC + 5) * 1000

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.XLSX), lambda: just_enough_without_saving)
    assert failed.value.code == "XLSX_TOO_LARGE"

    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**12, 0, 10**11))
    result = run(world, running_task(world, fmt=ExportFormat.XLSX), lambda: just_enough_without_saving)
    assert result.rows == 100


def test_rows_of_the_numbers_fake_are_what_the_files_hold():
    # The fakes themselves: a wrong fake would make every test above pass for the wrong reason.
    _, body = one_shot(ExportFormat.CSV)
    lines = body.decode().split("\r\n")
    assert lines[0] == "N,Day,Amount,Text"
    assert lines[8] == f"7,{number_row(7)[1].isoformat()},0.07,'=1+1"
    assert len(lines) == 102 and lines[-1] == ""


def test_a_task_without_the_csv_formula_guard_writes_text_exactly():
    _, body = one_shot(ExportFormat.CSV, csv_formula_guard=False)
    lines = body.decode().split("\r\n")
    assert lines[8] == f"7,{number_row(7)[1].isoformat()},0.07,=1+1"
