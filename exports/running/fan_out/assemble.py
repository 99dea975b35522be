"""Assembling a split export: the glue between the partitions' segments, the upload completed,
the file read back for its sha256 and tagged, the staging deleted.

sha256: SHA-256 cannot be combined from pieces (each block's state depends on every byte
before it) and the partitions' bytes reach S3 in any order, so no worker sees the file in
order. The assembler reads the completed object back once, in order, and hashes it (the same
:func:`~exports.running.writers.resumable_sha256.new_sha256` as the single worker: its state can be
saved, so a file too long to hash in one run could go on in the next). Reading back costs one
GET of the file (free inside the region; about 1 s per 100-200 MB in a Lambda function) and
checks, on the way, that the object has exactly the bytes the partitions and the glue made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from exports.core.errors import ExportsError
from exports.core.ports import ResultUpload
from exports.core.task import ExportResult, Task
from exports.running.attempt_files import AttemptFiles
from exports.running.dependencies import WorkerDependencies
from exports.running.fan_out.partition import decode_result, split_layout
from exports.running.fan_out.plan import load_plan, owned_task, partition_name, staged_names
from exports.running.writers.resumable_sha256 import new_sha256
from exports.running.writers.segment_upload import SegmentUpload, joins


@dataclass(frozen=True)
class AssembledFile:
    """The completed object: its length and sha256 (read back from it)."""

    bytes: int
    sha256: str


def assemble(
    upload: ResultUpload,
    glue: Sequence[bytes],
    segments: Sequence[SegmentUpload],
    read_back: Callable[[], Iterable[bytes]],
) -> AssembledFile:
    """Upload the joins between the segments' interior parts (``glue`` around the segments, in
    file order), complete the upload, and hash the object as ``read_back`` streams it. An object
    of another length than its parts' raises ``ValueError``."""
    for number, data in joins(glue, segments):
        upload.upload_part_number(number, data)
    upload.complete()
    sha256 = new_sha256()
    size = 0
    for chunk in read_back():
        sha256.update(chunk)
        size += len(chunk)
    expected = sum(map(len, glue)) + sum(segment.bytes for segment in segments)
    if size != expected:
        raise ValueError(f"the object has {size} bytes, its parts {expected}")
    return AssembledFile(size, sha256.hexdigest())


def assemble_file(task_id: str, attempt: int, deps: WorkerDependencies) -> tuple[Task, ExportResult]:
    """Upload the joins, complete the upload, read it back for its sha256, tag it and delete
    the staging: the file of the attempt, and the task as read (for its ending)."""
    task = owned_task(task_id, attempt, deps)
    files = AttemptFiles(task, deps.results)
    plan = load_plan(task, files)
    results = []
    for partition in range(len(plan.specs)):
        blob = files.staged(partition_name(partition))
        if blob is None:
            raise ExportsError(f"partition {partition} left no result")
        results.append(decode_result(blob))
    segments = [segment for result in results for segment in result.segments]
    glue = split_layout(task).glue(plan.layout, results)
    parts = [part for segment in segments for part in segment.parts]
    upload = files.resume(plan.key, plan.upload_id, parts)
    assembled = assemble(upload, glue, segments, lambda: files.read(plan.key))
    rows = sum(result.rows for result in results)
    files.tag(plan.key, {"rows": str(rows), "bytes": str(assembled.bytes), "sha256": assembled.sha256})
    files.unstage(staged_names(plan))
    result = ExportResult(
        key=plan.key,
        bytes=assembled.bytes,
        rows=rows,
        sha256=assembled.sha256,
        content_type=plan.content_type,
        file_name=plan.file_name,
    )
    return task, result
