"""What every stage of a task's life reads and writes through: the task records, the queue, the
result store, the lifecycle workflow, the capacity pools, lifecycle events and business metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from exports.core.capacity_rules import Drain
from exports.core.events import LifecycleEvent
from exports.core.status import TaskStatus
from exports.core.task import Task


@dataclass(frozen=True)
class TaskPage:
    """One page of a user's tasks, newest first; ``cursor`` fetches the next page."""

    tasks: list[Task]
    cursor: str | None


@dataclass(frozen=True)
class Receipt:
    """One receipt of a queue message: where from, and how often it has been received."""

    queue_arn: str
    receipt_handle: str
    receive_count: int


@dataclass(frozen=True)
class TaskMessage:
    """What goes on the queue: routing data only, never the filters."""

    task_id: str
    export_type: str
    priority: int
    # How often a transient fault before the claim sent the message back (its backoff grows).
    requeues: int = 0


class TaskRepository(Protocol):
    """Durable task records. Every write is conditional."""

    def create(self, task: Task, max_active: int, replace_holder: str | None = None) -> None:
        """Store and admit a new task atomically: quota slot taken (:class:`Overloaded` at
        ``max_active``), dedup key held (:class:`DuplicateSubmission` naming the holder),
        :class:`ConditionFailed` if its id exists."""

    def dedup_holder(self, dedup_key: str) -> str | None:
        """The id of the task holding ``dedup_key`` (it may have ended since), or None."""

    def release_dedup(self, task: Task) -> None:
        """Let go of the ended task's dedup key, if it still holds it."""

    def active_count(self, user_id: str) -> int:
        """How many of the user's tasks hold a quota slot."""

    def get(self, task_id: str) -> Task | None:
        """The task, or None."""

    def merge(self, before: Task, after: Task) -> None:
        """Write a request merged into the task, if status, attempt, priority and subscribers
        are still ``before``'s; :class:`ConditionFailed` otherwise."""
        ...

    def update(self, before: Task, after: Task) -> None:
        """Write ``after`` only if the stored task still has ``before``'s status and attempt;
        otherwise raise :class:`ConditionFailed` carrying the current task."""

    def update_partitions(self, before: Task, after: Task) -> None:
        """:meth:`update`, also on condition that the per-partition counts are still
        ``before``'s (partitions writing at once must not drop each other's counts)."""

    def record_progress(self, task: Task) -> None:
        """Write ``task``'s progress (rows written, percent, lease) if the stored task still has
        its status and attempt; :class:`ConditionFailed` otherwise."""

    def record_callbacks(self, task: Task) -> None:
        """Write ``task``'s callback receipt states if the stored task still has its status and
        attempt; :class:`ConditionFailed` otherwise."""

    def record_deliveries(self, before: Task, after: Task) -> None:
        """Write the file deliveries of ``after`` that differ from ``before``'s, each only if it is
        still stored as ``before`` has it (status, attempts, round), the task's status and attempt
        unchanged; :class:`ConditionFailed` otherwise. Other deliveries are left as stored."""

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        """Store the lifecycle workflow's token on an existing task; returns the task as stored."""

    def list_for_user(
        self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None, schedule_id: str | None = None
    ) -> TaskPage:
        """The user's tasks, newest first, from an index (never a scan); only the runs of
        ``schedule_id`` when given."""


class TaskQueue(Protocol):
    """The work queue between submit and the workers."""

    def send(self, message: TaskMessage, delay_sec: int = 0) -> None:
        """Enqueue ``message`` on its priority's lane, visible after ``delay_sec``."""

    def depths(self) -> dict[str, int]:
        """Approximate waiting messages per lane (may be a few seconds old)."""

    def retry_later(self, receipt: Receipt, delay_sec: int) -> None:
        """Let the failed ``receipt`` come back after ``delay_sec`` rather than the queue's
        visibility timeout."""


