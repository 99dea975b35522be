"""Planning a split export: the worker that claimed the task counts its partitions and, when
there is more than one, stages the plan, starts the one upload and the fan-out workflow.

Staging: the plan and each partition's result (its parts, its pieces' checksums, the head and
tail bytes it held back) are objects under the attempt's folder (``<task>/<attempt>/fan-out/``),
read by the next step and deleted once the file is assembled or abandoned; a Step Functions
payload holds only 256 KiB. Nothing in this package writes the task's state except through the
progress reporter (conditional on status and attempt, which is how a cancel or the deadline
stops every partition between two parts) and the endings in :mod:`exports.running.endings`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pydantic import BaseModel

from exports.core.errors import LostOwnership
from exports.core.export_type import AnyExportType, Row, RunControl
from exports.core.partitions import PartitionSpec
from exports.core.ports import RemainingMs
from exports.core.status import TaskStatus
from exports.core.task import Task, split
from exports.running.attempt_files import AttemptFiles
from exports.running.dependencies import WorkerDependencies
from exports.running.export_run import result_target, run_control, task_columns, task_zone, upload_metadata
from exports.running.formats.registry import format_spec
from exports.running.formats.split import FileLayout, FirstRows
from exports.running.progress import ProgressReporter
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS
from exports.running.writers.partitioned import SheetPiece

logger = logging.getLogger(__name__)


# The staged plan of an attempt, beside its partitions' results (``partition-<k>``).
PLAN = "plan.json"


@dataclass(frozen=True)
class FanOutPlan:
    """What every step of one split attempt reads: the file, the upload and the partitions."""

    key: str
    file_name: str
    content_type: str
    upload_id: str
    specs: Sequence[PartitionSpec]
    widths: Sequence[int] = ()
    pieces: Sequence[SheetPiece] = ()

    @property
    def layout(self) -> FileLayout:
        """What the partitions and the assembler share besides the rows."""
        return FileLayout(self.widths, self.pieces)

    def to_json(self) -> bytes:
        """The staged plan."""
        body = {**asdict(self), "specs": [spec.to_json() for spec in self.specs]}
        return json.dumps(body).encode()

    @classmethod
    def from_json(cls, blob: bytes) -> FanOutPlan:
        """The plan read back."""
        body = json.loads(blob)
        return cls(
            **{
                **body,
                "specs": [PartitionSpec.from_json(spec) for spec in body["specs"]],
                "pieces": [SheetPiece(**piece) for piece in body["pieces"]],
            }
        )


@dataclass(frozen=True)
class Planned:
    """What planning decided: ``split`` (the fan-out workflow writes the file), or one worker
    writes it, of ``rows`` rows when the plan counted them (progress is measured against it)."""

    split: bool
    rows: int | None = None


def start_fan_out(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> Planned:
    """Plan the claimed ``task``; when it splits in more than one partition, record the split on
    the task, stage the plan, start the upload and the workflow (the task stays RUNNING: the
    workflow ends it). Otherwise the export runs in this worker as usual. ``remaining_ms``: the
    invocation's time left, which bounds the planning query."""
    split_layout = format_spec(task.format).split
    if task.continuations or split_layout is None:
        return Planned(split=False)
    attempt = AttemptFiles(task, deps.results)
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    control = run_control(task, progress, deps, remaining_ms)
    specs = export_type.plan_partitions(filters, control, deps.settings.partition_rows, deps.settings.max_partitions)
    if specs is None or len(specs) < 2:
        return Planned(split=False, rows=sum(spec.rows for spec in specs) if specs is not None else None)

    def first_rows() -> FirstRows:
        # In the task's zone, as the single worker writes (and fits its widths to) them.
        zoned = task_zone(task, export_type, filters, control)
        columns = zoned.columns(task_columns(task, export_type, filters))
        first = _first_rows(export_type, filters, specs, control)
        convert = zoned.row_converter(columns)
        return FirstRows(columns, convert(first) if convert is not None else first)

    layout = split_layout.plan(first_rows, [spec.rows for spec in specs])
    target = result_target(task, export_type, filters)
    upload = attempt.start(target, upload_metadata(task, export_type))
    plan = FanOutPlan(
        target.key, target.file_name, target.content_type, upload.upload_id, specs, layout.widths, layout.pieces
    )
    try:
        attempt.stage(PLAN, plan.to_json())
        deps.tasks.update_partitions(task, split(task, len(specs)))
        deps.fan_out.start(task.task_id, task.attempt, len(specs))
    except BaseException:
        clean_up(attempt, plan)
        raise
    logger.info("export split into partitions", extra={"partitions": len(specs), "rows": sum(s.rows for s in specs)})
    return Planned(split=True)


def _first_rows(
    export_type: AnyExportType, filters: BaseModel, specs: Sequence[PartitionSpec], control: RunControl
) -> list[Row]:
    rows: list[Row] = []
    for spec in specs:
        for page in export_type.partition_stream(filters, spec, control):
            rows.extend(page.rows[: WIDTH_SAMPLE_ROWS - len(rows)])
            if len(rows) >= WIDTH_SAMPLE_ROWS:
                return rows
    return rows


def owned_task(task_id: str, attempt: int, deps: WorkerDependencies) -> Task:
    task = deps.tasks.get(task_id)
    if task is None or task.status is not TaskStatus.RUNNING or task.attempt != attempt:
        raise LostOwnership(f"task {task_id} is no longer running attempt {attempt}")
    return task


def load_plan(task: Task, files: AttemptFiles) -> FanOutPlan:
    blob = files.staged(PLAN)
    if blob is None:
        raise LostOwnership(f"task {task.task_id} has no plan for attempt {task.attempt}")
    return FanOutPlan.from_json(blob)


def clean_up(files: AttemptFiles, plan: FanOutPlan) -> None:
    """No object and no open upload stay behind (one that cannot be aborted now is left to the
    bucket's rule for incomplete uploads)."""
    files.abort(plan.key, plan.upload_id)
    files.remove(plan.key)
    files.unstage(staged_names(plan))


def staged_names(plan: FanOutPlan) -> list[str]:
    return [PLAN, *(partition_name(partition) for partition in range(len(plan.specs)))]


def partition_name(partition: int) -> str:
    return f"partition-{partition}"
