"""The mail of a scheduled run: its subject and text, with the file's link, as SES sends it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.schedules.mail import header_text
from exports.schedules.model import PauseReason, Schedule

# A mailed link is presigned for this long (capped by the file's own expiry): long enough to be
# read the same day; afterwards the file is downloaded through the API.
MAIL_LINK_TTL_SEC = 12 * 3600

# The last line of a run's mail names its task (written last: a schedule's name, in the first
# line, cannot stand in for it).
_TASK_LINE = "Task: "


@dataclass(frozen=True)
class Message:
    """A mail's subject and text."""

    subject: str
    text: str


def run_message(
    schedule: Schedule, task: Task, link: str | None, link_expires_at: datetime | None, paused: PauseReason | None
) -> Message:
    """The mail of ``task``'s end: outcome, rows, the link and until when it works."""
    # A stored name never carries a control character (the API refuses them); made safe anyway.
    title = header_text(schedule.name or schedule.export_type)
    zone = ZoneInfo(schedule.timezone)
    when = (task.scheduled_for or task.created_at).astimezone(zone)
    lines = [f"Scheduled export: {title} ({schedule.export_type}, {task.format.value})"]
    lines.append(f"Run for: {when.isoformat()} ({schedule.timezone})")
    if task.status is TaskStatus.COMPLETED and task.result is not None:
        subject = f"{title}: {task.result.rows} rows ready"
        lines.append(f"Status: COMPLETED, {task.result.rows} rows, {task.result.bytes} bytes")
        if link is not None and link_expires_at is not None:
            lines.append(f"Download (until {link_expires_at.astimezone(zone).isoformat()}): {link}")
    else:
        subject = f"{title}: run {task.status.value.lower()}"
        lines.append(f"Status: {task.status.value}")
        if task.error is not None:
            lines.append(f"Error: {task.error.code}: {task.error.message}")
    if paused is not None:
        lines.append(f"The schedule is now paused ({paused.code.value}): {paused.message}")
    lines.append(f"{_TASK_LINE}{task.task_id}; schedule: {schedule.schedule_id}")
    return Message(subject=subject, text="\n".join(lines) + "\n")


def task_of(text: str) -> str | None:
    """The task id a run's mail (:func:`run_message`) names on its last line; None for other mail."""
    last = text.rstrip("\n").rpartition("\n")[2]
    if not last.startswith(_TASK_LINE):
        return None
    return last.removeprefix(_TASK_LINE).partition(";")[0] or None
