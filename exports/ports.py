"""The outside world as the services see it: one small protocol per dependency."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from exports.config.worker import Worker
from exports.domain.admission import Throughput
from exports.domain.capacity import Drain
from exports.domain.events import LifecycleEvent
from exports.domain.status import TaskStatus
from exports.domain.task import Task
from exports.domain.zones import UTC_ZONE
from exports.export_types.base import Column, ColumnKind, RunControl
from exports.webhooks.destination import Destination

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class TaskPage:
    """One page of a user's tasks, newest first; ``cursor`` fetches the next page."""

    tasks: list[Task]
    cursor: str | None


@dataclass(frozen=True)
class Delivery:
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
    redeliveries: int = 0


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
        """Write ``task``'s callback delivery states if the stored task still has its status and
        attempt; :class:`ConditionFailed` otherwise."""

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        """Store the lifecycle workflow's token on an existing task; returns the task as stored."""

    def list_for_user(
        self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None, schedule_id: str | None = None
    ) -> TaskPage:
        """The user's tasks, newest first, from an index (never a scan); only the runs of
        ``schedule_id`` when given."""


class Lifecycle(Protocol):
    """The workflow that owns a task's deadline and callback."""

    def start(self, task: Task) -> None:
        """Start watching ``task``."""

    def report_end(self, token: str, task: Task) -> None:
        """Tell the execution waiting with ``token`` that ``task`` ended."""


class FanOutStarter(Protocol):
    """The workflow that writes one export's partitions at once and assembles its file."""

    def start(self, task_id: str, attempt: int, partitions: int) -> None:
        """Start writing the ``partitions`` partitions planned for the task's ``attempt``."""


@dataclass(frozen=True)
class WebhookResponse:
    """What a callback receiver answered: a status, or the network error that stood in the way."""

    status: int | None
    error: str | None


class WebhookSender(Protocol):
    """Posts signed callbacks."""

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        """Send ``body`` once to the checked ``destination``."""


class JsonPages(Protocol):
    """Asks a declared HTTP source for its pages, on its declared hosts only."""

    def get(self, url: str, control: RunControl) -> Any:
        """The JSON body of a GET of ``url`` (numbers with a fraction or exponent as Decimals);
        a transient failure, once the retries are spent, is a :class:`RetryableError`, any
        other an ``ExportFailed`` naming the source and the status."""


class TaskQueue(Protocol):
    """The work queue between submit and the workers."""

    def send(self, message: TaskMessage, delay_sec: int = 0) -> None:
        """Enqueue ``message`` on its priority's lane, visible after ``delay_sec``."""

    def depths(self) -> dict[str, int]:
        """Approximate waiting messages per lane (may be a few seconds old)."""

    def redeliver_after(self, delivery: Delivery, delay_sec: int) -> None:
        """Let the failed ``delivery`` come back after ``delay_sec`` rather than the queue's
        visibility timeout."""


class HotKeyLimiter(Protocol):
    """Rate limits per hot key, shared by all workers."""

    def acquire(self, hot_key: str, now: datetime) -> float:
        """0 if the task may run now, else seconds until it may."""


class ThroughputStats(Protocol):
    """Measured speed per export type and format (``key``: domain.admission.throughput_key), for
    estimates."""

    def get(self, key: str) -> Throughput | None:
        """The moving averages, or None before the first run."""

    def record(self, key: str, rows: int, seconds: float, days: int | None = None) -> None:
        """Fold in one finished run (``days``: the days its date range covers, if it has one)."""


@dataclass(frozen=True)
class Reservation:
    """What a reservation in a capacity pool found: whether the work was queued, and the work
    queued ahead of it (when refused: all that is queued)."""

    admitted: bool
    queued_sec: float


class CapacityPools(Protocol):
    """The work queued per capacity pool and each pool's measured drain
    (:mod:`exports.domain.capacity`), shared by every API and worker instance."""

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


class ResultUpload(Protocol):
    """One result object being written in parts, invisible until completed: in order by one
    writer (:meth:`upload_part`), or under chosen numbers by several at once (a split export's
    partitions and its assembler, :mod:`exports.writers.segment_upload`); another invocation
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
    tagged, and download links (see :mod:`exports.adapters.s3_results`)."""

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
        """Send ``events``; a typed :class:`exports.domain.errors.ExportsError` when they could not be."""


