"""Running one export: read pages from the source, pass them through the format's writer, and
upload the file to S3 in parts.

A claimed task runs :func:`run_export`. It builds the
:class:`~exports.running.formats.run.ExportRun`, which holds what the run needs: the export type,
its filters, its columns in the task's time zone, the attempt's files, the checkpoint the run goes
on from, and the progress against the expected rows when the type knows them. It hands the run
to its format's writer (:func:`exports.running.formats.registry.format_spec`). The writer
finishes with one complete object. The object's rows, bytes and sha256 are both in the
:class:`ExportResult` and in the object's tags.

The worker handler passes the time its invocation has left. CSV and JSON Lines exports can
continue: when one runs short of time, it continues in a new invocation from a checkpoint
(:mod:`exports.running.long_exports`). :func:`run_export` then returns
:class:`~exports.running.formats.run.HandedOver`. That is a value, not an exception, because
handing over is how a long export goes on, not a fault. The other formats stop in time with their
own error.

A failed export aborts its upload and deletes its checkpoint, so it leaves no partial file.
:class:`exports.running.attempt_files.AttemptFiles` owns these files.
"""

from __future__ import annotations

from pydantic import BaseModel

from exports.core.export_type import AnyExportType, Column, RunControl
from exports.core.ports import RemainingMs
from exports.core.task import ExportResult, Task
from exports.core.zones import is_utc
from exports.running.attempt_files import AttemptFiles, ResultTarget, attempt_key
from exports.running.dependencies import WorkerDependencies
from exports.running.formats.registry import format_spec
from exports.running.formats.run import ExportRun, HandedOver, PageProgress, RunBudget, TaskRunControl
from exports.running.long_exports import Checkpoints, export_fingerprint
from exports.running.progress import ProgressReporter
from exports.running.writers.zones import ZonedExport


def result_target(task: Task, export_type: AnyExportType, filters: BaseModel) -> ResultTarget:
    """The S3 key, the download name and the content type of the attempt's file."""
    spec = format_spec(task.format)
    file_name = f"{export_type.file_stem(filters)}.{spec.extension}"
    return ResultTarget(attempt_key(task, file_name), file_name, spec.content_type_of(task))


def upload_metadata(task: Task, export_type: AnyExportType) -> dict[str, str]:
    """The metadata on the attempt's upload, which the finished file keeps."""
    return {"task-id": task.task_id, "export-type": export_type.name, "format": task.format.value}


def task_columns(task: Task, export_type: AnyExportType, filters: BaseModel) -> list[Column]:
    """The type's columns for ``filters``, with their headers in the task's locale. JSON Lines
    and Parquet write the column names, not the headers."""
    return [column.in_locale(task.locale) for column in export_type.columns(filters)]


def task_zone(task: Task, export_type: AnyExportType, filters: BaseModel, control: RunControl) -> ZonedExport:
    """How the task's time zone changes its file (see exports.running.writers.zones).

    The type is asked for its instant columns only when the zone is not UTC, or when the format
    gives wall times (local date-times) a type of their own, as Parquet does. The question has a
    cost: a SQL type describes its query to answer it.
    """
    style = format_spec(task.format).zone_style
    if is_utc(task.timezone) and not style.types_wall_times:
        return ZonedExport(task.timezone, style, ())
    return ZonedExport(task.timezone, style, export_type.zoned_columns(filters, control))


def run_control(
    task: Task, progress: ProgressReporter, deps: WorkerDependencies, remaining_ms: RemainingMs | None = None
) -> RunControl:
    """The :class:`RunControl` of a run of ``task`` that has ``remaining_ms`` of the invocation
    left."""
    return TaskRunControl(task, RunBudget(remaining_ms), progress, deps)


def run_export(
    task: Task,
    progress: ProgressReporter,
    deps: WorkerDependencies,
    remaining_ms: RemainingMs | None = None,
    planned_rows: int | None = None,
) -> ExportResult | HandedOver:
    """Writes the file of the claimed ``task``, or hands the task over to a new invocation
    (:class:`HandedOver`).

    ``remaining_ms`` is the invocation's time left. None means no limit: the run never hands
    over.

    Progress is measured against the first of these that is known: the rows the type knows it
    has, ``planned_rows`` (what the fan-out plan counted), the count saved in a resumed
    checkpoint, the rows its source counts now, and the task's ``estimated_rows``.
    """
    export_type = deps.registry.get(task.export_type)
    filters = export_type.task_filters(task)
    columns = task_columns(task, export_type, filters)
    attempt = AttemptFiles(task, deps.results)
    checkpoints = Checkpoints(task, export_fingerprint(task, export_type.name, columns), attempt, deps.clock)
    spec = format_spec(task.format)
    budget = RunBudget(remaining_ms)
    control = TaskRunControl(task, budget, progress, deps)
    zoned = task_zone(task, export_type, filters, control)
    # A format that cannot hand over never goes on from a checkpoint. A stray one is not read.
    resumed = checkpoints.load() if spec.resumable else None
    expected = export_type.expected_rows(filters) or planned_rows or (resumed[0].expected_rows if resumed else None)
    if expected is None:
        # Count the rows rather than take the submit's estimate. That estimate is the mean size of
        # the type's recent runs. It can be far off for a type whose size depends on a filter, or
        # when it comes from another format's runs.
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
