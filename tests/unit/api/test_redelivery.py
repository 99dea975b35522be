"""A FAILED delivery retried on request (exports.api.redelivery) on fakes: who may, what is
refused and why, the one conditional write, and the round's start (or its undoing)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from examples.demo_plugins.orders import OrdersExport
from exports.accepting.submission import submit_export
from exports.api.redelivery import (
    ROUND_SEC,
    DeliveryNotFound,
    DeliveryNotRetryable,
    FileExpired,
    RedeliveryDependencies,
    retry_delivery,
)
from exports.core import deliveries
from exports.core.caller import AccessRule, Caller
from exports.core.config.metrics import Metric
from exports.core.deliveries import DeliveryError, DeliveryPlan, DeliveryStatus
from exports.core.errors import ExportsError, ServiceUnavailable, TaskNotFound
from exports.core.spec import ExportSpec
from exports.core.task import Task, claim, complete, fail
from exports.finishing.destinations import service
from exports.finishing.destinations.model import DestinationAccess, DestinationState
from exports.finishing.destinations.ports import DestinationNotFound
from exports.finishing.destinations.service import HostKeyNotConfirmed
from tests.builders_destinations import destination
from tests.unit.builders import LEASE, make_result
from tests.unit.destination_fakes import FakeDestinationStore, FakeSecretVault
from tests.unit.export_fakes import FakeMetrics
from tests.unit.fakes import FakeOrdersReader
from tests.unit.service_fakes import ServiceWorld, service_world

MARCH = {"date_from": "2025-03-30", "date_to": "2025-03-31"}
ALICE = Caller("alice", {"tenant": "acme"})
DOWN = DeliveryError(code="DESTINATION_UNREACHABLE", message="check that the server is up", step="TCP")


class FakeRedelivery:
    """:class:`exports.core.ports.Redelivery` in memory: the rounds started, or a refusal."""

    def __init__(self, refuse: bool = False) -> None:
        self.started: list[tuple[str, str, int]] = []
        self.refuse = refuse

    def start(self, task_id: str, destination_id: str, requested_retries: int) -> None:
        if self.refuse:
            raise ServiceUnavailable("throttled")
        self.started.append((task_id, destination_id, requested_retries))


class World:
    """A ServiceWorld with the tenant's destination and the redelivery workflow."""

    def __init__(self, workflow: FakeRedelivery | None = None, use: AccessRule | None = None) -> None:
        self.service: ServiceWorld = service_world(OrdersExport(FakeOrdersReader([])))
        self.store = FakeDestinationStore()
        self.destination = destination(1)
        self.store.create(self.destination, 10)
        self.workflow = workflow if workflow is not None else FakeRedelivery()
        destinations = service.DestinationDependencies(
            store=self.store,
            vault=FakeSecretVault(),
            access=DestinationAccess(
                manage=AccessRule(groups=("admin",), groups_claim="groups"),
                use=use or AccessRule(),
                groups_claim="groups",
            ),
            tenant_of=lambda caller: caller.text("tenant"),
            tenant_claim="tenant",
            # Retrying a delivery makes, probes and puts nothing through a kind.
            kinds={},
            clock=self.service.clock,
            max_per_tenant=10,
            metrics=FakeMetrics(),
        )
        self.deps = RedeliveryDependencies(self.service.api, destinations, self.workflow)

    def completed(self, status: DeliveryStatus = DeliveryStatus.FAILED, **task_fields: Any) -> Task:
        """A COMPLETED task of alice's in acme whose delivery ended with ``status``."""
        w = self.service
        plan = DeliveryPlan(tenant="acme", destination_ids=(self.destination.destination_id,))
        request = ExportSpec(export_type="orders", filters=MARCH, delivery=plan)
        task = submit_export(request, ALICE, w.api).task
        claimed = claim(task, w.clock(), LEASE)
        w.tasks.update(task, claimed)
        ended = complete(claimed, make_result(), w.clock(), timedelta(hours=24))
        w.tasks.update(claimed, ended)
        return self.ended_delivery(ended, status, **task_fields)

    def ended_delivery(self, task: Task, status: DeliveryStatus, **task_fields: Any) -> Task:
        [delivery] = task.deliveries
        if status is DeliveryStatus.FAILED:
            delivery = deliveries.attempt_failed(delivery, DOWN, True, "/upload/f.csv")
        elif status is DeliveryStatus.DELIVERED:
            delivery = deliveries.delivered(delivery, "/upload/f.csv", self.service.clock(), "a" * 64, 1)
        elif status is DeliveryStatus.SKIPPED:
            delivery = deliveries.skipped(delivery)
        after = task.model_copy(update={"deliveries": (delivery,)})
        self.service.tasks.record_deliveries(task, after)
        if task_fields:
            stored = self.service.tasks.tasks[task.task_id]
            self.service.tasks.tasks[task.task_id] = stored.model_copy(update=task_fields)
        return self.service.tasks.tasks[task.task_id]


