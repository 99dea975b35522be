"""Fakes for running exports without AWS: tasks, queue, result files with checkpoints, a clock,
and small export types with known rows."""

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict

from exports.core.aws.errors import ObjectMissing
from exports.core.config.limits import Admission
from exports.core.config.queues import LANES, lane_for
from exports.core.config.settings import WorkerSettings
from exports.core.errors import ConditionFailed, DuplicateSubmission, ExportsError, InvalidRequest, Overloaded
from exports.core.events import LifecycleEvent
from exports.core.export_type import Column, ColumnKind, Cursor, ExportType, Page, Row, RunControl
from exports.core.ids import is_task_id
from exports.core.ports import Receipt, TaskPage
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat, Task, claim
from exports.export_types.registry import ExportTypeRegistry
from exports.running.dependencies import WorkerDependencies
from exports.running.ports import SlotLease
from tests.unit.builders import LEASE, NOW, make_task

MIB = 1024 * 1024


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime = NOW) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class FakeTasks:
    """:class:`exports.core.ports.TaskRepository` in memory, with the adapter's conditions (same status
    and attempt, quota slots, dedup markers); tests/contract checks it against DynamoDB."""

    def __init__(self, *tasks: Task) -> None:
        self.tasks = {task.task_id: task for task in tasks}
        self.active: dict[str, int] = {}
        # dedup key -> (holder, the holder's deadline)
        self.dedup: dict[str, tuple[str, datetime]] = {}
        self.writes: list[tuple[datetime | None, Task]] = []
        self.clock: FakeClock | None = None

    def create(self, task: Task, max_active: int, replace_holder: str | None = None) -> None:
        if task.task_id in self.tasks:
            raise ConditionFailed(f"task {task.task_id} exists")
        if task.dedup_key and task.dedup_key in self.dedup:
            holder, until = self.dedup[task.dedup_key]
            free = holder == replace_holder if replace_holder else until < task.created_at
            if not free:
                raise DuplicateSubmission(holder)
        if self.active.get(task.user_id, 0) >= max_active:
            raise Overloaded("quota", code="QUOTA_EXCEEDED", retry_after=Admission.RETRY_AFTER_QUOTA_SEC)
        self.active[task.user_id] = self.active.get(task.user_id, 0) + 1
        if task.dedup_key:
            self.dedup[task.dedup_key] = (task.task_id, task.deadline)
        self.tasks[task.task_id] = task

    def dedup_holder(self, dedup_key: str) -> str | None:
        return self.dedup[dedup_key][0] if dedup_key in self.dedup else None

    def release_dedup(self, task: Task) -> None:
        if task.dedup_key and self.dedup.get(task.dedup_key, ("",))[0] == task.task_id:
            del self.dedup[task.dedup_key]

    def active_count(self, user_id: str) -> int:
        return self.active.get(user_id, 0)

    def get(self, task_id: str) -> Task | None:
        return self.tasks.get(task_id)

    def update(self, before: Task, after: Task) -> None:
        """Like the adapter, writes only the fields that changed (others stay as stored)."""
        old, new = before.model_dump(), after.model_dump()
        changes = {name: value for name, value in new.items() if old[name] != value}
        if not changes:
            return
        self._write(before, changes)
        if after.is_terminal and not before.is_terminal:
            self.active[before.user_id] -= 1

    def record_progress(self, task: Task) -> None:
        self._write(task, task.model_dump(include={"rows_written", "progress", "lease_expires_at"}))

    def record_callbacks(self, task: Task) -> None:
        self._write(task, task.model_dump(include={"subscribers"}))

    def record_deliveries(self, before: Task, after: Task) -> None:
        current = self._current(before)
        stored = list(current.deliveries)
        for index, (old, new) in enumerate(zip(before.deliveries, after.deliveries, strict=True)):
            if old == new:
                continue
            was = stored[index]
            if (was.status, was.attempts, was.requested_retries) != (old.status, old.attempts, old.requested_retries):
                raise ConditionFailed("changed", current=current.model_dump(mode="json"))
            stored[index] = new
        self._write(before, {"deliveries": tuple(stored)})

    def merge(self, before: Task, after: Task) -> None:
        current = self._current(before)
        if (current.priority, current.subscribers) != (before.priority, before.subscribers):
            raise ConditionFailed("changed", current=current.model_dump(mode="json"))
        self.update(before, after)

    def update_partitions(self, before: Task, after: Task) -> None:
        if self.tasks[before.task_id].partition_rows != before.partition_rows:
            raise ConditionFailed("changed", current=self.tasks[before.task_id].model_dump())
        self.update(before, after)

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        if task_id not in self.tasks:
            raise ConditionFailed(f"task {task_id} does not exist")
        self.tasks[task_id] = self.tasks[task_id].model_copy(update={"lifecycle_token": token})
        return self.tasks[task_id]

    def list_for_user(
        self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None, schedule_id: str | None = None
    ) -> TaskPage:
        after = cursor
        if cursor is not None and not is_task_id(cursor):
            raise InvalidRequest("next_token is not valid", field="next_token")
        tasks = sorted(
            (
                task
                for task in self.tasks.values()
                if task.user_id == user_id
                and (status is None or task.status is status)
                and (schedule_id is None or task.schedule_id == schedule_id)
                and (after is None or task.task_id < after)
            ),
            key=lambda task: task.task_id,
            reverse=True,
        )
        page = tasks[:limit]
        more = len(tasks) > limit
        return TaskPage(tasks=page, cursor=page[-1].task_id if more else None)

    def _current(self, before: Task) -> Task:
        current = self.tasks.get(before.task_id)
        if current is None or (current.status, current.attempt) != (before.status, before.attempt):
            raise ConditionFailed("changed", current=current.model_dump(mode="json") if current else None)
        return current

    def _write(self, before: Task, changes: dict[str, Any]) -> None:
        current = self._current(before)
        stored = Task.model_validate(current.model_dump() | changes)
        self.tasks[before.task_id] = stored
        self.writes.append((self.clock() if self.clock else None, stored))


