"""The ports that every stage of a task's life reads and writes through.

A port is a small Protocol for something outside the service, and an adapter implements it (on
DynamoDB, SQS, S3, Step Functions...). The ports here are the task records, the queue, the result
store, the lifecycle workflow, the capacity pools, lifecycle events and business metrics. A port
that only one stage uses lives with that stage.
"""

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
    """One page of a user's tasks, newest first. ``cursor`` fetches the next page."""

    tasks: list[Task]
    cursor: str | None


@dataclass(frozen=True)
class Receipt:
    """One receipt of a queue message: the queue it came from, its receipt handle, and how many
    times the message has been received."""

    queue_arn: str
    receipt_handle: str
    receive_count: int


@dataclass(frozen=True)
class TaskMessage:
    """What goes on the queue. It carries routing data only, never the filters."""

    task_id: str
    export_type: str
    priority: int
    # How many times a transient fault before the claim sent the message back. Its backoff grows
    # with this number.
    requeues: int = 0


class TaskRepository(Protocol):
    """Durable task records. Every write is conditional."""

    def create(self, task: Task, max_active: int, replace_holder: str | None = None) -> None:
        """Stores and admits a new task in one atomic write.

        The write takes a quota slot, and raises :class:`Overloaded` when the user already has
        ``max_active`` tasks. It holds the dedup key, and raises :class:`DuplicateSubmission`
        naming the holder when another task holds it. It raises :class:`ConditionFailed` if the
        task's id exists.
        """

    def dedup_holder(self, dedup_key: str) -> str | None:
        """The id of the task that holds ``dedup_key``, or None. That task may have ended since."""

    def release_dedup(self, task: Task) -> None:
        """Lets go of the ended task's dedup key, if the task still holds it."""

    def active_count(self, user_id: str) -> int:
        """How many of the user's tasks hold a quota slot."""

    def get(self, task_id: str) -> Task | None:
        """The task, or None."""

    def merge(self, before: Task, after: Task) -> None:
        """Writes a request merged into the task, if its status, attempt, priority and
        subscribers are still ``before``'s. Otherwise raises :class:`ConditionFailed`."""
        ...

    def update(self, before: Task, after: Task) -> None:
        """Writes ``after`` only if the stored task still has ``before``'s status and attempt.
        Otherwise raises :class:`ConditionFailed`, which carries the current task."""

    def update_partitions(self, before: Task, after: Task) -> None:
        """Like :meth:`update`, with one more condition: the counts per partition must still be
        ``before``'s. Partitions that write at once must not drop each other's counts."""

    def record_progress(self, task: Task) -> None:
        """Writes ``task``'s progress (rows written, percent, lease) if the stored task still has
        its status and attempt. Otherwise raises :class:`ConditionFailed`."""

    def record_callbacks(self, task: Task) -> None:
        """Writes the states of ``task``'s callbacks if the stored task still has its status and
        attempt. Otherwise raises :class:`ConditionFailed`."""

    def record_deliveries(self, before: Task, after: Task) -> None:
        """Write the file deliveries of ``after`` that differ from ``before``'s, each only if it is
        still stored as ``before`` has it (status, attempts, round), the task's status and attempt
        unchanged; :class:`ConditionFailed` otherwise. Other deliveries are left as stored."""

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        """Stores the lifecycle workflow's task token on an existing task, and returns the task
        as stored."""

    def list_for_user(
        self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None, schedule_id: str | None = None
    ) -> TaskPage:
        """The user's tasks, newest first, read from an index and never by a scan. When
        ``schedule_id`` is given, only that schedule's runs."""


class TaskQueue(Protocol):
    """The work queue between submit and the workers."""

    def send(self, message: TaskMessage, delay_sec: int = 0) -> None:
        """Puts ``message`` on its priority's lane. The message becomes visible after
        ``delay_sec``."""

    def depths(self) -> dict[str, int]:
        """The approximate number of waiting messages per lane. It may be a few seconds old."""

    def retry_later(self, receipt: Receipt, delay_sec: int) -> None:
        """Lets the failed ``receipt`` come back after ``delay_sec``, rather than after the
        queue's visibility timeout."""


