"""run_export writing a PDF: one pass into the multipart upload, the heading on the first page,
PDF_TOO_LARGE before the time runs out (nothing left behind), never split by the fan-out."""

from __future__ import annotations

from typing import Any

import pytest

from exports.core.errors import ExportFailed
from exports.core.task import ExportFormat
from exports.running.export_run import run_export
from exports.running.fan_out.plan import start_fan_out
from exports.running.formats import pdf as pdf_format
from exports.running.formats.registry import format_spec
from exports.running.progress import ProgressReporter
from tests.pdf_reading import page_lines, qpdf_check, reader
from tests.unit.export_fakes import NumbersExport, make_world, number_row, running_task


def run(world: Any, task: Any, remaining_ms: Any = None) -> Any:
    return run_export(task, ProgressReporter(task, world.deps), world.deps, remaining_ms)


def test_a_pdf_export_is_one_file_of_every_row_with_the_heading_on_its_first_page() -> None:
    world = make_world(NumbersExport(rows_total=120, page_rows=7), upload_part_bytes=5 * 2**20)

    result = run(world, running_task(world, fmt=ExportFormat.PDF))

    body = world.files.objects[result.key]["body"]
    assert result.rows == 120 and result.content_type == "application/pdf"
    assert result.file_name.endswith(".pdf") and result.bytes == len(body)
    assert qpdf_check(body).returncode == 0
    pages = reader(body).pages
    first = [line.text for line in page_lines(pages[0])]
    assert first[0] == "Numbered rows."
    assert first[1] == "Filters: none"
    assert first[2] == f"Generated: {world.clock():%Y-%m-%d %H:%M:%S} UTC"
    texts = "\n".join(line.text for page in pages for line in page_lines(page))
    # Each row's number and its text (王芳 included) are in the file, in order.
    positions = [texts.index(f"row {n} 王芳") for n in range(1, 120) if number_row(n)[3].startswith("row")]
    assert positions == sorted(positions)


def test_a_pdf_stops_with_pdf_too_large_while_there_is_time_to_abort() -> None:
    world = make_world(NumbersExport(rows_total=100, page_rows=10))
    looks: list[int] = []

    def remaining_ms() -> float:
        looks.append(1)
        margin = pdf_format.TIME_MARGIN_SEC
        return (margin + 600) * 1000 if len(looks) < 4 else (margin - 1) * 1000

    with pytest.raises(ExportFailed) as failed:
        run(world, running_task(world, fmt=ExportFormat.PDF), remaining_ms)

    assert failed.value.code == "PDF_TOO_LARGE"
    assert world.files.objects == {} and world.files.uploads == {} and len(world.files.aborted) == 1
    assert world.queue.sent == []


class _Partitioned(NumbersExport):
    """A type that would split: planning a PDF of it must not even be asked."""

    def plan_partitions(self, *args: Any) -> Any:
        raise AssertionError("a PDF export was planned for splitting")


def test_a_pdf_export_is_never_split() -> None:
    world = make_world(_Partitioned(rows_total=100, page_rows=10))
    # The world has a fan-out: the format alone keeps the export in one worker.
    deps = world.deps
    task = running_task(world, fmt=ExportFormat.PDF)

    planned = start_fan_out(task, ProgressReporter(task, deps), deps)

    assert not format_spec(ExportFormat.PDF).splittable and planned.split is False
    with pytest.raises(AssertionError):
        start_fan_out(running_task(world, fmt=ExportFormat.CSV), ProgressReporter(task, deps), deps)