class FakeQueue:
    """:class:`exports.core.ports.TaskQueue` in memory: lanes of waiting messages, exact depths.

    ``sent`` keeps every message with its delay; a delayed message does not count as waiting (SQS
    counts it apart); :meth:`receive` is what a worker's poll does to a lane."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, int]] = []
        self.redelivered: list[tuple[Receipt, int]] = []
        self._waiting = {lane.name: 0 for lane in LANES}
        self._running = {lane.name: 0 for lane in LANES}

    def send(self, message: Any, delay_sec: int = 0) -> None:
        self.sent.append((message, delay_sec))
        if delay_sec <= 0:
            self._waiting[lane_for(message.priority).name] += 1

    def receive(self, lane: str) -> Receipt:
        """A worker takes one waiting message of ``lane``: it runs until deleted."""
        self._waiting[lane] -= 1
        self._running[lane] += 1
        queue_name = next(each.queue_name for each in LANES if each.name == lane)
        return Receipt(f"arn:aws:sqs:us-east-1:123456789012:{queue_name}", f"receipt-{len(self.redelivered)}", 1)

    def depths(self) -> dict[str, int]:
        return dict(self._waiting)

    def retry_later(self, receipt: Receipt, delay_sec: int) -> None:
        """Without a delay the message waits again at once; with one it stays in flight."""
        queue_name = receipt.queue_arn.rsplit(":", 1)[-1]
        lane = next((each.name for each in LANES if each.queue_name == queue_name), None)
        if lane is None:
            raise ExportsError(f"not one of the task queues: {receipt.queue_arn}")
        self.redelivered.append((receipt, delay_sec))
        if delay_sec <= 0 and self._running[lane]:
            self._running[lane] -= 1
            self._waiting[lane] += 1


class FakeMetrics:
    def __init__(self) -> None:
        self.points: list[tuple[str, float]] = []
        self.dimensions: list[tuple[str, dict[str, str]]] = []

    def add(self, name: str, value: float = 1, unit: str = "Count", dimensions: Any = None) -> None:
        self.points.append((name, value))
        if dimensions:
            self.dimensions.append((name, dict(dimensions)))


class FakeFileUpload:
    """A multipart upload into :class:`FakeFiles`."""

    def __init__(self, files: "FakeFiles", key: str, upload_id: str, parts: Sequence[tuple[int, str]] = ()) -> None:
        self.files = files
        self.key = key
        self.upload_id = upload_id
        self.parts = list(parts)

    def upload_part(self, data: bytes) -> None:
        self.upload_part_number(len(self.parts) + 1, data)

    def upload_part_number(self, number: int, data: bytes) -> str:
        self.files.uploads[self.upload_id]["parts"][number] = bytes(data)
        etag = f'"etag-{number}"'
        self.parts.append((number, etag))
        return etag

    def complete(self) -> None:
        # As S3: the parts named, in the order of their numbers.
        upload = self.files.uploads.pop(self.upload_id)
        parts = sorted(self.parts)
        body = b"".join(upload["parts"][number] for number, _ in parts)
        self.files.objects[self.key] = {"body": body, "metadata": upload["metadata"], "parts": len(parts)}

    def abort(self) -> None:
        self.files.uploads.pop(self.upload_id, None)
        self.files.aborted.append(self.upload_id)


class FakeFiles:
    """Result files in memory: uploads that can be resumed, checkpoints, tags."""

    READ_CHUNK = 64 * 1024

    def __init__(self) -> None:
        self.uploads: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, dict[str, Any]] = {}
        self.checkpoints: dict[str, bytes] = {}
        self.tags: dict[str, dict[str, str]] = {}
        self.aborted: list[str] = []
        self._next = 0

    def start_upload(self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]) -> FakeFileUpload:
        self._next += 1
        upload_id = f"upload-{self._next}"
        self.uploads[upload_id] = {
            "parts": {},
            "metadata": {**metadata, "content_type": content_type, "file_name": file_name},
        }
        return FakeFileUpload(self, key, upload_id)

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> FakeFileUpload:
        return FakeFileUpload(self, key, upload_id, parts)

    def read_result(self, key: str) -> Iterator[bytes]:
        if key not in self.objects:  # as S3ResultStore: S3's NoSuchKey, translated
            raise ObjectMissing(f"read result: {key} does not exist", aws_code="NoSuchKey")
        body = self.objects[key]["body"]
        for start in range(0, len(body), self.READ_CHUNK):
            yield body[start : start + self.READ_CHUNK]

    def read_checkpoint(self, key: str) -> bytes | None:
        return self.checkpoints.get(key)

    def write_checkpoint(self, key: str, body: bytes) -> None:
        self.checkpoints[key] = body

    def delete_checkpoint(self, key: str) -> None:
        self.checkpoints.pop(key, None)

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        self.tags[key] = dict(tags)

    def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    def presign_download(self, key: str, file_name: str, ttl_sec: int) -> str:
        return f"https://example.com/{key}"


class FreeSlots:
    """:class:`exports.running.ports.SourceSlotLeases` whose sources always have a free slot (tests of a
    limit use ``service_fakes.FakeSourceSlots``)."""

    def acquire(self, source: str, limit: int, holder: str, now: datetime) -> SlotLease | None:
        return SlotLease(source, 0, holder)

    def renew(self, lease: SlotLease, now: datetime) -> bool:
        return True

    def release(self, lease: SlotLease) -> None:
        pass


class FakeFanOut:
    """:class:`exports.running.ports.FanOutStarter` that records the split exports it was asked to start
    (task id, attempt, partitions)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int, int]] = []

    def start(self, task_id: str, attempt: int, partitions: int) -> None:
        self.started.append((task_id, attempt, partitions))


class NoFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")


NUMBER_COLUMNS = [
    Column("n", "N", ColumnKind.INTEGER),
    Column("day", "Day", ColumnKind.DATE),
    Column("amount", "Amount", ColumnKind.DECIMAL),
    Column("text", "Text"),
]


def number_row(n: int) -> Row:
    return (n, date(2025, 1, 1) + timedelta(days=n % 365), Decimal(n) / 100, f"row {n} 王芳 =x" if n % 7 else "=1+1")


class NumbersExport(ExportType):
    """``rows_total`` numbered rows in pages of ``page_rows``; the cursor is the next number.
    ``before_page`` runs before each page is read (a test's hook)."""

    name = "numbers"
    description = "Numbered rows."
    filters_model = NoFilters

    def __init__(
        self,
        rows_total: int = 100,
        page_rows: int = 10,
        expected: int | None = None,
        before_page: Callable[[int], None] | None = None,
        fractions: bool = True,
        counted: int | None = None,
    ) -> None:
        self.rows_total = rows_total
        # What count_rows answers (a SQL source's count(*)); None: the type cannot count.
        self.counted = counted
        self.counts = 0
        self.page_rows = page_rows
        self.expected = expected
        self.before_page = before_page
        # Whether each page says how much of the work is done (a SQL source does not).
        self.fractions = fractions

    def columns(self, filters: Any) -> list[Column]:
        return list(NUMBER_COLUMNS)

    def pages(self, filters: Any, cursor: Cursor | None = None) -> Iterator[Page]:
        start = cursor["next"] if cursor else 0
        for first in range(start, self.rows_total, self.page_rows):
            if self.before_page:
                self.before_page(first)
            last = min(first + self.page_rows, self.rows_total)
            fraction = last / self.rows_total if self.fractions else None
            yield Page([number_row(n) for n in range(first, last)], {"next": last}, fraction)

    def expected_rows(self, filters: Any) -> int | None:
        return self.expected

    def count_rows(self, filters: Any, control: RunControl) -> int | None:
        self.counts += 1
        return self.counted

    def file_stem(self, filters: Any) -> str:
        return "numbers"