def test_a_failed_delivery_is_pending_again_in_a_round_of_its_own_which_starts() -> None:
    world = World()
    task = world.completed()
    destination_id = world.destination.destination_id

    shown = retry_delivery(task.task_id, destination_id, ALICE, world.deps)

    [delivery] = shown.deliveries
    assert (delivery.status, delivery.requested_retries, delivery.attempts) == (DeliveryStatus.PENDING, 1, 1)
    assert delivery.error == DOWN  # the last attempt's, until one replaces it
    assert world.service.tasks.get(task.task_id) == shown
    assert world.workflow.started == [(task.task_id, destination_id, 1)]
    assert world.service.counts(Metric.FILE_DELIVERY_RETRY_REQUESTED) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (DeliveryStatus.PENDING, "DELIVERY_IN_PROGRESS"),
        (DeliveryStatus.DELIVERED, "DELIVERY_ALREADY_DELIVERED"),
        (DeliveryStatus.SKIPPED, "DELIVERY_NOT_RETRYABLE"),
    ],
)
def test_a_delivery_that_did_not_fail_is_not_retried_and_the_answer_says_why(status: DeliveryStatus, code: str) -> None:
    world = World()
    task = world.completed(status)

    with pytest.raises(DeliveryNotRetryable) as refused:
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)

    assert refused.value.code == code and world.destination.destination_id in refused.value.message
    assert world.service.tasks.get(task.task_id) == task and world.workflow.started == []


def test_of_two_retries_the_second_finds_the_first_in_progress() -> None:
    world = World()
    task = world.completed()
    retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)

    with pytest.raises(DeliveryNotRetryable) as refused:
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)

    assert refused.value.code == "DELIVERY_IN_PROGRESS" and len(world.workflow.started) == 1


def test_a_retry_after_a_failed_round_is_the_next_round() -> None:
    world = World()
    task = world.completed()
    retried = retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)
    world.ended_delivery(retried, DeliveryStatus.FAILED)

    again = retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)

    assert again.deliveries[0].requested_retries == 2
    assert [started[2] for started in world.workflow.started] == [1, 2]


@pytest.mark.parametrize(
    "caller",
    [Caller("alice", {"tenant": "initech"}), Caller("alice"), Caller("mallory", {"tenant": "acme"})],
    ids=["another tenant", "no tenant", "another user"],
)
def test_another_tenants_or_users_task_is_not_found(caller: Caller) -> None:
    world = World()
    task = world.completed()

    with pytest.raises(TaskNotFound):
        retry_delivery(task.task_id, world.destination.destination_id, caller, world.deps)

    assert world.service.tasks.get(task.task_id) == task


def test_a_destination_the_task_does_not_name_is_not_found() -> None:
    world = World()
    task = world.completed()
    with pytest.raises(DeliveryNotFound):
        retry_delivery(task.task_id, "dst_01JABCDEFGHJKMNPQRSTVWXYZ9", ALICE, world.deps)


def test_a_destination_deleted_or_no_longer_the_callers_to_use_is_not_found() -> None:
    world = World(use=AccessRule(groups=("finance",), groups_claim="groups"))
    task = world.completed()
    with pytest.raises(DestinationNotFound):
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)
    world.store.delete(world.destination)
    with pytest.raises(DestinationNotFound):
        retry_delivery(task.task_id, world.destination.destination_id, Caller("alice", {"tenant": "acme"}), world.deps)


def test_a_destination_waiting_for_its_host_key_is_a_conflict() -> None:
    world = World()
    task = world.completed()
    waiting = world.destination.model_copy(update={"state": DestinationState.HOST_KEY_UNCONFIRMED})
    world.store.replace(world.destination, waiting)
    with pytest.raises(HostKeyNotConfirmed):
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)


def test_a_file_that_expired_or_expires_before_a_round_could_end_is_gone() -> None:
    world = World()
    now = world.service.clock()
    soon = world.completed(expires_at=now + timedelta(seconds=ROUND_SEC - 1))
    with pytest.raises(FileExpired):
        retry_delivery(soon.task_id, world.destination.destination_id, ALICE, world.deps)
    past = world.completed(expires_at=now - timedelta(seconds=1))
    with pytest.raises(FileExpired) as gone:
        retry_delivery(past.task_id, world.destination.destination_id, ALICE, world.deps)
    assert gone.value.code == "FILE_EXPIRED"


def test_a_failed_export_has_no_file_to_deliver() -> None:
    world = World()
    w = world.service
    plan = DeliveryPlan(tenant="acme", destination_ids=(world.destination.destination_id,))
    task = submit_export(ExportSpec(export_type="orders", filters=MARCH, delivery=plan), ALICE, w.api).task
    failed = fail(task, "E", "failed", w.clock(), timedelta(hours=24))
    w.tasks.update(task, failed)
    world.ended_delivery(failed, DeliveryStatus.SKIPPED)
    with pytest.raises(DeliveryNotRetryable) as refused:
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)
    assert refused.value.code == "DELIVERY_NOT_RETRYABLE"


def test_a_round_the_workflow_does_not_take_leaves_the_delivery_failed_to_be_asked_again() -> None:
    world = World(FakeRedelivery(refuse=True))
    task = world.completed()

    with pytest.raises(ServiceUnavailable):
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)

    [delivery] = world.service.tasks.get(task.task_id).deliveries
    # FAILED, in the round that could not start: the next request starts a round of another name
    assert (delivery.status, delivery.requested_retries) == (DeliveryStatus.FAILED, 1)
    world.workflow.refuse = False
    again = retry_delivery(task.task_id, world.destination.destination_id, ALICE, world.deps)
    assert again.deliveries[0].requested_retries == 2


def test_without_the_workflow_nothing_changes() -> None:
    world = World()
    task = world.completed()
    deps = RedeliveryDependencies(world.deps.api, world.deps.destinations, None)
    with pytest.raises(ExportsError):
        retry_delivery(task.task_id, world.destination.destination_id, ALICE, deps)
    assert world.service.tasks.get(task.task_id) == task
