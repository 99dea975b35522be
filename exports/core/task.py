"""The export task and the operations that change it.

Every operation returns a new :class:`Task` and leaves the old one as it was; none of them saves
anything. Each status change goes through :func:`exports.core.status.check_transition`, which
refuses a move the status table does not allow. Saving the change is the repository's job. It
writes only if the task still has the status the operation started from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from exports.core.config.limits import Limits
from exports.core.config.retry import TASK_RETRY
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.customer_errors import customer_message
from exports.core.deliveries import Delivery, DeliveryPlan, initial
from exports.core.errors import InvalidTransition
from exports.core.status import TERMINAL, TaskStatus, check_transition
from exports.core.zones import UTC_ZONE


class ExportFormat(StrEnum):
    """File formats a task can produce."""

    CSV = "csv"
    # CSV compressed with gzip into one gzip member. The file downloads as ``.csv.gz``.
    CSV_GZ = "csv.gz"
    XLSX = "xlsx"
    # A paginated table to read and print. Its writer is exports/running/writers/pdf, and one
    # worker run writes the whole file.
    PDF = "pdf"
    # JSON Lines writes one JSON object per row (docs/export-types.md, "JSON Lines and Parquet").
    JSONL = "jsonl"
    # JSON Lines compressed with gzip into one gzip member, like csv.gz.
    JSONL_GZ = "jsonl.gz"
    PARQUET = "parquet"


class TaskSource(StrEnum):
    """Why the task exists. A client asked for it, it retries an earlier task, or a schedule
    fired (see docs/schedules.md)."""

    API = "api"
    RETRY = "retry"
    SCHEDULE = "schedule"


@dataclass(frozen=True)
class ScheduledRun:
    """The schedule a run belongs to and the firing time it runs for."""

    schedule_id: str
    scheduled_for: datetime
    # True when the schedule's when_empty is skip. A run that finds 0 rows then keeps no file
    # and mails no one.
    skip_empty: bool = False


# Pydantic builds every model here on first use (defer_build), not at import. So a handler's
# import does not pay for validators its request path may never run (docs/performance.md, "Cold starts").


class ExportResult(BaseModel):
    """Where the finished file is and what it holds."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    bytes: int
    rows: int
    sha256: str
    content_type: str
    file_name: str


# The error code of a task that passed its deadline.
DEADLINE_PASSED: Final = "DEADLINE_PASSED"


class TaskError(BaseModel):
    """Why a task failed. It holds a stable code and a message the caller can show their
    customers. The message comes from exports.core.customer_errors and never repeats the
    driver's words."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    code: str
    message: str


class CallbackStatus(StrEnum):
    """Whether a task's callback is still pending, was delivered, or failed for good."""

    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"


class CallbackState(BaseModel):
    """How a callback has gone so far: its status, its attempts and its last error. The task
    records it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: CallbackStatus = CallbackStatus.PENDING
    attempts: int = 0
    last_error: str | None = None


class Subscriber(BaseModel):
    """One submitter's callback: the URL it goes to and how its delivery went.

    A task has one subscriber for each submitter who asked for a callback. That is the first
    submitter, and each later identical request merged into the task. Each subscriber's callback
    is signed, retried and recorded on its own.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    url: str
    state: CallbackState = CallbackState()


