"""Delivering a COMPLETED task's file to the destinations it names: one attempt per pending
delivery per call; the lifecycle workflow's ``DeliverFiles`` state owns the retries
(:data:`exports.core.config.retry.FILE_DELIVERY_RETRY`) and ``GiveUpFiles`` the end. A FAILED
delivery retried on request (:mod:`exports.api.redelivery`) is a round of its own: the redelivery
workflow's same two states, for that destination and round only (:func:`deliveries.owned_by`).

Each delivery is recorded on the task as it goes (``status``, ``attempts``, ``remote_path``,
``delivered_at``, the customer's ``error``), a delivered one is never sent again, and the export
stays COMPLETED whatever happens here. The destination is read again at each attempt, in the
task's tenant only: one deleted (or changed) meanwhile is what the attempt uses.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from exports.core import deliveries
from exports.core.config.destinations import Destinations
from exports.core.config.events import Events
from exports.core.config.metrics import Metric
from exports.core.deliveries import Delivery, DeliveryError, DeliveryStatus, TemplateError
from exports.core.errors import ConditionFailed, ExportsError, RetryableError
from exports.core.event_publishing import publish
from exports.core.events import LifecycleEvent
from exports.core.ports import BusinessMetrics, LifecycleEvents
from exports.core.task import Task
from exports.finishing.delivery import encryption
from exports.finishing.delivery.encryption import EncryptionRefused
from exports.finishing.destinations.kind import KindAdapter
from exports.finishing.destinations.model import Destination, DestinationState
from exports.finishing.destinations.ports import DestinationStore, SecretMissing, SecretVault
from exports.finishing.destinations.problems import DestinationProblem
from exports.finishing.destinations.secrets import DestinationSecrets
from exports.finishing.schedule_run_end import RunEndDependencies, mail_after_deliveries

if TYPE_CHECKING:
    from exports.audit.service import AuditDependencies

logger = logging.getLogger(__name__)


class DeliveryRetryable(RetryableError):
    """A destination did not take the file this time; the workflow retries on this name
    (:attr:`exports.core.config.destinations.Destinations.DELIVERY_RETRYABLE_ERROR`)."""

    code = "DELIVERY_RETRYABLE"


assert DeliveryRetryable.__name__ == Destinations.DELIVERY_RETRYABLE_ERROR


class DeliveryTasks(Protocol):
    """The tasks as delivery reads and records them."""

    def get(self, task_id: str) -> Task | None:
        """The task, or None."""

    def record_deliveries(self, before: Task, after: Task) -> None:
        """Write the deliveries of ``after`` that differ from ``before``'s, each only if it is
        still stored as ``before`` has it (:class:`ConditionFailed` otherwise)."""


class DeliveryNotices(Protocol):
    """Tells the task's subscribers that a delivery ended (webhooks)."""

    def send(self, task: Task, delivery: Delivery) -> None:
        """Tell them; never raises."""


class ResultFiles(Protocol):
    """The finished files in our bucket."""

    def read_result(self, key: str) -> Iterator[bytes]:
        """The file at ``key``, in chunks."""


@dataclass(frozen=True)
class DeliveryDependencies:
    """What delivering needs: the task, the tenant's destinations and their secrets, our file,
    one deliverer per kind, and where business events go."""

    tasks: DeliveryTasks
    destinations: DestinationStore
    vault: SecretVault
    results: ResultFiles
    # Each registered kind's adapter, by its name (exports.finishing.destinations.registry.adapters).
    kinds: Mapping[str, KindAdapter]
    metrics: BusinessMetrics
    clock: Callable[[], datetime]
    events: LifecycleEvents | None = None
    notices: DeliveryNotices | None = None
    # Where the file is copied before it goes out (Lambda's ephemeral storage).
    scratch: Path | None = None
    # A scheduled run's mail, sent once its deliveries have ended (None: no schedules here).
    run_end: RunEndDependencies | None = None
    # The tenant's audit trail: each delivery that ended is a record (None: none is kept).
    audit: AuditDependencies | None = None


@dataclass(frozen=True)
class Round:
    """Whose attempts a call makes: the lifecycle workflow's (the default: every destination,
    round 0) or a retry on request's (one destination, its round)."""

    requested_retries: int = 0
    destination_id: str | None = None

    def owns(self, delivery: Delivery) -> bool:
        """Whether this round attempts (or gives up) ``delivery`` now."""
        return deliveries.owned_by(delivery, self.requested_retries, self.destination_id)


WORKFLOW_ROUND = Round()


