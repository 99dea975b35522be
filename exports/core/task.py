"""The export task and the operations that change it.

Every operation returns a new :class:`Task`; each status change goes through
:func:`exports.core.status.check_transition`. Persisting the change (conditionally on the
status the operation started from) is the repository's job.
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
    # CSV compressed with gzip (one gzip member); downloads as ``.csv.gz``.
    CSV_GZ = "csv.gz"
    XLSX = "xlsx"
    # A paginated table to read and print (exports/running/writers/pdf); written in one worker run.
    PDF = "pdf"
    # JSON Lines: one JSON object per row (docs/export-types.md, "JSON Lines and Parquet").
    JSONL = "jsonl"
    # JSON Lines compressed with gzip (one gzip member), like csv.gz.
    JSONL_GZ = "jsonl.gz"
    PARQUET = "parquet"


class TaskSource(StrEnum):
    """Why the task exists: a client's request, a retry of an earlier task, or a firing of a
    schedule (docs/schedules.md)."""

    API = "api"
    RETRY = "retry"
    SCHEDULE = "schedule"


@dataclass(frozen=True)
class ScheduledRun:
    """What a scheduled run is for: its schedule and the firing time."""

    schedule_id: str
    scheduled_for: datetime
    # The schedule's when_empty is skip: a run of 0 rows keeps no file and mails no one.
    skip_empty: bool = False


# Every model here is built on first use (defer_build): a handler's import does not pay for
# validators its request path may never run (docs/performance.md, "Cold starts").


class ExportResult(BaseModel):
    """Where the finished file is and what it holds."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    bytes: int
    rows: int
    sha256: str
    content_type: str
    file_name: str


# The code of a task that passed its deadline.
DEADLINE_PASSED: Final = "DEADLINE_PASSED"


class TaskError(BaseModel):
    """Why a task failed: a stable code and a message for the caller's customers
    (exports.core.customer_errors: never the driver's words)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    code: str
    message: str


class CallbackStatus(StrEnum):
    """Where the delivery of a task's callback stands."""

    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"