def numbers_in(registry: ExportTypeRegistry, name: str = "numbers") -> NumbersExport:
    """The registered NumbersExport ``name``, to set its ``before_page`` hook."""
    export = registry.get(name)
    assert isinstance(export, NumbersExport), f"{name} is not a NumbersExport"
    return export


class PlainNumbersExport(ExportType):
    """The same rows through rows() only: it cannot resume."""

    name = "plain_numbers"
    description = "Numbered rows without cursors."
    filters_model = NoFilters
    rows_total = 100

    def columns(self, filters: Any) -> list[Column]:
        return list(NUMBER_COLUMNS)

    def rows(self, filters: Any, on_fraction: Callable[[float], None] = lambda _: None) -> Iterator[Row]:
        for n in range(self.rows_total):
            yield number_row(n)

    def file_stem(self, filters: Any) -> str:
        return "plain_numbers"


@dataclasses.dataclass
class World:
    """The worker's dependencies made of fakes, and the fakes themselves."""

    deps: WorkerDependencies
    tasks: FakeTasks
    queue: FakeQueue
    files: FakeFiles
    clock: FakeClock
    metrics: FakeMetrics


def make_world(*export_types: ExportType, files: FakeFiles | None = None, **settings: Any) -> World:
    """The worker's dependencies of fakes; fields the export never uses are left as plain objects."""
    clock, tasks, queue, metrics = FakeClock(), FakeTasks(), FakeQueue(), FakeMetrics()
    tasks.clock = clock
    files = files if files is not None else FakeFiles()
    given = {
        "settings": WorkerSettings.model_construct(
            **{"progress_interval_sec": 2.0, "lease_sec": 120, "upload_part_bytes": 5 * MIB, **settings}
        ),
        "tasks": tasks,
        "queue": queue,
        "results": files,
        "registry": ExportTypeRegistry(export_types or [NumbersExport()]),
        "metrics": metrics,
        "slots": FreeSlots(),
        "fan_out": FakeFanOut(),
        "events": FakeEvents(),
        "clock": clock,
    }
    fields: dict[str, Any] = {
        field.name: given.get(field.name, object())
        for field in dataclasses.fields(WorkerDependencies)
        if field.name in given
        or (field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING)
    }
    return World(WorkerDependencies(**fields), tasks, queue, files, clock, metrics)


def running_task(world: World, export_type: str = "numbers", fmt: ExportFormat = ExportFormat.CSV, **fields: Any):
    """A claimed task of ``export_type``, stored in the world's task fakes."""
    task = claim(make_task(export_type=export_type, format=fmt, filters={}, **fields), world.clock(), LEASE)
    world.tasks.tasks[task.task_id] = task
    return task


def reclaim(world: World, task_id: str) -> Task:
    """What the next invocation does with a PENDING task: claim it again."""
    task = world.tasks.get(task_id)
    assert task is not None, f"{task_id} is not stored"
    claimed = claim(task, world.clock(), LEASE)
    world.tasks.update(task, claimed)
    return claimed


class FakeEvents:
    """:class:`exports.core.ports.LifecycleEvents` that keeps what is published, in order."""

    def __init__(self) -> None:
        self.published: list[LifecycleEvent] = []

    def publish(self, events: Sequence[LifecycleEvent]) -> None:
        self.published.extend(events)
