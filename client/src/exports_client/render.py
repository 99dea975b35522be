"""What ``exportctl`` shows: tables and details for people, JSON for scripts, progress while waiting."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Final, TextIO

from pydantic import BaseModel
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from exports_client.models import ExportTypeView, TaskStatus, TaskView

# Off a terminal nothing is wrapped or cut: lines stay whole for grep and logs.
_PIPE_WIDTH: Final = 200
_STATUS_STYLE: Final = {
    TaskStatus.PENDING: "yellow",
    TaskStatus.RUNNING: "cyan",
    TaskStatus.COMPLETED: "green",
    TaskStatus.FAILED: "red",
    TaskStatus.TIMEOUT: "red",
    TaskStatus.CANCELLED: "magenta",
}


def console(stream: TextIO) -> Console:
    """A rich console on ``stream``: colours and the terminal's width on a TTY, plain text elsewhere."""
    return Console(file=stream, width=None if stream.isatty() else _PIPE_WIDTH, highlight=False, soft_wrap=False)


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
        data: Any = value.model_dump(mode="json")
    elif isinstance(value, dict):
        data = value
    else:
        data = [item.model_dump(mode="json") for item in value]
    return json.dumps(data, indent=2, ensure_ascii=False)


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _status(task: TaskView) -> str:
    return f"[{_STATUS_STYLE[task.status]}]{task.status.value}[/]"


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
        ("progress", f"{task.progress}%, {task.rows_written:,} rows written"),
        ("attempt", f"{task.attempt} (retries {task.retry_count} of {task.max_retries})"),
        ("created", _when(task.created_at)),
        ("started", _when(task.started_at)),
        ("finished", _when(task.finished_at)),
        ("deadline", _when(task.deadline)),
        ("error", f"{task.error.code}: {task.error.message}" if task.error else None),
        ("file", task.file_name),
        ("size", human_size(task.size_bytes) if task.size_bytes is not None else None),
        ("rows", f"{task.rows:,}" if task.rows is not None else None),
        ("sha256", task.sha256),
        ("link expires", _when(task.download_expires_at) if task.download_expires_at else None),
        ("kept until", _when(task.expires_at)),
    ]
    for label, value in lines:
        if value is not None:
            grid.add_row(label, value)
    return grid


def _accepts(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short human description of what a JSON Schema accepts (the subset filters use)."""
    if "$ref" in schema:
        return _accepts(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "anyOf" in schema:
        return " or ".join(_accepts(option, defs) for option in schema["anyOf"] if option.get("type") != "null")
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"a list, each {_accepts(schema.get('items', {}), defs)}"
    return str(schema.get("format") or schema.get("type") or "any")


def types_view(export_types: Iterable[ExportTypeView]) -> Group:
    """Each export type: its formats, its description and its filters."""
    blocks: list[RenderableType] = []
    for export_type in export_types:
        schema = export_type.filters_schema
        required = set(schema.get("required", []))
        defs = schema.get("$defs", {})
        filters = Table(box=None, pad_edge=False, header_style="bold", padding=(0, 2, 0, 0))
        for header in ("FILTER (* required)", "ACCEPTS", "DESCRIPTION"):
            filters.add_column(header)
        for name, spec in schema.get("properties", {}).items():
            filters.add_row(f"{name}{'*' if name in required else ''}", _accepts(spec, defs), spec.get("description"))
        formats = ", ".join(fmt.value for fmt in export_type.formats)
        blocks += [
            f"[bold]{export_type.name}[/] ({formats}): {export_type.description}",
            Padding(filters, (0, 0, 1, 2)),
        ]
    return Group(*blocks)


class ProgressReporter:
    """Shows a task's progress while ``exportctl`` waits for it.

    On a terminal: a live bar (status, percent, rows, elapsed). Elsewhere: one plain line each
    time the status, the percentage or the row count changes, so logs stay readable.
    """

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._last: tuple[TaskStatus, int, int] | None = None
        self._bar: Progress | None = None
        self._bar_task: TaskID | None = None
        if stream.isatty():
            self._bar = Progress(
                TextColumn("{task.fields[status]:<9}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rows]:>10,} rows"),
                TimeElapsedColumn(),
                console=console(stream),
                transient=False,
            )

    def __enter__(self) -> ProgressReporter:
        if self._bar is not None:
            self._bar.start()
            self._bar_task = self._bar.add_task("export", total=100, status="SUBMITTED", rows=0)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, task: TaskView) -> None:
        """Show ``task``'s latest state."""
        state = (task.status, task.progress, task.rows_written)
        if self._bar is not None and self._bar_task is not None:
            self._bar.update(self._bar_task, completed=task.progress, status=task.status.value, rows=task.rows_written)
            return
        if state == self._last:
            return
        self._last = state
        elapsed = self._clock() - self._started
        print(
            f"{task.task_id} {task.status.value:<9} {task.progress:>3}% {task.rows_written:>10,} rows {elapsed:7.1f}s",
            file=self._stream,
            flush=True,
        )
