"""What ``exportctl`` shows: tables and details for people, JSON for scripts, progress while waiting."""

from __future__ import annotations

import errno
import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Final, TextIO

from pydantic import BaseModel
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from exports_client.eta import Pace
from exports_client.filters import FilterSchema, constraints, placeholder, type_name
from exports_client.models import (
    Delivery,
    DestinationView,
    ExportTypeView,
    FeedRunView,
    MailMessage,
    ScheduleState,
    ScheduleView,
    TaskStatus,
    TaskView,
)

# Off a terminal nothing is wrapped or cut: lines stay whole for grep and logs.
_PIPE_WIDTH: Final = 200
_STATUS_STYLE: Final[dict[str, str]] = {
    TaskStatus.PENDING: "yellow",
    TaskStatus.RUNNING: "cyan",
    TaskStatus.COMPLETED: "green",
    TaskStatus.FAILED: "red",
    TaskStatus.TIMEOUT: "red",
    TaskStatus.CANCELLED: "magenta",
}


class _Console(Console):
    """rich's console, but a closed pipe is the caller's business: rich's own handling points
    the process's stdout at /dev/null and exits 1, whatever stream it wrote to."""

    def on_broken_pipe(self) -> None:
        """Let ``BrokenPipeError`` through (exportctl ends quietly with 141)."""
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def console(stream: TextIO) -> Console:
    """A rich console on ``stream``: colours and the terminal's width on a TTY, plain text elsewhere."""
    return _Console(file=stream, width=None if stream.isatty() else _PIPE_WIDTH, highlight=False, soft_wrap=False)


def show(view: RenderableType, stream: TextIO) -> None:
    """Print a table or text; off a terminal without the padding rich adds at line ends."""
    out = console(stream)
    if stream.isatty():
        out.print(view)
        return
    with out.capture() as captured:
        out.print(view)
    stream.write("".join(f"{line.rstrip()}\n" for line in captured.get().splitlines()))


def to_json(value: BaseModel | Sequence[BaseModel] | dict[str, Any]) -> str:
    """Indented JSON of a model, a list of models or a dict, as the API spells the fields."""
    if isinstance(value, BaseModel):
        data: Any = value.model_dump(mode="json", by_alias=True)
    elif isinstance(value, dict):
        data = value
    else:
        data = [item.model_dump(mode="json", by_alias=True) for item in value]
    return json.dumps(data, indent=2, ensure_ascii=False)


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _status(task: TaskView) -> str:
    return _styled(task.status)


def _styled(status: str) -> str:
    """A task status in its colour (a StrEnum's members are found by their plain value too)."""
    style = _STATUS_STYLE.get(status)
    return f"[{style}]{status}[/]" if style else status