class Task(BaseModel):
    """One export job, from submission to its terminal state."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    task_id: str
    user_id: str
    export_type: str
    format: ExportFormat
    filters: dict[str, Any]
    # The values the export type took from the submitter's token, such as a tenant id or groups,
    # as they were at submit. Every run, partition and resumption of the task reads these.
    caller: dict[str, Any] = Field(default_factory=dict)
    # The submitter's tenant, from their token. The audit trail chains the task's records and
    # counts its usage under it. Records written before tenants were recorded have None.
    tenant: str | None = None
    csv_bom: bool = False
    # CSV only. When True, text that starts with = + - @, a tab or a CR gets a leading ', as OWASP
    # advises against formula injection. False keeps the text as it is.
    csv_formula_guard: bool = True
    # The IANA zone that date-times from instants are written in (see exports.core.zones).
    # Records written before zones existed read as the default, UTC.
    timezone: str = UTC_ZONE
    # CSV only. How the file is spelled: its delimiter, line ending, decimal mark and encoding.
    csv_dialect: CsvDialect = DEFAULT_DIALECT
    # The locale of the labels in CSV, XLSX and PDF files (see exports.core.locales). Submit
    # resolves it, and uses the type's default when the request asked for none. Records written
    # before locales existed have none.
    locale: str | None = None
    priority: int = Limits.PRIORITY_DEFAULT
    timeout_sec: int = Limits.TIMEOUT_SEC_DEFAULT
    status: TaskStatus = TaskStatus.PENDING
    progress: int = Field(default=0, ge=0, le=100)
    rows_written: int = 0
    attempt: int = 0
    retry_count: int = 0
    max_retries: int = TASK_RETRY.retries
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime
    lease_expires_at: datetime | None = None
    result: ExportResult | None = None
    error: TaskError | None = None
    source: TaskSource = TaskSource.API
    retry_of: str | None = None
    # For a scheduled run: its schedule and the firing time it runs for.
    # GET /v1/exports?schedule_id= lists a schedule's runs by them.
    schedule_id: str | None = None
    scheduled_for: datetime | None = None
    # skip_empty is True when the run's schedule skips empty runs (when_empty = skip).
    # empty_skipped is True when this run then ended COMPLETED with 0 rows and so kept no file.
    # Its webhook says the run was empty and skipped.
    skip_empty: bool = False
    empty_skipped: bool = False
    # Identical active submissions share this key; the first task holds it until it ends.
    dedup_key: str | None = None
    # How many times a long export handed over to a new worker invocation (see
    # exports/running/export_run.py).
    continuations: int = 0
    # Every status change adds one to it. Callbacks carry it as callback_seq, so that receivers
    # can keep the latest.
    status_seq: int = 0
    # Who is called back when the task ends, in the order they asked (see Subscriber).
    subscribers: tuple[Subscriber, ...] = ()
    # Where the file goes once the task is COMPLETED (see docs/destinations.md), and how the
    # delivery to each destination went.
    delivery: DeliveryPlan | None = None
    deliveries: tuple[Delivery, ...] = ()
    # The lifecycle workflow's task token. Whoever ends the task hands the outcome to the
    # workflow with this token.
    lifecycle_token: str | None = None
    # For a split export: the rows each partition of the current attempt wrote. rows_written is
    # their sum.
    partition_rows: dict[str, int] | None = None
    # The rows submit expected, when the type knows its count or its speed was measured. A run
    # that knows no better measures its progress against this number.
    estimated_rows: int | None = None
    # Admission by deadline accepts a task only when its wait plus its run should end before its
    # deadline (see exports.core.capacity_rules). queued_work_sec is the estimated run in seconds.
    # queued_in names the capacity pools that count it as queued work until the task first starts.
    queued_work_sec: float | None = None
    queued_in: tuple[str, ...] = ()
    # True when that estimate came from its type's measured runs, not from the defaults' guess.
    # Only such a task's start tells its pools how fast they drain.
    queued_work_measured: bool = False

    @model_validator(mode="before")
    @classmethod
    def _one_callback_is_one_subscriber(cls, data: Any) -> Any:
        """Reads a record written before subscribers existed. Its ``callback_url`` and
        ``callback`` become one subscriber."""
        if isinstance(data, dict) and "callback_url" in data:
            data = dict(data)
            url, state = data.pop("callback_url"), data.pop("callback", None)
            if url and not data.get("subscribers"):
                data["subscribers"] = [{"url": url, "state": state or {}}]
        return data

    @property
    def callback_url(self) -> str | None:
        """The first subscriber's URL. It is the task's own submitter's, if they asked for a
        callback."""
        return self.subscribers[0].url if self.subscribers else None

    @property
    def callback(self) -> CallbackState | None:
        """The state of the first subscriber's callback."""
        return self.subscribers[0].state if self.subscribers else None

    @property
    def pending_callbacks(self) -> list[int]:
        """The positions of the subscribers whose callback has not ended yet."""
        return [i for i, s in enumerate(self.subscribers) if s.state.status is CallbackStatus.PENDING]

    @property
    def has_file(self) -> bool:
        """Whether the task COMPLETED with a file to download. An empty run that was skipped has
        none."""
        return self.status is TaskStatus.COMPLETED and self.result is not None and not self.empty_skipped

    @property
    def notifies_at_end(self) -> bool:
        """Whether the callback function has work to do when the task ends.

        It does when the task has subscribers to call back. It also does for every scheduled
        run: it records the run's outcome on its schedule and sends the run's mail. The workflow
        reads this as ``has_callback``.
        """
        return bool(self.subscribers) or self.schedule_id is not None

    @property
    def delivers(self) -> bool:
        """Whether the task's file goes to destinations when it ends. The workflow reads this as
        ``has_deliveries``."""
        return bool(self.deliveries)

    @property
    def is_terminal(self) -> bool:
        """Whether the task has reached a state it never leaves."""
        return self.status in TERMINAL

    @property
    def queue_places(self) -> tuple[str, ...]:
        """The capacity pools that still count this task's work as queued.

        These are the pools the task was admitted to, until it first starts or ends. A retry or a
        continuation is not counted again.
        """
        if self.status is TaskStatus.PENDING and self.attempt == 0 and self.queued_work_sec is not None:
            return self.queued_in
        return ()

    @property
    def deadline(self) -> datetime:
        """When the task times out if it has not finished."""
        return self.created_at + timedelta(seconds=self.timeout_sec)

    def lease_is_live(self, now: datetime) -> bool:
        """Whether a worker holds this RUNNING task right now.

        A worker holds a task under a lease. The lease runs out at ``lease_expires_at`` unless the
        worker renews it.
        """
        return self.status is TaskStatus.RUNNING and self.lease_expires_at is not None and self.lease_expires_at > now

    def is_claimable(self, now: datetime) -> bool:
        """Whether a worker may take the task: it is PENDING, or it is RUNNING under a lease that
        ran out because its worker died."""
        return self.status is TaskStatus.PENDING or (self.status is TaskStatus.RUNNING and not self.lease_is_live(now))

    def _move(self, target: TaskStatus, **changes: Any) -> Task:
        check_transition(self.status, target)
        return self.model_copy(update={"status": target, "status_seq": self.status_seq + 1, **changes})


