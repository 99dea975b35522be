"""A schedule's latest file at a stable URL: its owner's ``GET /v1/schedules/{id}/latest``, and an
optional secret permalink for tools that cannot send a token (a spreadsheet's ``IMPORTDATA``).
Both answer a freshly presigned link to the newest COMPLETED run's file. The permalink's key is
shown once; the schedule keeps only its SHA-256, so a rotation or a revocation stops the old
key at once (the schedule is read strongly consistent)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from exports.core.config.schedules import Schedules
from exports.core.errors import ConditionFailed, ServiceUnavailable
from exports.core.task import Task
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.model import Schedule
from exports.schedules.ports import NoLatestFile, ScheduleNotFound
from exports.schedules.service import owned_schedule

_WRITE_ATTEMPTS = 3
# 256 bits of randomness, URL-safe.
_KEY_BYTES = 32


@dataclass(frozen=True)
class LatestLink:
    """A presigned link to a schedule's latest file: the run it is of (what the audit trail
    records before the link is handed out), the link and when it stops working."""

    task: Task
    url: str
    expires_at: datetime


def latest_link(schedule: Schedule, deps: ScheduleDependencies) -> LatestLink:
    """A fresh presigned link to the newest COMPLETED run's file (valid
    ``Schedules.LATEST_LINK_TTL_SEC`` or until the file expires); :class:`NoLatestFile` when
    there is none kept."""
    task = deps.api.tasks.get(schedule.latest_task_id) if schedule.latest_task_id else None
    now = deps.api.clock()
    if task is None or not task.has_file or task.result is None or task.expires_at <= now:
        raise NoLatestFile(schedule.schedule_id)
    ttl = max(1, min(Schedules.LATEST_LINK_TTL_SEC, int((task.expires_at - now) / timedelta(seconds=1))))
    url = deps.api.results.presign_download(task.result.key, task.result.file_name, ttl)
    return LatestLink(task=task, url=url, expires_at=now + timedelta(seconds=ttl))


def owner_latest(schedule_id: str, user_id: str, deps: ScheduleDependencies) -> LatestLink:
    """The link for the schedule's owner (another user's schedule is not found)."""
    return latest_link(owned_schedule(schedule_id, user_id, deps), deps)


def permalink_latest(schedule_id: str, key: str, deps: ScheduleDependencies) -> LatestLink:
    """The link for whoever holds the permalink's key; a wrong, rotated or revoked key, like no
    schedule, is not found."""
    schedule = deps.schedules.get(schedule_id)
    stored = schedule.permalink_hash if schedule is not None else None
    if schedule is None or stored is None or not hmac.compare_digest(stored, _digest(key)):
        raise ScheduleNotFound(schedule_id)
    return latest_link(schedule, deps)


def mint_permalink(schedule_id: str, user_id: str, deps: ScheduleDependencies) -> tuple[str, Schedule]:
    """A new key for the schedule's permalink (the previous key stops working): the key, and
    the schedule as written (its change is recorded in the audit trail, never the key)."""
    key = secrets.token_urlsafe(_KEY_BYTES)
    return key, _set_hash(schedule_id, user_id, _digest(key), deps)


def revoke_permalink(schedule_id: str, user_id: str, deps: ScheduleDependencies) -> Schedule:
    """No permalink any more: its key stops working. The schedule as written."""
    return _set_hash(schedule_id, user_id, None, deps)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _set_hash(schedule_id: str, user_id: str, digest: str | None, deps: ScheduleDependencies) -> Schedule:
    for _ in range(_WRITE_ATTEMPTS):
        schedule = owned_schedule(schedule_id, user_id, deps)
        if schedule.permalink_hash == digest:
            return schedule
        try:
            return deps.schedules.replace(
                schedule, schedule.model_copy(update={"permalink_hash": digest, "updated_at": deps.api.clock()})
            )
        except ConditionFailed:
            continue
    raise ServiceUnavailable("the schedule kept changing; try again")