def human_size(size: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    if size < 1024:
        return f"{size} B"
    value, unit = size / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def task_table(tasks: Iterable[TaskView]) -> Table:
    """One line per task."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in ("TASK", "TYPE", "FORMAT", "STATUS"):
        table.add_column(header, no_wrap=True)
    table.add_column("PROGRESS", justify="right", no_wrap=True)
    table.add_column("ROWS", justify="right", no_wrap=True)
    table.add_column("CREATED", no_wrap=True)
    for task in tasks:
        table.add_row(
            task.task_id,
            task.export_type,
            task.format.value,
            _status(task),
            f"{task.progress}%",
            f"{task.rows if task.rows is not None else task.rows_written:,}",
            _when(task.created_at),
        )
    return table


def task_details(task: TaskView) -> Table:
    """Everything about one task, one field a line."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    filters = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in task.filters.items())
    lines: list[tuple[str, str | None]] = [
        ("task", task.task_id),
        ("status", _status(task)),
        ("export", f"{task.export_type} ({task.format.value}), priority {task.priority}"),
        ("filters", filters or "-"),
        ("time zone", task.timezone if task.timezone != "Etc/UTC" else None),
        ("progress", f"{task.progress}%, {task.rows_written:,} rows written"),
        ("attempt", f"{task.attempt} (retries {task.retry_count} of {task.max_retries})"),
        ("created", _when(task.created_at)),
        ("started", _when(task.started_at)),
        ("finished", _when(task.finished_at)),
        ("deadline", _when(task.deadline)),
        ("error", f"{task.error.code}: {task.error.message}" if task.error else None),
        ("schedule", f"{task.schedule_id}, for {_when(task.scheduled_for)}" if task.schedule_id else None),
        ("file", task.file_name),
        ("size", human_size(task.size_bytes) if task.size_bytes is not None else None),
        ("rows", f"{task.rows:,}" if task.rows is not None else None),
        ("sha256", task.sha256),
        ("link expires", _when(task.download_expires_at) if task.download_expires_at else None),
        ("kept until", _when(task.expires_at)),
        ("deliveries", "\n".join(_delivery(d) for d in task.deliveries) or None),
    ]
    for label, value in lines:
        if value is not None:
            grid.add_row(label, value)
    return grid


def _delivery(delivery: Delivery) -> str:
    """``dst_… DELIVERED /incoming/orders.csv`` or ``dst_… FAILED (3 attempts): AUTH: …``."""
    attempts = f" ({delivery.attempts} attempt{'s' if delivery.attempts != 1 else ''})" if delivery.attempts else ""
    where = f" {delivery.remote_path}" if delivery.remote_path else ""
    error = f": {delivery.error.code}: {delivery.error.message}" if delivery.error else ""
    return f"{delivery.destination_id} {_styled(delivery.status)}{attempts}{where}{error}"


def _where(destination: DestinationView) -> str:
    target = destination.target
    if target.kind == "s3":
        return f"s3://{target.bucket}/{target.prefix} ({target.region})"
    return (
        f"sftp://{target.username}@{target.host}:{target.port}{'' if target.path.startswith('/') else '/'}{target.path}"
    )


def destination_table(destinations: Iterable[DestinationView]) -> Table:
    """One destination a row: id, name, kind, state, where files go."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("ID", "NAME", "KIND", "STATE", "WHERE"):
        table.add_column(column, no_wrap=column != "NAME")
    for destination in destinations:
        table.add_row(
            destination.destination_id,
            destination.name,
            destination.kind.value,
            destination.state.value,
            _where(destination),
        )
    return table


def destination_details(destination: DestinationView) -> Table:
    """Everything about one destination, one field a line (never a secret: the API has none)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    target = destination.target
    sftp = target if target.kind == "sftp" else None
    s3 = target if target.kind == "s3" else None
    use = destination.use
    lines: list[tuple[str, str | None]] = [
        ("destination", destination.destination_id),
        ("name", destination.name),
        ("kind", destination.kind.value),
        ("state", destination.state.value),
        ("where", _where(destination)),
        ("login", sftp.auth.value if sftp else None),
        ("host key", (sftp.host_key_fingerprint or "-") if sftp else None),
        ("offered key", sftp.offered_host_key_fingerprint if sftp else None),
        ("our key", sftp.public_key_fingerprint if sftp else None),
        ("role", s3.role_arn if s3 else None),
        ("external id", s3.external_id if s3 else None),
        ("at rest", (s3.kms_key_arn or s3.server_side_encryption.value) if s3 else None),
        ("encryption", destination.encryption.kind.value),
        ("used by", ", ".join([*use.groups, *use.scopes]) if use and (use.groups or use.scopes) else "everyone"),
        ("created", f"{_when(destination.created_at)} by {destination.created_by}"),
        ("updated", _when(destination.updated_at)),
    ]
    for label, value in lines:
        if value is not None:
            grid.add_row(label, value)
    return grid


def _instant(moment: datetime) -> str:
    """A firing time with its offset, to the second (an interval's runs keep the creation's
    fractions of a second, which say nothing to a reader)."""
    return moment.isoformat(timespec="seconds")


def _filters_text(filters: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in filters.items()) or "-"


def timing(schedule: ScheduleView) -> str:
    """When it fires: its cron, or ``every 30 minutes``."""
    if schedule.cron:
        return schedule.cron
    every = schedule.every.model_dump(exclude_none=True) if schedule.every else {}
    return " ".join(f"every {count} {unit if count != 1 else unit[:-1]}" for unit, count in every.items()) or "-"


def _schedule_state(schedule: ScheduleView) -> str:
    if schedule.state is ScheduleState.ACTIVE:
        return "[green]ACTIVE[/]"
    reason = f" ({schedule.paused_reason.code})" if schedule.paused_reason else ""
    return f"[yellow]PAUSED{reason}[/]"


def _last_run(schedule: ScheduleView) -> str:
    run = schedule.last_run
    return f"{_styled(run.status)} {_when(run.scheduled_for)}" if run else "-"


def schedule_table(schedules: Iterable[ScheduleView]) -> Table:
    """One line per schedule: when it fires, its state, its next and its last run."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in ("SCHEDULE", "NAME", "TYPE", "FORMAT", "WHEN", "ZONE", "STATE", "NEXT RUN", "LAST RUN"):
        table.add_column(header, no_wrap=True)
    table.add_column("FAILURES", justify="right", no_wrap=True)
    for schedule in schedules:
        table.add_row(
            schedule.schedule_id,
            schedule.name or "-",
            schedule.export_type,
            schedule.format,
            timing(schedule),
            schedule.timezone,
            _schedule_state(schedule),
            _instant(schedule.next_runs[0].local) if schedule.next_runs else "-",
            _last_run(schedule),
            str(schedule.consecutive_failures),
        )
    return table


def schedule_details(schedule: ScheduleView) -> Table:
    """Everything about one schedule, one field a line; its next runs in its zone."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    run = schedule.last_run
    reason = schedule.paused_reason
    lines: list[tuple[str, str | None]] = [
        ("schedule", schedule.schedule_id),
        ("name", schedule.name),
        ("state", _schedule_state(schedule)),
        ("paused", f"{reason.code}: {reason.message}" if reason else None),
        ("export", f"{schedule.export_type} ({schedule.format}), priority {schedule.priority}"),
        ("filters", _filters_text(schedule.filters)),
        ("when", f"{timing(schedule)} ({schedule.timezone})"),
        ("from", _when(schedule.start_at) if schedule.start_at else None),
        ("until", _when(schedule.end_at) if schedule.end_at else None),
        ("recipients", ", ".join(schedule.recipients) or None),
        ("delivered to", ", ".join(schedule.destinations) or None),
        ("path template", schedule.path_template if schedule.destinations else None),
        ("callback", schedule.callback_url),
        ("next runs", "\n".join(f"{_instant(r.local)}  ({_instant(r.utc)})" for r in schedule.next_runs) or "-"),
        ("last run", f"{run.task_id or '-'} {_styled(run.status)}, for {_when(run.scheduled_for)}" if run else "-"),
        ("failures", f"{schedule.consecutive_failures} in a row"),
        ("when empty", "skipped (no file, no mail)" if schedule.when_empty == "skip" else None),
        ("watermark", _when(schedule.watermark) if schedule.watermark else None),
        ("running", _feed_run(schedule.feed_run) if schedule.feed_run else None),
        ("latest", schedule.latest_task_id),
        ("permalink", "on" if schedule.permalink else None),
        ("created", _when(schedule.created_at)),
        ("updated", _when(schedule.updated_at)),
    ]
    for label, value in lines:
        if value is not None:
            grid.add_row(label, value)
    return grid


def _feed_run(run: FeedRunView) -> str:
    """A feed's run in flight: its task and the span it covers."""
    return f"{run.task_id or '-'}, changes from {_when(run.window_from)} to {_when(run.window_to)}"


def mailbox_view(messages: Iterable[MailMessage]) -> Group:
    """Each message: when, from whom to whom, its subject and its text."""
    blocks: list[RenderableType] = []
    for message in messages:
        blocks += [
            Text(f"{_when(message.sent_at)}  {message.from_} -> {', '.join(message.to)}"),
            Text(message.subject, style="bold"),
            Padding(Text(message.text), (0, 0, 1, 2)),
        ]
    return Group(*blocks)


def types_view(export_types: Iterable[ExportTypeView]) -> Group:
    """Each export type: its formats, its description, its filters (name, type, required, the
    values or limits it accepts) and how to submit it."""
    blocks: list[RenderableType] = []
    for export_type in export_types:
        schema = FilterSchema(export_type.name, export_type.filters_schema)
        filters = Table(box=None, pad_edge=False, header_style="bold", padding=(0, 2, 0, 0))
        for header in ("FILTER", "TYPE", "REQUIRED", "VALUES", "DESCRIPTION"):
            filters.add_column(header)
        for name, spec in schema.properties.items():
            required = "yes" if name in schema.required else "no"
            filters.add_row(name, type_name(spec), required, constraints(spec) or "-", spec.get("description"))
        formats = ", ".join(fmt.value for fmt in export_type.formats)
        blocks += [
            f"[bold]{export_type.name}[/] ({formats}): {export_type.description}",
            Padding(filters, (0, 0, 0, 2)),
            Padding(Text(submit_example(schema)), (0, 0, 1, 2)),
        ]
    return Group(*blocks)


def submit_example(schema: FilterSchema) -> str:
    """``exportctl submit TYPE ...`` with the type's required filters and its optional ones in
    brackets, ``--from``/``--to`` standing for its date range."""
    words = [f"exportctl submit {schema.export_type}"]
    date_range = schema.date_range()
    shortcuts = {date_range[0]: "--from", date_range[1]: "--to"} if date_range else {}
    for name, spec in schema.properties.items():
        option = shortcuts.get(name)
        word = f"{option} {placeholder(spec)}" if option else f"--filter {name}={placeholder(spec)}"
        words.append(word if name in schema.required else f"[{word}]")
    return " ".join(words)


def _clock_text(seconds: float | None) -> str:
    """``75`` -> ``0:01:15``; unknown -> ``-:--:--``."""
    if seconds is None:
        return "-:--:--"
    whole = max(0, math.ceil(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _rate_text(rate: float | None) -> str:
    return f"{rate:,.0f} rows/s" if rate is not None else "- rows/s"


@dataclass(frozen=True)
class _Sample:
    at: float
    progress: int
    rows: int


class _Speed:
    """Rows per second from the states seen over the last ``window`` seconds, and the time left
    (:class:`exports_client.eta.Pace`). A finished task's rate is its rows over its own run time,
    as the service timed it."""

    def __init__(self, window: float) -> None:
        self._window = window
        self._samples: deque[_Sample] = deque()
        self._pace = Pace()

    def observe(self, task: TaskView, now: float) -> tuple[float | None, float | None]:
        """(rows/s, seconds left) after seeing ``task`` at ``now``; None where not known yet."""
        left = self._pace.seconds_left(task.status is TaskStatus.RUNNING, task.progress, task.rows_written, now)
        if task.is_terminal:
            if task.status is not TaskStatus.COMPLETED:
                return None, None
            ran = (task.finished_at - task.started_at).total_seconds() if task.finished_at and task.started_at else 0
            rows = task.rows if task.rows is not None else task.rows_written
            return (rows / ran if ran > 0 else None), 0.0
        if task.status is not TaskStatus.RUNNING or (task.progress == 0 and task.rows_written == 0):
            return None, None  # not started: no row read yet
        self._samples.append(_Sample(now, task.progress, task.rows_written))
        while len(self._samples) > 2 and self._samples[1].at <= now - self._window:
            self._samples.popleft()
        first, last = self._samples[0], self._samples[-1]
        elapsed = last.at - first.at
        return (max(0.0, (last.rows - first.rows) / elapsed) if elapsed > 0 else None), left


class _EtaColumn(ProgressColumn):
    """``ETA 0:00:12``, counting down between polls from the last estimate."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock

    def render(self, task: Task) -> Text:
        """The time left, as of now."""
        left, at = task.fields.get("left"), task.fields.get("left_at")
        remaining = None if left is None or at is None else left - (self._clock() - at)
        return Text(f"ETA {_clock_text(remaining)}")


class ProgressReporter:
    """Shows a task's progress while ``exportctl`` waits for it.

    On a terminal: a live bar (status, percent, rows, rows/s, ETA, elapsed). Elsewhere: one
    plain line each time the status, the percentage or the row count changes, so logs stay
    readable. Rows per second and the ETA come from the states seen over the last
    ``RATE_WINDOW_SEC`` seconds.
    """

    RATE_WINDOW_SEC: Final = 20.0

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._speed = _Speed(self.RATE_WINDOW_SEC)
        self._last: tuple[TaskStatus, int, int] | None = None
        self._bar: Progress | None = None
        self._bar_task: TaskID | None = None
        if stream.isatty():
            self._bar = Progress(
                TextColumn("{task.fields[status]:<9}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rows]:>10,} rows"),
                TextColumn("{task.fields[rate]:>14}"),
                _EtaColumn(clock),
                TimeElapsedColumn(),
                console=console(stream),
                transient=False,
                get_time=clock,
            )

    def __enter__(self) -> ProgressReporter:
        if self._bar is not None:
            self._bar.start()
            self._bar_task = self._bar.add_task(
                "export", total=100, status="SUBMITTED", rows=0, rate=_rate_text(None), left=None, left_at=None
            )
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, task: TaskView) -> None:
        """Show ``task``'s latest state."""
        now = self._clock()
        rate, left = self._speed.observe(task, now)
        rows = task.rows if task.is_terminal and task.rows is not None else task.rows_written
        if self._bar is not None and self._bar_task is not None:
            self._bar.update(
                self._bar_task,
                completed=task.progress,
                status=task.status.value,
                rows=rows,
                rate=_rate_text(rate),
                left=left,
                left_at=now,
            )
            if task.is_terminal:
                self._bar.refresh()
            return
        state = (task.status, task.progress, rows)
        if state == self._last:
            return
        self._last = state
        elapsed = now - self._started
        print(
            f"{task.task_id} {task.status.value:<9} {task.progress:>3}% {rows:>10,} rows {_rate_text(rate):>14}"
            f"  ETA {_clock_text(left)} {elapsed:7.1f}s",
            file=self._stream,
            flush=True,
        )
