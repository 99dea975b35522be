"""A FAILED file delivery tried again on its owner's request
(``POST /v1/exports/{task_id}/deliveries/{destination_id}/retry``, docs/destinations.md).

Who may: whoever may retry the export (its owner, who may still use its export type and whose
token still binds it), in the tenant the file was delivered for, if they may still use the
destination. The delivery goes back to PENDING through the deliveries' one transition rule
(:func:`exports.core.deliveries.retried`) in a conditional write, so of two requests at once one
starts a round of attempts and the other is told it is in progress; the round runs in the
redelivery workflow with the lifecycle's retries and ends the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from exports.accepting.dependencies import ApiDependencies
from exports.api.queries import export_type
from exports.core import deliveries
from exports.core.caller import Caller
from exports.core.config.destinations import Destinations
from exports.core.config.metrics import Metric
from exports.core.config.retry import FILE_DELIVERY_RETRY
from exports.core.deliveries import Delivery, RetryRefusal
from exports.core.errors import ConditionFailed, ExportsError, ServiceUnavailable, TaskNotFound
from exports.core.ids import is_task_id
from exports.core.ports import Redelivery
from exports.core.task import Task
from exports.finishing.destinations.model import DestinationState
from exports.finishing.destinations.service import DestinationDependencies, HostKeyNotConfirmed, visible_destination

logger = logging.getLogger(__name__)

_WRITE_ATTEMPTS: Final = 3
# A round of attempts takes at most this long (the workflow's retries and an attempt each): a
# file that expires sooner is not sent again (its attempts would read a file that is gone).
ROUND_SEC: Final = int(
    sum(FILE_DELIVERY_RETRY.ceiling_sec(retry) for retry in range(FILE_DELIVERY_RETRY.retries))
    + FILE_DELIVERY_RETRY.attempts * Destinations.DELIVERY_TIMEOUT_SEC
)


class DeliveryNotFound(ExportsError):
    """The task delivers to no such destination (404): the same for one it never named."""

    code = "DELIVERY_NOT_FOUND"

    def __init__(self, task_id: str, destination_id: str) -> None:
        super().__init__(f"export task {task_id} has no delivery to {destination_id}")


class DeliveryNotRetryable(ExportsError):
    """The delivery is not FAILED (409): its code says why (:class:`RetryRefusal`)."""

    def __init__(self, refusal: RetryRefusal, delivery: Delivery) -> None:
        super().__init__(_REFUSALS[refusal].format(destination_id=delivery.destination_id))
        self.code = refusal.value


_REFUSALS: Final = {
    RetryRefusal.IN_PROGRESS: "the delivery to {destination_id} is still being tried (PENDING): wait for it to end",
    RetryRefusal.ALREADY_DELIVERED: "the file was delivered to {destination_id} already: nothing to retry",
    RetryRefusal.NO_FILE: "the export ended without a file, so there is nothing to deliver to {destination_id};"
    " retry the export instead",
}


class FileExpired(ExportsError):
    """The task's file is gone, or will be before a round of attempts could end (410): only a
    new export makes a file to deliver."""

    code = "FILE_EXPIRED"


@dataclass(frozen=True)
class RedeliveryDependencies:
    """What a retry on request needs besides the API's own: the caller's tenant and the
    destinations' use rule, and the workflow that makes the attempts (None: not deployed)."""

    api: ApiDependencies
    destinations: DestinationDependencies
    workflow: Redelivery | None


def retry_delivery(task_id: str, destination_id: str, caller: Caller, deps: RedeliveryDependencies) -> Task:
    """Put the caller's FAILED delivery back to PENDING in a round of its own and start that
    round's attempts; the task as it is then."""
    for _ in range(_WRITE_ATTEMPTS):
        task = _retryable_task(task_id, caller, deps)
        index = _delivery_index(task, destination_id)
        delivery = task.deliveries[index]
        refusal = deliveries.retry_refusal(delivery)
        if refusal is not None:
            raise DeliveryNotRetryable(refusal, delivery)
        _check_destination(task, destination_id, caller, deps)
        if deps.workflow is None:
            raise ServiceUnavailable("retrying deliveries is not set up in this deployment")
        retried = deliveries.retried(delivery)
        after = task.model_copy(update={"deliveries": _replaced(task, index, retried)})
        try:
            deps.api.tasks.record_deliveries(task, after)
        except ConditionFailed:
            continue  # another request, or an ended round, wrote first: look again
        _start(after, retried, deps)
        deps.api.metrics.add(Metric.FILE_DELIVERY_RETRY_REQUESTED)
        logger.info(
            "delivery retry requested",
            extra={"task_id": task_id, "destination_id": destination_id, "round": retried.requested_retries},
        )
        return after
    raise ServiceUnavailable(f"the deliveries of export task {task_id} kept changing; try again")


def _retryable_task(task_id: str, caller: Caller, deps: RedeliveryDependencies) -> Task:
    """The caller's task in their tenant, with its file kept long enough (410 otherwise); the
    caller may still use its export type (as a retry of the export requires)."""
    api = deps.api
    task = api.tasks.get(task_id) if is_task_id(task_id) else None
    tenant = deps.destinations.tenant_of(caller)
    if task is None or task.user_id != caller.user_id or task.delivery is None or task.delivery.tenant != tenant:
        raise TaskNotFound(task_id)
    now = api.clock()
    if task.expires_at <= now:
        raise FileExpired(f"export task {task_id}'s file expired at {task.expires_at.isoformat()}: export it again")
    if task.has_file and task.expires_at - now < timedelta(seconds=ROUND_SEC):
        raise FileExpired(
            f"export task {task_id}'s file expires at {task.expires_at.isoformat()}, before a delivery could be"
            " tried again: export it again"
        )
    export_type(task.export_type, caller, api).bind_caller(caller)
    return task


def _delivery_index(task: Task, destination_id: str) -> int:
    for index, delivery in enumerate(task.deliveries):
        if delivery.destination_id == destination_id:
            return index
    raise DeliveryNotFound(task.task_id, destination_id)


def _check_destination(task: Task, destination_id: str, caller: Caller, deps: RedeliveryDependencies) -> None:
    """The destination still exists in the tenant, the caller may use it (404 otherwise, as on
    every destination route) and it takes files (409 while its host key waits)."""
    destination = visible_destination(destination_id, caller, deps.destinations)
    if destination.state is not DestinationState.ACTIVE:
        raise HostKeyNotConfirmed(
            f"destination {destination_id} waits for its host key to be confirmed"
            f" (POST /v1/destinations/{destination_id}/confirm); then retry the delivery"
        )


def _replaced(task: Task, index: int, delivery: Delivery) -> tuple[Delivery, ...]:
    return (*task.deliveries[:index], delivery, *task.deliveries[index + 1 :])


def _start(after: Task, retried: Delivery, deps: RedeliveryDependencies) -> None:
    """Start the round; if the workflow does not take it, the delivery is FAILED again (in that
    round, so the next request starts a round of another name) and the caller is told to try
    again shortly."""
    assert deps.workflow is not None
    try:
        deps.workflow.start(after.task_id, retried.destination_id, retried.requested_retries)
    except ExportsError as refused:
        undone = tuple(deliveries.given_up(d) if d == retried else d for d in after.deliveries)
        try:
            deps.api.tasks.record_deliveries(after, after.model_copy(update={"deliveries": undone}))
        except ExportsError:
            logger.error(
                "a retry the workflow refused could not be undone",
                extra={"task_id": after.task_id, "destination_id": retried.destination_id},
            )
        raise ServiceUnavailable("the delivery could not be started; try again shortly") from refused