def new_task(
    *,
    task_id: str,
    user_id: str,
    export_type: str,
    format: ExportFormat,
    filters: dict[str, Any],
    now: datetime,
    retention: timedelta,
    caller: dict[str, Any] | None = None,
    tenant: str | None = None,
    estimated_rows: int | None = None,
    csv_bom: bool = False,
    csv_formula_guard: bool = True,
    timezone: str = UTC_ZONE,
    csv_dialect: CsvDialect = DEFAULT_DIALECT,
    locale: str | None = None,
    priority: int = Limits.PRIORITY_DEFAULT,
    timeout_sec: int = Limits.TIMEOUT_SEC_DEFAULT,
    callback_url: str | None = None,
    max_retries: int = TASK_RETRY.retries,
    source: TaskSource = TaskSource.API,
    retry_of: str | None = None,
    dedup_key: str | None = None,
    schedule_id: str | None = None,
    scheduled_for: datetime | None = None,
    skip_empty: bool = False,
    delivery: DeliveryPlan | None = None,
) -> Task:
    """Creates a new PENDING task. Its record expires at the latest ``retention`` after the
    task's deadline."""
    return Task(
        task_id=task_id,
        user_id=user_id,
        export_type=export_type,
        format=format,
        filters=filters,
        caller=caller or {},
        tenant=tenant,
        estimated_rows=estimated_rows,
        csv_bom=csv_bom,
        csv_formula_guard=csv_formula_guard,
        timezone=timezone,
        csv_dialect=csv_dialect,
        locale=locale,
        priority=priority,
        timeout_sec=timeout_sec,
        max_retries=max_retries,
        created_at=now,
        expires_at=now + timedelta(seconds=timeout_sec) + retention,
        source=source,
        retry_of=retry_of,
        dedup_key=dedup_key,
        schedule_id=schedule_id,
        scheduled_for=scheduled_for,
        skip_empty=skip_empty,
        subscribers=(Subscriber(url=callback_url),) if callback_url else (),
        delivery=delivery,
        deliveries=initial(delivery.destination_ids) if delivery else (),
    )