def deliver_files(task_id: str, deps: DeliveryDependencies, scope: Round = WORKFLOW_ROUND) -> Task | None:
    """One attempt at each pending delivery of the task that ``scope`` owns; raises
    :class:`DeliveryRetryable` while any may still succeed on a later attempt. Deliveries of a
    task that ended without a file are SKIPPED."""
    task = deps.tasks.get(task_id)
    if task is None or not task.is_terminal or task.delivery is None:
        return task
    pending = [i for i, d in enumerate(task.deliveries) if scope.owns(d)]
    if not pending:
        _settle(task, deps)  # a repeat after a crash: recorded and mailed once all the same
        return task
    if not task.has_file or task.result is None:
        skipped = _record(task, tuple(deliveries.skipped(d) if scope.owns(d) else d for d in task.deliveries), deps)
        _settle(skipped, deps)
        return skipped
    states = list(task.deliveries)
    with tempfile.TemporaryDirectory(dir=deps.scratch) as scratch:
        local = Path(scratch) / "file"
        sha256 = _copy_result(task.result.key, local, deps)
        if sha256 != task.result.sha256:
            # Never send a file other than the one the task's sha256 names: our copy is retried.
            raise DeliveryRetryable(f"the copy of {task.result.key} does not match its sha256")
        for index in pending:
            states[index] = _attempt(task, states[index], local, Path(scratch), deps)
    after = _record(task, tuple(states), deps)
    for ended in deliveries.newly_ended(tuple(task.deliveries[i] for i in pending), tuple(states[i] for i in pending)):
        _ended(after, ended, deps)
    still = [states[i].destination_id for i in pending if not states[i].ended]
    if still:
        raise DeliveryRetryable(f"delivery to {', '.join(still)} to be tried again")
    _settle(after, deps)
    return after


def give_up_files(task_id: str, caught: str | None, deps: DeliveryDependencies, scope: Round = WORKFLOW_ROUND) -> None:
    """Retries are spent: every delivery of ``scope`` still pending is FAILED with its last error."""
    task = deps.tasks.get(task_id)
    if task is None:
        return
    if not any(scope.owns(d) for d in task.deliveries):
        _settle(task, deps)
        return
    logger.warning("deliveries given up", extra={"task_id": task_id, "detail": caught})
    states = tuple(deliveries.given_up(d) if scope.owns(d) else d for d in task.deliveries)
    after = _record(task, states, deps)
    for ended in deliveries.newly_ended(task.deliveries, states):
        _ended(after, ended, deps)
    _settle(after, deps)


def _settle(task: Task, deps: DeliveryDependencies) -> None:
    """A round's deliveries have ended: each delivery that ended is in the audit trail (again:
    recorded once, so one an attempt could not record is recorded now), then, once every
    delivery has ended, a scheduled run's mail says where the file went (once per run). A trail
    that cannot take them yet is retried by the workflow like a delivery."""
    try:
        if deps.audit is not None:
            for delivery in task.deliveries:
                _audit(task, delivery, deps.audit, deps)
        if deps.run_end is not None:
            mail_after_deliveries(task, deps.run_end)
    except RetryableError as busy:
        raise DeliveryRetryable(f"the deliveries' records or mail were not written: {busy.message}") from busy


def _audit(task: Task, delivery: Delivery, audit: AuditDependencies, deps: DeliveryDependencies) -> None:
    """Record a delivery that ended (DELIVERED or FAILED; a SKIPPED one sent nothing)."""
    if delivery.status not in (DeliveryStatus.DELIVERED, DeliveryStatus.FAILED) or task.delivery is None:
        return
    from exports.audit.service import record_file_delivery

    destination = deps.destinations.get(task.delivery.tenant, delivery.destination_id)
    record_file_delivery(task, delivery, destination.kind if destination else None, audit)


def _attempt(task: Task, delivery: Delivery, local: Path, scratch: Path, deps: DeliveryDependencies) -> Delivery:
    """One attempt at ``delivery``: the state it leaves."""
    assert task.delivery is not None and task.result is not None
    destination = deps.destinations.get(task.delivery.tenant, delivery.destination_id)
    if destination is None:
        error = DeliveryError(code="DESTINATION_NOT_FOUND", message="the destination was deleted before delivery")
        return deliveries.attempt_failed(delivery, error, final=True, remote_path=None)
    if destination.state is not DestinationState.ACTIVE:
        error = DeliveryError(code="HOST_KEY_UNCONFIRMED", message="confirm the destination's fetched host key first")
        return deliveries.attempt_failed(delivery, error, final=True, remote_path=None)
    adapter = deps.kinds[destination.kind]
    try:
        secrets = _secrets(destination, deps)
        prepared = encryption.prepare(destination, secrets, local, task.result.file_name, scratch)
        relative = deliveries.render(
            task.delivery.path_template, task.export_type, _day(task), task.task_id, prepared.file_name
        )
    except SecretMissing:
        error = DeliveryError(code=SecretMissing.code, message="the destination's secrets are gone: set them again")
        return deliveries.attempt_failed(delivery, error, final=True, remote_path=None)
    except EncryptionRefused as refused:
        error = DeliveryError(code="ENCRYPTION_REFUSED", message=str(refused))
        return deliveries.attempt_failed(delivery, error, final=True, remote_path=None)
    except TemplateError as refused:
        error = DeliveryError(code="PATH_TEMPLATE_REFUSED", message=str(refused))
        return deliveries.attempt_failed(delivery, error, final=True, remote_path=None)
    remote = destination.target.remote_path(relative)
    try:
        # The sha256 beside the file, on the task and in the audit trail is the delivered file's:
        # the encrypted one when encrypted (an OpenPGP file differs at each attempt).
        sha256 = task.result.sha256 if prepared.path == local else _sha256(prepared.path)
        size = prepared.path.stat().st_size
        adapter.put(destination.destination_id, destination.target, secrets, prepared.path, remote, sha256)
    except DestinationProblem as problem:
        error = DeliveryError(code=problem.code, message=problem.message, step=problem.step.value)
        logger.info(
            "delivery attempt failed",
            extra={"task_id": task.task_id, "destination_id": destination.destination_id, "step": problem.step.value},
        )
        return deliveries.attempt_failed(delivery, error, final=False, remote_path=remote)
    finally:
        if prepared.path != local:
            prepared.path.unlink(missing_ok=True)
    return deliveries.delivered(delivery, remote, deps.clock(), sha256, size)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _secrets(destination: Destination, deps: DeliveryDependencies) -> DestinationSecrets | None:
    """The destination's login (SFTP) from the vault; an S3 destination keeps none."""
    return deps.vault.get(destination.secret_ref) if destination.secret_ref else None