class ResultUpload(Protocol):
    """One result object being written in parts, invisible until completed: in order by one
    writer (:meth:`upload_part`), or under chosen numbers by several at once (a split export's
    partitions and its assembler, :mod:`exports.running.writers.segment_upload`); another invocation
    picks it up again from its id and parts."""

    @property
    def upload_id(self) -> str:
        """The store's id of the upload."""

    @property
    def parts(self) -> list[tuple[int, str]]:
        """Parts sent so far, as (number, ETag)."""

    def upload_part(self, data: bytes) -> None:
        """Send the next part."""

    def upload_part_number(self, number: int, data: bytes) -> str:
        """Send ``data`` as part ``number``; returns its ETag."""

    def complete(self) -> None:
        """Make the object visible from every part sent, in the order of their numbers."""

    def abort(self) -> None:
        """Drop every part; no object remains."""


class ResultStore(Protocol):
    """Object storage for result files: uploads another invocation can pick up again (and several
    write at once), checkpoints and staging beside the file, the finished object read back and
    tagged, and download links (see :mod:`exports.core.aws.s3_results`)."""

    def start_upload(self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]) -> ResultUpload:
        """Begin a multipart upload of ``key``."""

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> ResultUpload:
        """The upload ``upload_id`` of ``key``, continuing after ``parts``."""

    def read_result(self, key: str) -> Iterator[bytes]:
        """The finished object ``key``'s bytes, in order, in chunks."""

    def read_checkpoint(self, key: str) -> bytes | None:
        """The checkpoint object, or None."""

    def write_checkpoint(self, key: str, body: bytes) -> None:
        """Store the checkpoint object."""

    def delete_checkpoint(self, key: str) -> None:
        """Remove the checkpoint object."""

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        """Tag the finished object."""

    def delete(self, key: str) -> None:
        """Remove ``key`` if present."""

    def presign_download(self, key: str, file_name: str, ttl_sec: int) -> str:
        """A short-lived GET link that downloads ``key`` as ``file_name``."""


# The invocation's remaining time in milliseconds, as Lambda's context tells it.
RemainingMs = Callable[[], int]


class LifecycleEvents(Protocol):
    """Where lifecycle events go (EventBridge on AWS and in local mode, docs/events.md)."""

    def publish(self, events: Sequence[LifecycleEvent]) -> None:
        """Send ``events``; a typed :class:`exports.core.errors.ExportsError` when they could not be."""


class BusinessMetrics(Protocol):
    """Counts of business events (EMF on AWS)."""

    def add(
        self, name: str, value: float = 1, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        """Record ``value`` for the metric ``name`` (with ``dimensions``, in addition to the
        service's: a series of its own, e.g. ExportFailed by error code and source)."""


class Lifecycle(Protocol):
    """The workflow that owns a task's deadline and callback."""

    def start(self, task: Task) -> None:
        """Start watching ``task``."""

    def report_end(self, token: str, task: Task) -> None:
        """Tell the execution waiting with ``token`` that ``task`` ended."""


class Redelivery(Protocol):
    """The workflow that tries one FAILED file delivery again, on its owner's request."""

    def start(self, task_id: str, destination_id: str, requested_retries: int) -> None:
        """Start the round ``requested_retries`` of attempts at the task's delivery to
        ``destination_id`` (a second start of one round is refused)."""


@dataclass(frozen=True)
class Reservation:
    """What a reservation in a capacity pool found: whether the work was queued, and the work
    queued ahead of it (when refused: all that is queued)."""

    admitted: bool
    queued_sec: float


class CapacityPools(Protocol):
    """The work queued per capacity pool and each pool's measured drain
    (:mod:`exports.core.capacity_rules`), shared by every API and worker instance."""

    def drain(self, pool: str) -> Drain | None:
        """The pool's measured drain (a few seconds old at most), or None before one."""

    def reserve(self, pool: str, work_sec: float, limit_sec: float) -> Reservation:
        """Queue ``work_sec`` in ``pool`` if at most ``limit_sec`` is queued there already."""

    def release(self, pool: str, work_sec: float) -> None:
        """Take back queued work that will never start (merged, refused by another pool,
        cancelled, timed out, not enqueued)."""

    def start(self, pool: str, work_sec: float, now: datetime, drained_sec: float | None = None) -> None:
        """Take ``work_sec`` (what was queued for the task) off the queue as its task starts,
        measuring the pool's drain by ``drained_sec`` (None: the work was the defaults' guess,
        so nothing is measured)."""
