"""One firing of a schedule: what EventBridge Scheduler, or local mode's loop, invokes.

A firing makes exactly one task, however often it arrives and however many invocations of it run
at once. A firing is identified by the schedule id and the scheduled time that Scheduler gives.
Its record in the schedules table is claimed by a conditional write, which exactly one invocation
wins.

Before it creates the task, the firing checks that the export type still exists and that the
type's access rule still admits the claims stored with the schedule. If not, or if the stored
filters no longer pass the type, the schedule pauses itself with the reason, and Scheduler stops
invoking it.

A run refused for capacity (admission's 429) is deferred. The claim is given back, and the
firing arrives again after the refusal's Retry-After, with jitter, within its deferral window
(exports/schedules/spread.py). A firing whose window has passed is missed, which is never a
failure of the schedule. A transient fault, such as the queue's, gives the claim back and raises.
Scheduler's retry policy then invokes the firing again, and after its retries sends it to its
dead-letter queue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from exports.core.caller import CallerRefused
from exports.core.config.metrics import Metric
from exports.core.errors import ConditionFailed, ExportsError, InvalidRequest, Overloaded
from exports.core.event_publishing import publish
from exports.core.events import schedule_paused
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.model import PauseCode, PauseReason, Schedule, caller_of, pause
from exports.schedules.ports import FeedBusy, ScheduleTimer
from exports.schedules.service import follow_moved_firing, submit_run
from exports.schedules.spread import deferral_deadline

logger = logging.getLogger(__name__)
_PAUSE_ATTEMPTS = 3


class FiringOutcome(StrEnum):
    """What one invocation of a firing did."""

    CREATED = "created"
    # Another invocation of the same firing made its task, or is making it.
    DUPLICATE = "duplicate"
    PAUSED = "paused"
    # The schedule was paused or deleted before this firing, so there is nothing to do.
    SKIPPED = "skipped"
    # Refused for capacity. The firing arrives again later, within its deferral window.
    DEFERRED = "deferred"
    # Refused for capacity until its deferral window closed. This firing has no run.
    MISSED = "missed"
    # A feed's previous run is still in flight, so no task is made. The next run covers this
    # span too.
    BUSY = "busy"


@dataclass(frozen=True)
class Firing:
    """What a firing did: its outcome, and its task when known."""

    outcome: FiringOutcome
    task_id: str | None = None
    reason: PauseReason | None = None
    # For a deferred firing: when it arrives again.
    retry_at: datetime | None = None


def fire(schedule_id: str, scheduled_for: datetime, deps: ScheduleDependencies) -> Firing:
    """Creates the task of the firing of ``schedule_id`` at ``scheduled_for``, once.
    ``scheduled_for`` is an aware UTC datetime."""
    schedule = deps.schedules.get(schedule_id)
    if schedule is None or not schedule.is_active:
        reason = schedule.paused_reason if schedule is not None else None
        if schedule is not None and reason is not None and reason.code in _FIRING_PAUSES:
            # The firing that paused the schedule arrived again, perhaps because its audit record
            # failed. The pause is recorded only once.
            _record_pause(schedule, deps)
        return Firing(FiringOutcome.SKIPPED)
    now = deps.api.clock()
    claim = deps.schedules.claim_firing(schedule_id, scheduled_for, now)
    if not claim.won:
        deps.api.metrics.add(Metric.SCHEDULE_DUPLICATE_FIRING)
        return Firing(FiringOutcome.DUPLICATE, claim.task_id)
    refusal = _refusal(schedule, deps)
    if refusal is not None:
        deps.schedules.finish_firing(schedule_id, scheduled_for, claim.token, None)
        return Firing(FiringOutcome.PAUSED, reason=_pause(schedule, refusal, deps))
    try:
        submission = submit_run(schedule, caller_of(schedule), scheduled_for, deps)
    except FeedBusy as busy:
        deps.schedules.finish_firing(schedule_id, scheduled_for, claim.token, None)
        deps.api.metrics.add(Metric.FEED_FIRING_SKIPPED)
        return Firing(FiringOutcome.BUSY, busy.task_id)
    except (InvalidRequest, CallerRefused) as refused:
        deps.schedules.finish_firing(schedule_id, scheduled_for, claim.token, None)
        reason = PauseReason(code=PauseCode.FILTERS_INVALID, message=f"the export was refused: {refused.message}")
        if isinstance(refused, CallerRefused):
            reason = _revoked(refused.message)
        return Firing(FiringOutcome.PAUSED, reason=_pause(schedule, reason, deps))
    except Overloaded as refused:
        deps.schedules.release_firing(schedule_id, scheduled_for, claim.token)
        if deps.timer is None:
            raise  # only Scheduler's own retries can invoke it again
        return _defer(schedule, scheduled_for, refused, now, deps.timer, deps)
    except ExportsError:
        deps.schedules.release_firing(schedule_id, scheduled_for, claim.token)
        raise
    task_id = submission.task.task_id
    deps.schedules.finish_firing(schedule_id, scheduled_for, claim.token, task_id)
    deps.api.metrics.add(Metric.SCHEDULE_FIRED)
    _next_moved_firing(schedule, max(now, scheduled_for), deps)
    return Firing(FiringOutcome.CREATED, task_id)


def _defer(
    schedule: Schedule,
    scheduled_for: datetime,
    refused: Overloaded,
    now: datetime,
    timer: ScheduleTimer,
    deps: ScheduleDependencies,
) -> Firing:
    """Has the refused firing invoked again after the refusal's Retry-After, plus up to half as
    long again, so that schedules refused together do not come back together.

    That happens only within the firing's deferral window. Otherwise the firing is missed.
    """
    at = now + timedelta(seconds=refused.retry_after * (1 + 0.5 * deps.api.random()))
    extra = {"schedule_id": schedule.schedule_id, "scheduled_for": scheduled_for.isoformat(), "code": refused.code}
    if at > deferral_deadline(schedule, scheduled_for):
        deps.api.metrics.add(Metric.SCHEDULE_MISSED)
        logger.warning("a firing refused for capacity missed its deferral window", extra=extra)
        return Firing(FiringOutcome.MISSED)
    timer.defer_firing(schedule, scheduled_for, at)
    deps.api.metrics.add(Metric.SCHEDULE_DEFERRED)
    logger.info("a firing refused for capacity is deferred", extra={**extra, "retry_at": at.isoformat()})
    return Firing(FiringOutcome.DEFERRED, retry_at=at)


def _next_moved_firing(schedule: Schedule, after: datetime, deps: ScheduleDependencies) -> None:
    """Points the one-time Scheduler schedule at the schedule's next moved firing.

    A moved firing is one that a daylight saving gap moved to another time (docs/schedules.md).
    This runs after the moved firing itself fired. Scheduler deletes the one-time schedule once
    it has invoked it; should that come after this update, the next firing creates it again.
    This also runs after every other firing, so that a one-time schedule that failed to follow,
    or whose firing came within the horizon, is put right. The task already exists, so a fault
    here is only logged, and the next firing tries again.
    """
    try:
        follow_moved_firing(schedule, after, deps)
    except ExportsError:
        logger.exception(
            "the moved firing's Scheduler schedule did not follow", extra={"schedule_id": schedule.schedule_id}
        )


def _revoked(detail: str) -> PauseReason:
    return PauseReason(
        code=PauseCode.ACCESS_REVOKED, message=f"its owner may no longer run this export type ({detail})"
    )


def _refusal(schedule: Schedule, deps: ScheduleDependencies) -> PauseReason | None:
    """Why the schedule may not run now, checked against its stored claims. None means it may
    run."""
    try:
        export_type = deps.api.registry.get(schedule.export_type)
    except InvalidRequest:
        return PauseReason(
            code=PauseCode.EXPORT_TYPE_GONE, message=f"export type {schedule.export_type} no longer exists"
        )
    if not export_type.allows(caller_of(schedule)):
        return _revoked("the type's access rule no longer admits the claims stored with the schedule")
    return None


# The pauses a firing makes. The other pauses are the owner's own, and the run end's after
# several failures in a row.
_FIRING_PAUSES: Final = frozenset({PauseCode.EXPORT_TYPE_GONE, PauseCode.ACCESS_REVOKED, PauseCode.FILTERS_INVALID})


def _pause(schedule: Schedule, reason: PauseReason, deps: ScheduleDependencies) -> PauseReason:
    """Pauses the schedule with ``reason``, records the pause in the audit trail, and disables
    its Scheduler schedule.

    The pause is a conditional write. When it loses, the schedule is read again. A firing that
    arrives again after the pause was written records the pause again, and it is still recorded
    only once (:func:`exports.schedules.audit_records.record_pause`).
    """
    current: Schedule | None = schedule
    for _ in range(_PAUSE_ATTEMPTS):
        if current is None or not current.is_active:
            if current is not None and current.paused_reason == reason:
                _record_pause(current, deps)
            return reason
        try:
            paused = deps.schedules.replace(current, pause(current, reason, deps.api.clock()))
        except ConditionFailed:
            current = deps.schedules.get(schedule.schedule_id)
            continue
        logger.warning("schedule paused", extra={"schedule_id": schedule.schedule_id, "reason": reason.code.value})
        deps.api.metrics.add(Metric.SCHEDULE_PAUSED)
        _record_pause(paused, deps)
        event = schedule_paused(
            paused.schedule_id, paused.user_id, paused.export_type, reason.code.value, reason.message, deps.api.clock()
        )
        publish(deps.api.events, event)
        if deps.timer is not None:
            now = deps.api.clock()
            deps.timer.update(paused, now)
            follow_moved_firing(paused, now, deps)  # the schedule is paused, so this removes it
        return reason
    return reason


def _record_pause(paused: Schedule, deps: ScheduleDependencies) -> None:
    """Records the pause in the audit trail, where the deployment keeps one (docs/audit.md)."""
    if deps.api.audit is not None:
        from exports.schedules.audit_records import record_pause

        record_pause(paused, caller_of(paused), deps.api.audit)