class CallbackState(BaseModel):
    """The outcome of the callback so far, recorded on the task."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: CallbackStatus = CallbackStatus.PENDING
    attempts: int = 0
    last_error: str | None = None


class Subscriber(BaseModel):
    """One submitter's callback: where it goes and how its delivery went. A task has one per
    submitter who asked for a callback (the first, and each identical request merged into it);
    each is signed, retried and recorded on its own."""

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
    # The values the export type bound from the submitter's token (a tenant id, groups), as they
    # were at submit: every run, partition and resumption of the task reads these.
    caller: dict[str, Any] = Field(default_factory=dict)
    # The submitter's tenant, from their token (the audit trail's chain and usage it counts into;
    # None on records written before tenants were recorded).
    tenant: str | None = None
    csv_bom: bool = False
    # CSV only: text starting with = + - @ tab or CR gets a leading ' (OWASP); False keeps it as is.
    csv_formula_guard: bool = True
    # The IANA zone its date-times from instants are written in (exports.core.zones); records
    # written before zones existed read as the default, UTC.
    timezone: str = UTC_ZONE
    # CSV only: how the file is spelled (delimiter, line ending, decimal mark, encoding).
    csv_dialect: CsvDialect = DEFAULT_DIALECT
    # The locale of the labels in CSV, XLSX and PDF (exports.core.locales): resolved at submit,
    # the type's default when none was asked; records written before locales existed have none.
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
    # A scheduled run: its schedule, and the firing time it runs for (GET /v1/exports?schedule_id=).
    schedule_id: str | None = None
    scheduled_for: datetime | None = None
    # A scheduled run whose schedule skips empty runs (when_empty = skip); and whether this one
    # ended COMPLETED with 0 rows and so kept no file (its webhook says empty and skipped).
    skip_empty: bool = False
    empty_skipped: bool = False
    # Identical active submissions share this key; the first task holds it until it ends.
    dedup_key: str | None = None
    # How often a long export handed over to a new worker invocation (see exports/running/export_run.py).
    continuations: int = 0
    # Bumped by every status change; callbacks carry it as callback_seq so receivers keep the latest.
    status_seq: int = 0
    # Who is called back when the task ends, in the order they asked (see Subscriber).
    subscribers: tuple[Subscriber, ...] = ()
    # Where the file goes after COMPLETED (docs/destinations.md), and each destination's delivery.
    delivery: DeliveryPlan | None = None
    deliveries: tuple[Delivery, ...] = ()
    # The lifecycle workflow's task token: whoever ends the task hands the outcome to it.
    lifecycle_token: str | None = None
    # A split export's rows per partition (of the current attempt); rows_written is their sum.
    partition_rows: dict[str, int] | None = None
    # The rows submit expected, when the type knows its count or its speed was measured: a run
    # that knows no better measures its progress against it.
    estimated_rows: int | None = None
    # Admission by deadline (exports.core.capacity_rules): the run this task was estimated at, in
    # seconds, and the capacity pools that count it as queued work until it first starts.
    queued_work_sec: float | None = None
    queued_in: tuple[str, ...] = ()
    # Whether that estimate came from its type's measured runs (not the defaults' guess): only
    # such a task's start tells its pools how fast they drain.
    queued_work_measured: bool = False

    @model_validator(mode="before")
    @classmethod
    def _one_callback_is_one_subscriber(cls, data: Any) -> Any:
        """Records written before subscribers (``callback_url`` and ``callback``) read as one."""
        if isinstance(data, dict) and "callback_url" in data:
            data = dict(data)
            url, state = data.pop("callback_url"), data.pop("callback", None)
            if url and not data.get("subscribers"):
                data["subscribers"] = [{"url": url, "state": state or {}}]
        return data

    @property
    def callback_url(self) -> str | None:
        """The first subscriber's URL (the task's own submitter's, if they asked for one)."""
        return self.subscribers[0].url if self.subscribers else None

    @property
    def callback(self) -> CallbackState | None:
        """The first subscriber's delivery state."""
        return self.subscribers[0].state if self.subscribers else None

    @property
    def pending_callbacks(self) -> list[int]:
        """The positions of the subscribers whose delivery has not ended."""
        return [i for i, s in enumerate(self.subscribers) if s.state.status is CallbackStatus.PENDING]

    @property
    def has_file(self) -> bool:
        """Whether it COMPLETED with a file to download (an empty run skipped has none)."""
        return self.status is TaskStatus.COMPLETED and self.result is not None and not self.empty_skipped

    @property
    def notifies_at_end(self) -> bool:
        """Whether the callback function has work when the task ends: its subscribers' callbacks,
        or, for a scheduled run, the run's outcome on its schedule and its mail (the workflow's
        ``has_callback``)."""
        return bool(self.subscribers) or self.schedule_id is not None

    @property
    def delivers(self) -> bool:
        """Whether its file goes to destinations when it ends (the workflow's ``has_deliveries``)."""
        return bool(self.deliveries)

    @property
    def is_terminal(self) -> bool:
        """Whether the task has reached a state it never leaves."""
        return self.status in TERMINAL

    @property
    def queue_places(self) -> tuple[str, ...]:
        """The capacity pools that still count this task's work as queued: those it was
        admitted to, until its first start or its end (a retry or a continuation is not
        counted again)."""
        if self.status is TaskStatus.PENDING and self.attempt == 0 and self.queued_work_sec is not None:
            return self.queued_in
        return ()

    @property
    def deadline(self) -> datetime:
        """When the task times out if it has not finished."""
        return self.created_at + timedelta(seconds=self.timeout_sec)

    def lease_is_live(self, now: datetime) -> bool:
        """Whether a worker holds this RUNNING task right now."""
        return self.status is TaskStatus.RUNNING and self.lease_expires_at is not None and self.lease_expires_at > now

    def is_claimable(self, now: datetime) -> bool:
        """PENDING, or RUNNING under a lease that ran out (its worker died)."""
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
    """A new PENDING task. Its record expires ``retention`` after its deadline at the latest."""
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
    """The task taken by a worker: RUNNING under a fresh lease, with the next attempt number."""
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
    """Progress of a RUNNING task; also renews the worker's lease."""
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
    """A RUNNING task about to be written in ``partitions`` partitions: each starts at 0 rows, so
    the task shows into how many it was split from the start."""
    if task.status is not TaskStatus.RUNNING:
        raise InvalidTransition(current=task.status.value, target=TaskStatus.RUNNING.value)
    return task.model_copy(update={"partition_rows": {str(index): 0 for index in range(partitions)}})