def _day(task: Task) -> str:
    """The day a path's ``{date}`` names: a scheduled run's firing day, else the day it ended (UTC)."""
    moment = task.scheduled_for or task.finished_at or task.created_at
    return moment.date().isoformat()


def _copy_result(key: str, local: Path, deps: DeliveryDependencies) -> str:
    """Copy our file to ``local``; its sha256."""
    digest = hashlib.sha256()
    with local.open("wb") as file:
        for chunk in deps.results.read_result(key):
            digest.update(chunk)
            file.write(chunk)
    return digest.hexdigest()


def _record(task: Task, states: tuple[Delivery, ...], deps: DeliveryDependencies) -> Task:
    """Store the deliveries this call changed on the task, then the task as stored (another
    round may have recorded other destinations meanwhile). A conflict means its record is gone
    (a terminal task's status and attempt never change) or a repeat of this step wrote first."""
    after = task.model_copy(update={"deliveries": states})
    try:
        deps.tasks.record_deliveries(task, after)
    except ConditionFailed:
        logger.warning("deliveries not recorded: the task changed", extra={"task_id": task.task_id})
        return after
    stored = deps.tasks.get(task.task_id)
    return stored if stored is not None and len(stored.deliveries) == len(states) else after


def _ended(task: Task, delivery: Delivery, deps: DeliveryDependencies) -> None:
    """Count a delivery that ended; tell the operators' bus and the task's subscribers."""
    if delivery.status is DeliveryStatus.DELIVERED:
        deps.metrics.add(Metric.FILE_DELIVERED)
        logger.info("file delivered", extra={"task_id": task.task_id, "destination_id": delivery.destination_id})
    elif delivery.status is DeliveryStatus.FAILED:
        code = delivery.error.code if delivery.error else "DELIVERY_FAILED"
        # Once for the alarm (the service's series), once by code (the customer's side or ours).
        deps.metrics.add(Metric.FILE_DELIVERY_FAILED)
        deps.metrics.add(Metric.FILE_DELIVERY_FAILED, dimensions={"code": code})
        if code in Destinations.OUR_SIDE_ERROR_CODES:
            # Ours to fix, not the customer's: the paging alarm's series.
            deps.metrics.add(Metric.FILE_DELIVERY_FAULT)
        logger.warning(
            "file delivery failed",
            extra={"task_id": task.task_id, "destination_id": delivery.destination_id, "code": code},
        )
    else:
        return
    publish(deps.events, delivery_event(task, delivery, deps.clock()))
    if deps.notices is not None:
        deps.notices.send(task, delivery)
    if deps.audit is not None:
        try:
            _audit(task, delivery, deps.audit, deps)
        except ExportsError:
            # Recorded when the last delivery ends (_settle), which the workflow retries.
            logger.warning("delivery not recorded yet", exc_info=True, extra={"task_id": task.task_id})


def delivery_event(task: Task, delivery: Delivery, now: datetime) -> LifecycleEvent:
    """The lifecycle event of a delivery that ended: where the file went, or why not."""
    delivered = delivery.status is DeliveryStatus.DELIVERED
    detail = {
        "version": Events.DETAIL_VERSION,
        "task_id": task.task_id,
        "user_id": task.user_id,
        "export_type": task.export_type,
        "format": task.format.value,
        "status": task.status.value,
        "source": task.source.value,
        "schedule_id": task.schedule_id,
        "created_at": task.created_at.isoformat(),
        "occurred_at": now.isoformat(),
        "destination_id": delivery.destination_id,
        "delivery_status": delivery.status.value,
        "attempts": delivery.attempts,
        "remote_path": delivery.remote_path,
        # The delivered file's (encrypted or not), as the destination holds it; None when it failed.
        "sha256": delivery.sha256 if delivered else None,
        "size_bytes": delivery.size_bytes if delivered else None,
        "error_code": delivery.error.code if delivery.error and not delivered else None,
    }
    return LifecycleEvent(Events.FILE_DELIVERED if delivered else Events.FILE_DELIVERY_FAILED, detail)
