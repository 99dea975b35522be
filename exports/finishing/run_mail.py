"""The mail of a scheduled run: its subject and text, with the file's link, as SES sends it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from exports.core.deliveries import Delivery, DeliveryStatus
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
class DestinationLabel:
    """How the mail names a destination to people: its name (the customer's own text) and kind."""

    name: str
    kind: str


@dataclass(frozen=True)
class Message:
    """A mail's subject and text."""

    subject: str
    text: str


def run_message(
    schedule: Schedule,
    task: Task,
    link: str | None,
    link_expires_at: datetime | None,
    paused: PauseReason | None,
    attached: bool = False,
    destinations: Mapping[str, DestinationLabel] | None = None,
) -> Message:
    """The mail of ``task``'s end: outcome, rows, whether the file is attached or the link and
    until when it works, and where each delivery put the file (or why it did not), naming each
    destination by its label in ``destinations`` (by id: one deleted meanwhile, or not looked up)."""
    # A stored name never carries a control character (the API refuses them); made safe anyway.
    title = header_text(schedule.name or schedule.export_type)
    zone = ZoneInfo(schedule.timezone)
    when = (task.scheduled_for or task.created_at).astimezone(zone)
    lines = [f"Scheduled export: {title} ({schedule.export_type}, {task.format.value})"]
    lines.append(f"Run for: {when.isoformat()} ({schedule.timezone})")
    if task.status is TaskStatus.COMPLETED and task.result is not None:
        subject = f"{title}: {task.result.rows} rows ready"
        lines.append(f"Status: COMPLETED, {task.result.rows} rows, {task.result.bytes} bytes")
        if attached:
            lines.append(f"Attached: {task.result.file_name}")
        elif link is not None and link_expires_at is not None:
            lines.append(f"Not attached; download (until {link_expires_at.astimezone(zone).isoformat()}): {link}")
    else:
        subject = f"{title}: run {task.status.value.lower()}"
        lines.append(f"Status: {task.status.value}")
        if task.error is not None:
            lines.append(f"Error: {task.error.code}: {task.error.message}")
    labels = destinations or {}
    lines.extend(_delivery_line(delivery, labels.get(delivery.destination_id)) for delivery in task.deliveries)
    if paused is not None:
        lines.append(f"The schedule is now paused ({paused.code.value}): {paused.message}")
    lines.append(f"{_TASK_LINE}{task.task_id}; schedule: {schedule.schedule_id}")
    return Message(subject=subject, text="\n".join(lines) + "\n")


def _destination(destination_id: str, label: DestinationLabel | None) -> str:
    """The destination as the mail names it: ``"Acme SFTP" (sftp)``, or its id when it has no label.

    The name is the customer's text and the mail is plain text (no markup to escape): it is quoted,
    and a control or line-separator character in it becomes a space, so a name can never add a
    line (a "Delivered to" or "Task:" line of its own) to the mail.
    """
    if label is None:
        return destination_id
    return f'"{header_text(label.name)}" ({label.kind})'


def _delivery_line(delivery: Delivery, label: DestinationLabel | None) -> str:
    """Where one delivery put the file, or why it did not (the customer-safe message only)."""
    where = _destination(delivery.destination_id, label)
    if delivery.status is DeliveryStatus.DELIVERED:
        return f"Delivered to {where}: {delivery.remote_path}"
    if delivery.status is DeliveryStatus.FAILED:
        reason = delivery.error.message if delivery.error else "the delivery failed"
        return f"Delivery to {where} failed ({delivery.attempts} attempts): {reason}"
    if delivery.status is DeliveryStatus.SKIPPED:
        return f"Not delivered to {where}: the run has no file"
    return f"Delivery to {where}: still being tried"


def task_of(text: str) -> str | None:
    """The task id a run's mail (:func:`run_message`) names on its last line; None for other mail."""
    last = text.rstrip("\n").rpartition("\n")[2]
    if not last.startswith(_TASK_LINE):
        return None
    return last.removeprefix(_TASK_LINE).partition(";")[0] or None