class BusinessMetrics(Protocol):
    """Counts of business events (EMF on AWS)."""

    def add(
        self, name: str, value: float = 1, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        """Record ``value`` for the metric ``name`` (with ``dimensions``, in addition to the
        service's: a series of its own, e.g. ExportFailed by error code and source)."""


# The type name of a result column whose values are instants, written in an export's time zone
# (exports.writers.zones): PostgreSQL's timestamptz, and the name the MySQL reader gives a
# TIMESTAMP (an instant too). ``timestamp`` and MySQL's DATETIME are wall times and stay.
INSTANT_TYPE: Final = "timestamptz"


@dataclass(frozen=True)
class ResultColumn:
    """A column of the query's result: its name, how a file types it, and the source's type."""

    name: str
    kind: ColumnKind
    type_name: str
    # numeric(precision, scale) when the column's type declares them.
    precision: int | None = None
    scale: int | None = None
    # An array's element kind (the column's values are its text, ``kind`` STRING), else None.
    array_of: ColumnKind | None = None


@dataclass(frozen=True)
class SqlSession:
    """What a read sets in its transaction before the query, so the database's row-level
    security sees the caller: a role (``SET LOCAL ROLE``) and custom settings with their
    values (a string, a list of strings as a ``text[]`` literal, a JSON object as JSON text)."""

    role: str | None = None
    settings: Sequence[tuple[str, Any]] = ()


@dataclass(frozen=True)
class SqlRead:
    """One read of a declared query: the SQL text (``%(name)s`` placeholders), its bound values,
    the unique order key it is read by, the key values to read after (resuming, or a
    partition's start), the last key values to read (a partition's end) and the session set-up."""

    query: str
    params: Mapping[str, Any]
    order_key: Sequence[str] = ()
    after: Sequence[Any] | None = None
    until: Sequence[Any] | None = None
    session: SqlSession | None = None


@dataclass(frozen=True)
class Batch:
    """Rows fetched together, as the result's columns hold them (timestamps in naive UTC)."""

    columns: Sequence[ResultColumn]
    rows: list[tuple[Any, ...]]


class CopiedCsv(Protocol):
    """CSV rows a database writes (``COPY``): :meth:`chunks` gives whole rows, :attr:`rows`
    counts those given, :meth:`stop_after` ends the read there and gives the order key of the
    last row given, :meth:`close` frees the connection."""

    @property
    def rows(self) -> int: ...

    def chunks(self) -> Iterator[bytes]: ...

    def stop_after(self) -> Sequence[Any] | None: ...

    def close(self) -> None: ...


# libpq connection keywords, fresh at each connection (rotated secrets, new IAM tokens).
ConnectionSettings = Callable[[], dict[str, Any]]


class SqlReader(Protocol):
    """Runs declared queries against one SQL source."""

    source: str

    def describe(self, read: SqlRead, control: RunControl) -> list[ResultColumn]:
        """The result's columns, without reading a row."""

    def batches(self, read: SqlRead, control: RunControl) -> Iterator[Batch]:
        """The rows in order of ``read.order_key``, after ``read.after`` and up to
        ``read.until``, in pages."""

    def copy_csv(
        self, read: SqlRead, names: Sequence[str] | None, guard: bool, control: RunControl, timezone: str = UTC_ZONE
    ) -> CopiedCsv | None:
        """The result columns ``names`` (None: all) of the read as CSV rows the database
        writes (``timestamptz`` in ``timezone``, default UTC), or None when it cannot write them
        as the CSV writer does."""

    def count(self, read: SqlRead, control: RunControl) -> int:
        """How many rows the read has."""

    def boundaries(self, read: SqlRead, step: int, ranges: int, control: RunControl) -> list[tuple[Sequence[Any], int]]:
        """In one query, the order key and row number (1-based, in key order) of every
        ``max(step, ceil(rows / ranges))``-th row and of the last row: the ends of at most
        ``ranges`` keyset ranges."""


@runtime_checkable
class SqlArrowReader(SqlReader, Protocol):
    """A :class:`SqlReader` that also reads a whole result as Arrow record batches (Parquet, XLSX)."""

    def record_batches(
        self, read: SqlRead, columns: Sequence[Column], control: RunControl, date_texts: bool = False
    ) -> Iterator[pa.RecordBatch] | None:
        """The read's rows in key order as record batches of ``columns`` (with ``date_texts``,
        then PostgreSQL's text of each date and date-time column's values no Python value
        holds); None when the tuple path must write them (a resumed or split read, a column
        typed otherwise than the result's)."""


# A slot whose holder stops renewing it (a crashed worker) is free again after this long;
# progress writes renew it (Worker.PROGRESS_INTERVAL_SEC), like the task's lease.
SOURCE_SLOT_LEASE_SEC: Final = Worker.LEASE_SEC


@dataclass(frozen=True)
class SlotLease:
    """One slot of a source's limit of concurrent exports, held by a task."""

    source: str
    index: int
    holder: str


class SourceSlotLeases(Protocol):
    """The per-source limit of concurrent exports, shared by all workers."""

    def acquire(self, source: str, limit: int, holder: str, now: datetime) -> SlotLease | None:
        """One of ``limit`` slots of ``source`` for ``holder`` (a task id); None if all are busy."""

    def renew(self, lease: SlotLease, now: datetime) -> bool:
        """Extend the lease; False if the slot is no longer ``holder``'s."""

    def release(self, lease: SlotLease) -> None:
        """Give the slot back (nothing if it is no longer ``holder``'s)."""


@dataclass(frozen=True)
class ItemQuery:
    """One key-condition query of a declared DynamoDB export type (string keys), its values
    already rendered from the filters."""

    table: str
    index: str | None
    partition_name: str
    partition_value: str
    sort_name: str | None = None
    sort_from: str | None = None
    sort_to: str | None = None
    sort_begins_with: str | None = None
    # (attribute, allowed values): items whose attribute holds one of them.
    filters: Sequence[tuple[str, Sequence[str]]] = ()


class ItemsReader(Protocol):
    """Queries the user's DynamoDB tables."""

    def page(
        self, query: ItemQuery, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One page of items (numbers as Decimals) and the key to continue from (None: done)."""