def claim(task: Task, now: datetime, lease: timedelta) -> Task:
    """Gives the task to a worker. The task becomes RUNNING under a fresh lease, with the next
    attempt number."""
    if not task.is_claimable(now):
        raise InvalidTransition(current=task.status.value, target=TaskStatus.RUNNING.value)
    return task._move(
        TaskStatus.RUNNING,
        attempt=task.attempt + 1,
        started_at=task.started_at or now,
        lease_expires_at=now + lease,
        progress=0,
        rows_written=0,
        partition_rows=None,
    )


def record_progress(task: Task, rows_written: int, progress: int, now: datetime, lease: timedelta) -> Task:
    """Records the progress of a RUNNING task and renews the worker's lease."""
    if task.status is not TaskStatus.RUNNING:
        raise InvalidTransition(current=task.status.value, target=TaskStatus.RUNNING.value)
    return task.model_copy(
        update={
            "rows_written": rows_written,
            "progress": max(0, min(progress, 99)),
            "lease_expires_at": now + lease,
        }
    )


def split(task: Task, partitions: int) -> Task:
    """Marks a RUNNING task that is about to be written in ``partitions`` partitions.

    Each partition starts at 0 rows, so the task shows from the start how many partitions it was
    split into.
    """
    if task.status is not TaskStatus.RUNNING:
        raise InvalidTransition(current=task.status.value, target=TaskStatus.RUNNING.value)
    return task.model_copy(update={"partition_rows": {str(index): 0 for index in range(partitions)}})


def record_partition_progress(
    task: Task, partition: int, rows_written: int, planned_rows: int, now: datetime, lease: timedelta
) -> Task:
    """Records the progress of one partition of a split RUNNING task.

    The task shows the rows of all its partitions summed, and the share of the planned rows
    written so far. The call also renews the lease.
    """
    counts = {**(task.partition_rows or {}), str(partition): rows_written}
    total = sum(counts.values())
    progress = total * 100 // planned_rows if planned_rows else 0
    return record_progress(task, total, progress, now, lease).model_copy(update={"partition_rows": counts})


def suspend(task: Task) -> Task:
    """Sends a RUNNING export that saved a checkpoint back to PENDING for its next invocation.

    Unlike :func:`requeue` it spends no retry and records no error. The rows and progress so far
    stay visible while the task waits.
    """
    return task._move(
        TaskStatus.PENDING,
        continuations=task.continuations + 1,
        lease_expires_at=None,
    )


def complete(task: Task, result: ExportResult, now: datetime, retention: timedelta) -> Task:
    """Ends the task COMPLETED with its file.

    A run whose schedule skips empty runs keeps no file when it found no row. Then
    ``empty_skipped`` is set, and the worker removes the file.
    """
    return task._move(
        TaskStatus.COMPLETED,
        result=result,
        empty_skipped=task.skip_empty and result.rows == 0,
        rows_written=result.rows,
        progress=100,
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
        error=None,
    )