def record_partition_progress(
    task: Task, partition: int, rows_written: int, planned_rows: int, now: datetime, lease: timedelta
) -> Task:
    """Progress of one partition of a split RUNNING task: the task shows the rows of every
    partition summed, and the share of the plan's rows written; also renews the lease."""
    counts = {**(task.partition_rows or {}), str(partition): rows_written}
    total = sum(counts.values())
    progress = total * 100 // planned_rows if planned_rows else 0
    return record_progress(task, total, progress, now, lease).model_copy(update={"partition_rows": counts})


def suspend(task: Task) -> Task:
    """A RUNNING export that saved a checkpoint goes back to PENDING for its next invocation.

    Unlike :func:`requeue` it spends no retry and records no error; rows and progress so far stay
    visible while the task waits."""
    return task._move(
        TaskStatus.PENDING,
        continuations=task.continuations + 1,
        lease_expires_at=None,
    )


def complete(task: Task, result: ExportResult, now: datetime, retention: timedelta) -> Task:
    """The task finished with its file (a run that skips empty runs and found no row keeps
    none: ``empty_skipped``, and the worker removes the file)."""
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
    """The task ended without a file."""
    return task._move(
        TaskStatus.FAILED,
        error=TaskError(code=code, message=message),
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def requeue(task: Task, code: str, message: str) -> Task:
    """Back to PENDING for another try after a transient failure; counts against the budget."""
    return task._move(
        TaskStatus.PENDING,
        retry_count=task.retry_count + 1,
        error=TaskError(code=code, message=message),
        lease_expires_at=None,
        progress=0,
        rows_written=0,
    )


# A task that started too late to finish was not begun (docs/capacity.md, "No wasted work").
DEADLINE_UNREACHABLE: Final = "DEADLINE_UNREACHABLE"


def time_out(task: Task, now: datetime, retention: timedelta, message: str | None = None) -> Task:
    """The task passed its deadline before finishing; ``message``: the type's own for
    DEADLINE_PASSED, if it has one."""
    return task._move(
        TaskStatus.TIMEOUT,
        error=TaskError(code=DEADLINE_PASSED, message=message or customer_message(DEADLINE_PASSED, task.task_id)),
        finished_at=now,
        expires_at=now + retention,
        lease_expires_at=None,
    )


def not_begun(task: Task, now: datetime, retention: timedelta, message: str | None = None) -> Task:
    """The task was about to start too late to finish by its deadline: it times out at once,
    nothing begun; ``message``: the type's own for DEADLINE_UNREACHABLE, if it has one."""
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
    """The owner cancelled the task before it ended."""
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
    """One more attempt of subscriber ``index``'s callback: delivered, failed for good
    (``final``), or to be retried."""
    state = task.subscribers[index].state
    status = CallbackStatus.PENDING
    if delivered or final:
        status = CallbackStatus.DELIVERED if delivered else CallbackStatus.FAILED
    return _with_subscriber(task, index, CallbackState(status=status, attempts=state.attempts + 1, last_error=error))


def give_up_callback(task: Task, error: str | None) -> Task:
    """Retries are exhausted: every callback still pending failed for good. Each keeps its last
    attempt's own error; ``error`` (what stopped the retries) only fills in when none was
    recorded."""
    for index in task.pending_callbacks:
        state = task.subscribers[index].state
        failed = CallbackState(
            status=CallbackStatus.FAILED, attempts=state.attempts, last_error=state.last_error or error
        )
        task = _with_subscriber(task, index, failed)
    return task


def merge_request(task: Task, priority: int, callback_url: str | None) -> Task:
    """An identical request merged into the active ``task``: the task runs at the higher of the
    two priorities (1 is the highest) and calls the new submitter back too (once per URL)."""
    if task.is_terminal:
        raise InvalidTransition(current=task.status.value, target="merged")
    subscribers = task.subscribers
    if callback_url and all(subscriber.url != callback_url for subscriber in subscribers):
        subscribers = (*subscribers, Subscriber(url=callback_url))
    return task.model_copy(update={"priority": min(task.priority, priority), "subscribers": subscribers})
