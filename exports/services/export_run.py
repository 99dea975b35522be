"""Running one export: pages from the source, through the format's writer, into parts on S3.

One claimed task runs :func:`run_export`. It builds the :class:`~exports.formats.run.ExportRun`
(the type, its filters and columns in the task's zone, the attempt's files, the checkpoint it
goes on from, progress against the expected rows when the type knows them) and hands it to its
format's writer (:func:`exports.formats.registry.format_spec`), which finishes with one
complete object whose rows, bytes and sha256 are both in the :class:`ExportResult` and in the
object's tags.

The worker handler passes the time its invocation has left. An export of a format that can
continue (CSV, JSON Lines) and runs short of it continues in a new invocation from a checkpoint
(:mod:`exports.services.long_exports`), and :func:`run_export` returns
:class:`~exports.formats.run.HandedOver` (a value: handing over is how a long export goes on,
not a fault). The other formats stop in time with their own error. A failed export aborts its
upload and deletes its checkpoint: no partial file
(:class:`exports.services.attempt_files.AttemptFiles` owns them).
"""

from __future__ import annotations

from pydantic import BaseModel

from exports.domain.task import ExportResult, Task
from exports.domain.zones import is_utc
from exports.export_types.base import AnyExportType, Column, RunControl
from exports.formats.registry import format_spec
from exports.formats.run import ExportRun, HandedOver, PageProgress, RunBudget, TaskRunControl
from exports.ports import RemainingMs
from exports.services.attempt_files import AttemptFiles, ResultTarget, attempt_key
from exports.services.dependencies import WorkerDependencies
from exports.services.long_exports import Checkpoints, export_fingerprint
from exports.services.progress import ProgressReporter
from exports.writers.zones import ZonedExport


def result_target(task: Task, export_type: AnyExportType, filters: BaseModel) -> ResultTarget:
    """The key, download name and content type of the attempt's file."""
    spec = format_spec(task.format)
    file_name = f"{export_type.file_stem(filters)}.{spec.extension}"
    return ResultTarget(attempt_key(task, file_name), file_name, spec.content_type_of(task))


def upload_metadata(task: Task, export_type: AnyExportType) -> dict[str, str]:
    """The metadata on the attempt's upload (and so on its file)."""
    return {"task-id": task.task_id, "export-type": export_type.name, "format": task.format.value}


def task_columns(task: Task, export_type: AnyExportType, filters: BaseModel) -> list[Column]:
    """The type's columns for ``filters``, their headers in the task's locale (JSON Lines and
    Parquet write names, not headers)."""
    return [column.in_locale(task.locale) for column in export_type.columns(filters)]


def task_zone(task: Task, export_type: AnyExportType, filters: BaseModel, control: RunControl) -> ZonedExport:
    """How the task's time zone changes its file (exports.writers.zones): the type is asked
    for its instant columns (a SQL type describes its query) only when the zone is not UTC or
    the format types wall times apart (Parquet)."""
    style = format_spec(task.format).zone_style
    if is_utc(task.timezone) and not style.types_wall_times:
        return ZonedExport(task.timezone, style, ())
    return ZonedExport(task.timezone, style, export_type.zoned_columns(filters, control))


def run_control(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> RunControl:
    """The :class:`RunControl` of a run of ``task`` with ``remaining_ms`` of the invocation left."""
    return TaskRunControl(task, RunBudget(remaining_ms), progress, deps)


def run_export(
    task: Task,
    progress: ProgressReporter,
    deps: WorkerDependencies,
    remaining_ms: RemainingMs | None = None,
    planned_rows: int | None = None,
) -> ExportResult | HandedOver:
    """Write the file of the claimed ``task``, or hand it over to a new invocation
    (:class:`HandedOver`). ``remaining_ms``: the invocation's time left (None: unbounded, never
    hands over); progress is measured against the rows the type knows it has, else
    ``planned_rows`` (what the fan-out plan counted), else what its source counts now, else the
    task's ``estimated_rows``."""
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    columns = task_columns(task, export_type, filters)
    attempt = AttemptFiles(task, deps.results)
    checkpoints = Checkpoints(task, export_fingerprint(task, export_type.name, columns), attempt, deps.clock)
    spec = format_spec(task.format)
    budget = RunBudget(remaining_ms)
    control = TaskRunControl(task, budget, progress, deps)
    zoned = task_zone(task, export_type, filters, control)
    # A format that cannot hand over never goes on from a checkpoint (a stray one goes).
    resumed = checkpoints.load() if spec.resumable else None
    expected = export_type.expected_rows(filters) or planned_rows or (resumed[0].expected_rows if resumed else None)
    if expected is None:
        # Counted, not the submit's estimate: that is the mean size of the type's recent runs,
        # which for a type whose size is a filter (or another format's runs) can be off by far.
        expected = export_type.count_rows(filters, control)
    run = ExportRun(
        task=task,
        export_type=export_type,
        filters=filters,
        columns=zoned.columns(columns),
        zoned=zoned,
        target=result_target(task, export_type, filters),
        metadata=upload_metadata(task, export_type),
        attempt=attempt,
        checkpoints=checkpoints,
        resumed=resumed,
        deps=deps,
        budget=budget,
        control=control,
        tracker=PageProgress(progress, expected, task.estimated_rows),
        progress=progress,
    )
    return spec.write(run)