def fail(task: Task, code: str, message: str, now: datetime, retention: timedelta) -> Task:
    """Ends the task FAILED, without a file."""
    return task._move(
        TaskStatus.FAILED,
        error=TaskError(code=code, message=message),
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def requeue(task: Task, code: str, message: str) -> Task:
    """Sends the task back to PENDING for another try after a transient failure. The try counts
    against the task's retry budget."""
    return task._move(
        TaskStatus.PENDING,
        retry_count=task.retry_count + 1,
        error=TaskError(code=code, message=message),
        lease_expires_at=None,
        progress=0,
        rows_written=0,
    )


# The error code of a task that would start too late to finish, so it was not begun
# (docs/capacity.md, "No wasted work").
DEADLINE_UNREACHABLE: Final = "DEADLINE_UNREACHABLE"


def time_out(task: Task, now: datetime, retention: timedelta, message: str | None = None) -> Task:
    """Ends the task TIMEOUT because it passed its deadline before finishing. ``message`` is the
    type's own message for DEADLINE_PASSED, if it has one."""
    return task._move(
        TaskStatus.TIMEOUT,
        error=TaskError(code=DEADLINE_PASSED, message=message or customer_message(DEADLINE_PASSED, task.task_id)),
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def not_begun(task: Task, now: datetime, retention: timedelta, message: str | None = None) -> Task:
    """Ends the task TIMEOUT at once, before anything begins, because it would start too late to
    finish by its deadline. ``message`` is the type's own message for DEADLINE_UNREACHABLE, if it
    has one."""
    return task._move(
        TaskStatus.TIMEOUT,
        error=TaskError(
            code=DEADLINE_UNREACHABLE,
            message=message or customer_message(DEADLINE_UNREACHABLE, task.task_id),
        ),
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def cancel(task: Task, now: datetime, retention: timedelta) -> Task:
    """Ends the task CANCELLED: its owner cancelled it before it ended."""
    return task._move(
        TaskStatus.CANCELLED,
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def _with_subscriber(task: Task, index: int, state: CallbackState) -> Task:
    subscribers = list(task.subscribers)
    subscribers[index] = subscribers[index].model_copy(update={"state": state})
    return task.model_copy(update={"subscribers": tuple(subscribers)})


def record_callback(task: Task, delivered: bool, error: str | None, final: bool, index: int = 0) -> Task:
    """Records one more attempt of subscriber ``index``'s callback. The callback was delivered,
    failed for good (``final``), or is to be retried."""
    state = task.subscribers[index].state
    status = CallbackStatus.PENDING
    if delivered or final:
        status = CallbackStatus.DELIVERED if delivered else CallbackStatus.FAILED
    return _with_subscriber(task, index, CallbackState(status=status, attempts=state.attempts + 1, last_error=error))


def give_up_callback(task: Task, error: str | None) -> Task:
    """Fails for good every callback still pending, because the retries are exhausted.

    Each callback keeps its last attempt's own error. ``error`` says what stopped the retries and
    is only used when no error was recorded.
    """
    for index in task.pending_callbacks:
        state = task.subscribers[index].state
        failed = CallbackState(
            status=CallbackStatus.FAILED, attempts=state.attempts, last_error=state.last_error or error
        )
        task = _with_subscriber(task, index, failed)
    return task


def merge_request(task: Task, priority: int, callback_url: str | None) -> Task:
    """Merges an identical request into the active ``task``.

    The task runs at the higher of the two priorities (1 is the highest). It also calls the new
    submitter back, once per URL.
    """
    if task.is_terminal:
        raise InvalidTransition(current=task.status.value, target="merged")
    subscribers = task.subscribers
    if callback_url and all(subscriber.url != callback_url for subscriber in subscribers):
        subscribers = (*subscribers, Subscriber(url=callback_url))
    return task.model_copy(update={"priority": min(task.priority, priority), "subscribers": subscribers})