class ResultUpload(Protocol):
    """One result object being written in parts. It stays invisible until it is completed.

    One writer can send the parts in order (:meth:`upload_part`). Several writers can also send
    parts at once under numbers they choose, as a split export's partitions and its assembler do
    (:mod:`exports.running.writers.segment_upload`). Another invocation can pick the upload up
    again from its id and its parts.
    """

    @property
    def upload_id(self) -> str:
        """The store's id of the upload."""

    @property
    def parts(self) -> list[tuple[int, str]]:
        """The parts sent so far, as (number, ETag) pairs."""

    def upload_part(self, data: bytes) -> None:
        """Sends the next part."""

    def upload_part_number(self, number: int, data: bytes) -> str:
        """Sends ``data`` as part ``number`` and returns its ETag."""

    def complete(self) -> None:
        """Makes the object visible, built from every part sent in the order of their numbers."""

    def abort(self) -> None:
        """Drops every part, so that no object remains."""


class ResultStore(Protocol):
    """Object storage for result files (see :mod:`exports.core.aws.s3_results`).

    It holds uploads that another invocation can pick up again, and that several writers can
    write at once. It keeps checkpoints and staged parts beside the file. It reads the finished
    object back and tags it, and it makes download links.
    """

    def start_upload(self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]) -> ResultUpload:
        """Begins a multipart upload of ``key``."""

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> ResultUpload:
        """The upload ``upload_id`` of ``key``, which continues after ``parts``."""

    def read_result(self, key: str) -> Iterator[bytes]:
        """The bytes of the finished object ``key``, in order, in chunks."""

    def read_checkpoint(self, key: str) -> bytes | None:
        """The checkpoint object, or None."""

    def write_checkpoint(self, key: str, body: bytes) -> None:
        """Stores the checkpoint object."""

    def delete_checkpoint(self, key: str) -> None:
        """Removes the checkpoint object."""

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        """Tags the finished object."""

    def delete(self, key: str) -> None:
        """Removes ``key`` if it is there."""

    def presign_download(self, key: str, file_name: str, ttl_sec: int) -> str:
        """A short-lived GET link that downloads ``key`` as ``file_name``."""


# The invocation's remaining time in milliseconds, as Lambda's context tells it.
RemainingMs = Callable[[], int]


class LifecycleEvents(Protocol):
    """Where lifecycle events go: EventBridge, on AWS and in local mode (docs/events.md)."""

    def publish(self, events: Sequence[LifecycleEvent]) -> None:
        """Sends ``events``. Raises a typed :class:`exports.core.errors.ExportsError` when they
        could not be sent."""


class BusinessMetrics(Protocol):
    """Counts of business events. On AWS they are written in CloudWatch's embedded metric format
    (EMF)."""

    def add(
        self, name: str, value: float = 1, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        """Records ``value`` for the metric ``name``.

        ``dimensions`` are added to the service's own, and make a series of their own: for
        example ExportFailed by error code and source.
        """


class Lifecycle(Protocol):
    """The workflow that owns a task's deadline and callback."""

    def start(self, task: Task) -> None:
        """Starts watching ``task``."""

    def report_end(self, token: str, task: Task) -> None:
        """Tells the execution that waits with ``token`` that ``task`` ended."""


class Redelivery(Protocol):
    """The workflow that tries one FAILED file delivery again, on its owner's request."""

    def start(self, task_id: str, destination_id: str, requested_retries: int) -> None:
        """Start the round ``requested_retries`` of attempts at the task's delivery to
        ``destination_id`` (a second start of one round is refused)."""


@dataclass(frozen=True)
class Reservation:
    """What a reservation in a capacity pool found: whether the work was queued, and how much
    work is queued ahead of it. When the work was refused, that is all the work queued."""

    admitted: bool
    queued_sec: float


class CapacityPools(Protocol):
    """The work queued in each capacity pool, and each pool's measured drain.

    A pool's drain is how fast its workers take its queued work up (see
    :mod:`exports.core.capacity_rules`). Every API and worker instance shares these numbers.
    """

    def drain(self, pool: str) -> Drain | None:
        """The pool's measured drain, at most a few seconds old, or None before one was
        measured."""

    def reserve(self, pool: str, work_sec: float, limit_sec: float) -> Reservation:
        """Queues ``work_sec`` in ``pool`` if at most ``limit_sec`` is queued there already."""

    def release(self, pool: str, work_sec: float) -> None:
        """Takes back queued work that will never start: its task was merged, refused by another
        pool, cancelled, timed out, or not enqueued."""

    def start(self, pool: str, work_sec: float, now: datetime, drained_sec: float | None = None) -> None:
        """Takes ``work_sec``, the work queued for the task, off the queue as its task starts.

        ``drained_sec`` measures the pool's drain. None means the work was the defaults' guess,
        so nothing is measured.
        """
