"""A scheduled run's end, where the callback function observes it: the outcome on the schedule
(last run, failures in a row, the pause after ``Schedules.MAX_CONSECUTIVE_FAILURES``, a feed's
watermark, the latest file), then the mail to the schedule's recipients (once per run; none for
an empty run skipped), then the run's callbacks carry the pause. A run that delivers its file to
destinations is mailed when its deliveries have ended (:func:`mail_after_deliveries`), so the
mail says where the file went. The pause and the mail are
recorded in the audit trail where the deployment keeps one (docs/audit.md)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from exports.core.config.schedules import Schedules
from exports.core.errors import ConditionFailed, ExportsError
from exports.core.ports import ResultStore
from exports.core.status import TaskStatus
from exports.core.task import Task
from exports.finishing.ports import Attachment, Mailer
from exports.finishing.run_mail import MAIL_LINK_TTL_SEC, DestinationLabel, run_message
from exports.schedules.mail import allowed
from exports.schedules.model import PauseReason, Schedule, caller_of
from exports.schedules.outcome import paused_by, record_run
from exports.schedules.ports import ScheduleStore

if TYPE_CHECKING:
    from exports.audit.service import AuditDependencies
    from exports.finishing.destinations.ports import DestinationStore

logger = logging.getLogger(__name__)
_ATTEMPTS = 3


@dataclass(frozen=True)
class RunEndDependencies:
    """What observing a run's end uses: the schedules, the mailer and its sender (None: no
    mail), the allowed recipient domains, the result files (the mailed link or attachment), the
    largest file attached (bytes; 0: none), the clock, the audit trail (None: the deployment
    keeps none) and the destinations the mail names (None: named by id)."""

    schedules: ScheduleStore
    mailer: Mailer | None
    sender: str | None
    allowed_domains: frozenset[str]
    results: ResultStore
    clock: Callable[[], datetime]
    max_failures: int = Schedules.MAX_CONSECUTIVE_FAILURES
    audit: AuditDependencies | None = None
    attachment_max_bytes: int = Schedules.MAIL_ATTACHMENT_DEFAULT_BYTES
    destinations: DestinationStore | None = None


def on_run_end(task: Task, deps: RunEndDependencies) -> PauseReason | None:
    """Record the ended ``task`` on its schedule and mail its recipients; the pause this run
    caused, if it did (for its callback). Safe to repeat: a run is recorded and mailed once, and
    its pause and mail are in the audit trail once. A write to the trail that fails raises (a
    :class:`exports.core.errors.RetryableError` the callback's retries repeat this for)."""
    if task.schedule_id is None or not task.is_terminal:
        return None
    schedule = _recorded(task, deps)
    if schedule is None:
        return None
    paused = paused_by(schedule, task)
    if paused is not None and deps.audit is not None:
        from exports.schedules.audit_records import record_pause

        # Each repeat records it again: the first attempt's append may be what failed.
        record_pause(schedule, caller_of(schedule), deps.audit)
    # A run still delivering its file is mailed when its deliveries end (mail_after_deliveries).
    if all(delivery.ended for delivery in task.deliveries):
        _mail_once(schedule, task, paused, deps)
    return paused


def mail_after_deliveries(task: Task, deps: RunEndDependencies) -> None:
    """Mail a scheduled run whose deliveries have all ended (what :func:`on_run_end` left for
    then), saying where the file went. Safe to repeat: a run is mailed once."""
    if task.schedule_id is None or not task.is_terminal or not all(d.ended for d in task.deliveries):
        return
    schedule = deps.schedules.get(task.schedule_id)
    if schedule is None or schedule.user_id != task.user_id:
        return
    _mail_once(schedule, task, paused_by(schedule, task), deps)


def _mail_once(schedule: Schedule, task: Task, paused: PauseReason | None, deps: RunEndDependencies) -> None:
    # An empty run its schedule skips is mailed to no one.
    mailed = schedule.recipients and not task.empty_skipped and schedule.mailed_task_id != task.task_id
    if mailed and deps.mailer and deps.sender:
        _mail(schedule, task, paused, deps)


def _recorded(task: Task, deps: RunEndDependencies) -> Schedule | None:
    """The schedule with this run recorded (written now, or already); None when it is gone or
    not the task owner's."""
    for _ in range(_ATTEMPTS):
        schedule = deps.schedules.get(task.schedule_id or "")
        if schedule is None or schedule.user_id != task.user_id:
            return None
        updated = record_run(schedule, task, deps.clock(), deps.max_failures)
        if updated is None:
            return schedule
        try:
            return deps.schedules.replace(schedule, updated)
        except ConditionFailed:
            continue  # a firing or a PATCH wrote meanwhile: record on the new version
    raise ConditionFailed(f"schedule {task.schedule_id} kept changing")


def _mail(schedule: Schedule, task: Task, paused: PauseReason | None, deps: RunEndDependencies) -> None:
    """Send the run's mail, record it in the audit trail, then mark it sent (a failure to send
    is logged and recorded: mail never decides a run's outcome; a crash, or a trail that cannot be
    written, before the mark may send it twice, never lose it or its record)."""
    recipients = allowed(schedule.recipients, deps.allowed_domains, schedule.caller.verified_email)
    link = expires_at = None
    attachment = _attachment(task, deps) if recipients else None
    if task.status is TaskStatus.COMPLETED and task.result is not None and attachment is None:
        now = deps.clock()
        ttl = max(60, min(MAIL_LINK_TTL_SEC, int((task.expires_at - now).total_seconds())))
        link = deps.results.presign_download(task.result.key, task.result.file_name, ttl)
        expires_at = now + timedelta(seconds=ttl)
    message = run_message(
        schedule, task, link, expires_at, paused, attached=attachment is not None, destinations=_labels(task, deps)
    )
    assert deps.mailer is not None and deps.sender is not None
    error = None
    if recipients:
        try:
            deps.mailer.send(deps.sender, recipients, message.subject, message.text, attachment)
        except ExportsError as refused:
            logger.error("the run's mail could not be sent", exc_info=True, extra={"task_id": task.task_id})
            error = refused.message
    if deps.audit is not None:
        from exports.audit.service import record_mail

        left_out = [address for address in schedule.recipients if address not in recipients]
        record_mail(task, recipients, left_out, expires_at, error, deps.audit, attached=attachment is not None)
    if error is not None:
        return
    for _ in range(_ATTEMPTS):
        current = deps.schedules.get(schedule.schedule_id)
        if current is None or current.mailed_task_id == task.task_id:
            return
        try:
            deps.schedules.replace(current, current.model_copy(update={"mailed_task_id": task.task_id}))
            return
        except ConditionFailed:
            continue


def _attachment(task: Task, deps: RunEndDependencies) -> Attachment | None:
    """The run's file to attach: only a file of at most ``attachment_max_bytes`` whose bytes
    read back match its sha256 (else the mail carries the link: a file that cannot be read now
    is logged, and the mail still goes)."""
    if not task.has_file or task.result is None or task.result.bytes > deps.attachment_max_bytes:
        return None
    try:
        data = b"".join(deps.results.read_result(task.result.key))
    except ExportsError:
        logger.warning(
            "the run's file could not be read: mailed as a link", exc_info=True, extra={"task_id": task.task_id}
        )
        return None
    if hashlib.sha256(data).hexdigest() != task.result.sha256:
        logger.warning("the run's file did not match its sha256: mailed as a link", extra={"task_id": task.task_id})
        return None
    return Attachment(file_name=task.result.file_name, content_type=task.result.content_type, data=data)


def _labels(task: Task, deps: RunEndDependencies) -> dict[str, DestinationLabel]:
    """The run's destinations as its mail names them, read now in the task's tenant: one deleted
    meanwhile has none (the mail names it by id), and so has every one when they cannot be read
    (logged: the mail still goes, with ids)."""
    if deps.destinations is None or task.delivery is None:
        return {}
    labels = {}
    try:
        for delivery in task.deliveries:
            destination = deps.destinations.get(task.delivery.tenant, delivery.destination_id)
            if destination is not None:
                labels[delivery.destination_id] = DestinationLabel(destination.name, destination.kind)
    except ExportsError:
        logger.warning(
            "the run's destinations could not be read: named by id", exc_info=True, extra={"task_id": task.task_id}
        )
        return {}
    return labels
