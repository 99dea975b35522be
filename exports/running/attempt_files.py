"""Every object an export attempt puts in the result store, in one owner.

An attempt writes its file as a multipart upload under a key of its own, and may leave more
beside it: the checkpoint a long export hands over with (one per task, next to the attempt
folders) and the staging of a split export (the plan and each partition's result, under the
attempt's folder). :class:`AttemptFiles` starts, resumes, completes and aborts the upload,
writes and deletes the checkpoint and the staging, and removes a file its task must not keep;
the single worker (:mod:`exports.running.export_run`), the long-export hand-over
(:mod:`exports.running.long_exports`) and the fan-out (:mod:`exports.running.fan_out`) all go through
it, so what "nothing partial stays behind" means is written once.

Layout under ``results/<task>/``: ``checkpoint.bin`` (:data:`CHECKPOINT_NAME`), and per
attempt ``<attempt>/<file name>`` and ``<attempt>/fan-out/<staged name>`` (:data:`FAN_OUT_STAGING_FOLDER`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from exports.core.aws.retries import retry_transient
from exports.core.config.results import Results
from exports.core.errors import ExportsError
from exports.core.ports import ResultStore, ResultUpload
from exports.core.task import Task

logger = logging.getLogger(__name__)

# A long export's checkpoint object, next to the attempt folders, under the same expiry rule.
CHECKPOINT_NAME: Final = "checkpoint.bin"
# Where a split export's plan and its partitions' held bytes are staged, under its attempt's
# folder (deleted after assembly or abandonment).
FAN_OUT_STAGING_FOLDER: Final = "fan-out"


@dataclass(frozen=True)
class ResultTarget:
    """Where the attempt's file goes and what it is called."""

    key: str
    file_name: str
    content_type: str


def attempt_key(task: Task, file_name: str) -> str:
    """The key of the attempt's file. One key per attempt: a worker that outlived its lease can
    neither overwrite nor, when it finds it lost the task, delete the file of the attempt that
    took the task over."""
    return f"{Results.KEY_PREFIX}/{task.task_id}/{task.attempt}/{file_name}"


class AttemptFiles:
    """The result-store objects of attempt ``task.attempt`` of ``task``."""

    def __init__(self, task: Task, results: ResultStore) -> None:
        self._task = task
        self._results = results
        self.folder = f"{Results.KEY_PREFIX}/{task.task_id}"
        self.checkpoint_key = f"{self.folder}/{CHECKPOINT_NAME}"
        # Set once the store has the whole object: from then on a failure deletes it, nothing
        # is left to abort.
        self.completed = False

    def owns(self, key: str) -> bool:
        """Whether ``key`` lies in this task's folder (a checkpoint names the file it continues)."""
        return key.startswith(f"{self.folder}/")

    # The upload ------------------------------------------------------------------------------

    def start(self, target: ResultTarget, metadata: Mapping[str, str]) -> ResultUpload:
        """Begin the upload of ``target`` (other invocations can go on with it, or write parts of
        it at once: a long or a split export)."""
        return self._results.start_upload(target.key, target.content_type, target.file_name, metadata)

    def resume(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]] = ()) -> ResultUpload:
        """The open upload ``upload_id`` of ``key``, continuing after ``parts``."""
        return self._results.resume_upload(key, upload_id, parts)

    def complete(self, upload: ResultUpload, key: str, tags: Mapping[str, str]) -> None:
        """Make the file visible and tag it; the checkpoint goes. If that
        fails the object may exist anyway (tagging failed, or completing landed and only its
        answer was lost) while the attempt fails: it is removed before the error goes on."""
        try:
            upload.complete()
            self.completed = True
            self._results.tag_result(key, tags)
        except BaseException:
            self.remove(key)
            raise
        self.delete_checkpoint()

    def tag(self, key: str, tags: Mapping[str, str]) -> None:
        """Tag the finished file ``key`` (an assembled split export's)."""
        self._results.tag_result(key, tags)

    def read(self, key: str) -> Iterator[bytes]:
        """The finished file ``key``'s bytes, in order."""
        return self._results.read_result(key)

    def discard(self, upload: ResultUpload) -> None:
        """Nothing partial stays behind: the upload, unless it completed (then :meth:`complete`
        removed its file), is aborted (again on transient faults; one that keeps failing is
        left to the bucket's rule for incomplete uploads) and the checkpoint deleted."""
        if not self.completed:
            try:
                retry_transient(upload.abort)
            except ExportsError:
                logger.warning("could not abort the upload; the bucket's lifecycle rule will", exc_info=True)
        self.delete_checkpoint()

    def abort(self, key: str, upload_id: str) -> None:
        """Abort an upload known by its id (a stale checkpoint's, a split attempt's)."""
        try:
            retry_transient(self.resume(key, upload_id).abort)
        except ExportsError:
            logger.warning("could not abort an upload; the bucket's lifecycle rule will", exc_info=True)

    def remove(self, key: str) -> None:
        """Delete a finished file its task must not keep (again on transient faults; one that
        stays anyway is logged and left to the bucket's expiry rule)."""
        try:
            retry_transient(lambda: self._results.delete(key))
        except ExportsError:
            logger.error("could not delete a result file its task does not own", extra={"key": key}, exc_info=True)

    # The checkpoint of a long export ---------------------------------------------------------

    def read_checkpoint(self) -> bytes | None:
        """The task's checkpoint, if there is one."""
        return self._results.read_checkpoint(self.checkpoint_key)

    def write_checkpoint(self, body: bytes) -> None:
        """Store the task's checkpoint."""
        self._results.write_checkpoint(self.checkpoint_key, body)

    def delete_checkpoint(self) -> None:
        """Remove the checkpoint; one left behind goes with the result files by the bucket's
        expiry rule."""
        with contextlib.suppress(ExportsError):
            self._results.delete_checkpoint(self.checkpoint_key)

    # The staging of a split export -----------------------------------------------------------

    def staging_key(self, name: str) -> str:
        """Where the attempt's staged ``name`` is (``plan.json``, ``partition-<k>``)."""
        return f"{self.folder}/{self._task.attempt}/{FAN_OUT_STAGING_FOLDER}/{name}"

    def stage(self, name: str, body: bytes) -> None:
        """Store ``body`` as the attempt's staged ``name``."""
        self._results.write_checkpoint(self.staging_key(name), body)

    def staged(self, name: str) -> bytes | None:
        """The attempt's staged ``name``, or None."""
        return self._results.read_checkpoint(self.staging_key(name))

    def unstage(self, names: Iterable[str]) -> None:
        """Delete the attempt's staged ``names`` (one that cannot be deleted now goes with the
        result files by the bucket's expiry rule)."""
        for name in names:
            with contextlib.suppress(ExportsError):
                self._results.delete_checkpoint(self.staging_key(name))
