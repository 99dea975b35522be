"""The schedule services on fakes: what a schedule keeps of its owner's token, the access rule
checked at every firing against the stored claims, pauses with a reason, transient faults given
back to Scheduler's retries, a run's end mailed once."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from exports.core.caller import Caller, CallerRefused
from exports.core.config.events import Events
from exports.core.config.metrics import Metric
from exports.core.csv_dialect import CsvDialect, CsvEncoding
from exports.core.deliveries import Delivery, DeliveryPlan, DeliveryStatus
from exports.core.errors import InvalidRequest, RetryableError, ServiceUnavailable
from exports.core.export_type import ClaimsRead
from exports.core.spec import ExportSpec
from exports.core.status import TaskStatus
from exports.core.task import Task, claim, complete
from exports.export_types.registry import ExportTypeRegistry
from exports.finishing.schedule_run_end import RunEndDependencies, mail_after_deliveries, on_run_end
from exports.schedules import firing, service
from exports.schedules.api_models import SchedulePatch
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.model import Every, LastRun, PauseCode, ScheduleState, caller_of
from exports.schedules.ports import ScheduleConflict, ScheduleNotFound
from tests.builders_destinations import destination, destination_id
from tests.unit.builders import make_result
from tests.unit.destination_fakes import FakeDestinationStore
from tests.unit.export_fakes import FakeEvents, NumbersExport
from tests.unit.schedule_fakes import FakeMailer, FakeScheduleStore, FakeTimer
from tests.unit.service_fakes import BrokenQueue, FakeResolver, ServiceWorld, service_world


class FinanceNumbers(NumbersExport):
    """Numbers for the finance group only (its rule reads the ``groups`` claim)."""

    name = "finance_numbers"
    group = "finance"

    def allows(self, caller: Caller) -> bool:
        return self.group in (caller.values("groups") or [])

    def claims_read(self) -> ClaimsRead:
        return ClaimsRead(frozenset({"groups"}), scopes=False)


FINANCE = Caller("alice", {"groups": "[finance]", "email": "alice@acme.example", "exp": 1, "jti": "t"})
SPEC = service.ScheduleSpec(export=ExportSpec(export_type="finance_numbers"), every=Every(hours=1))


def world(
    queue: BrokenQueue | None = None, mail_allowed_domains: str = "acme.example,elsewhere.example"
) -> tuple[ServiceWorld, ScheduleDependencies, FakeScheduleStore, FakeTimer]:
    services = service_world(
        FinanceNumbers(), queue=queue, mail_sender="reports@acme.example", mail_allowed_domains=mail_allowed_domains
    )
    store, timer = FakeScheduleStore(), FakeTimer()
    return services, ScheduleDependencies(api=services.api, schedules=store, timer=timer), store, timer


def test_a_schedule_keeps_only_the_claims_its_type_reads_never_the_token():
    _, deps, store, timer = world()

    created = service.create_schedule(SPEC, FINANCE, deps)

    stored = store.schedules[created.schedule_id].caller
    assert stored.user_id == "alice" and stored.claims == {"groups": "[finance]"} and stored.scopes is None
    assert timer.schedules[created.schedule_id] == created


def test_a_caller_the_rule_refuses_cannot_create_one():
    _, deps, store, _ = world()

    with pytest.raises(Exception, match="unknown export type"):
        service.create_schedule(SPEC, Caller("mallory", {"groups": "[sales]"}), deps)
    assert store.schedules == {}


def test_a_scheduler_that_refuses_leaves_nothing_stored():
    _, deps, store, timer = world()
    timer.fail = True

    with pytest.raises(ServiceUnavailable):
        service.create_schedule(SPEC, FINANCE, deps)
    assert store.schedules == {} and store.counts == {"alice": 0}


def test_a_firing_creates_a_run_as_the_stored_caller():
    services, deps, _, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)

    fired = firing.fire(schedule.schedule_id, at, deps)

    again = firing.fire(schedule.schedule_id, at, deps)

    task = services.tasks.tasks[fired.task_id or ""]
    assert fired.outcome is firing.FiringOutcome.CREATED
    assert (task.schedule_id, task.scheduled_for, task.source.value) == (schedule.schedule_id, at, "schedule")
    assert again.outcome is firing.FiringOutcome.DUPLICATE and again.task_id == fired.task_id
    assert (services.counts(Metric.SCHEDULE_FIRED), services.counts(Metric.SCHEDULE_DUPLICATE_FIRING)) == (1, 1)


def test_a_revoked_rule_pauses_the_schedule_at_its_firing_and_disables_scheduler():
    services, deps, store, timer = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    # The deployment changed the rule: the stored claims no longer pass it.
    export_type = services.api.registry.get("finance_numbers")
    assert isinstance(export_type, FinanceNumbers)
    export_type.group = "auditors"

    fired = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps)

    assert fired.outcome is firing.FiringOutcome.PAUSED and services.tasks.tasks == {}
    paused = store.schedules[schedule.schedule_id]
    assert paused.paused_reason is not None and paused.paused_reason.code is PauseCode.ACCESS_REVOKED
    assert not timer.schedules[schedule.schedule_id].is_active
    assert services.counts(Metric.SCHEDULE_PAUSED) == 1


def test_a_type_that_is_gone_pauses_the_schedule():
    services, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    gone = dataclasses.replace(deps, api=dataclasses.replace(services.api, registry=ExportTypeRegistry([])))

    events = FakeEvents()
    gone = dataclasses.replace(gone, api=dataclasses.replace(gone.api, events=events))

    fired = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), gone)

    assert fired.outcome is firing.FiringOutcome.PAUSED
    reason = store.schedules[schedule.schedule_id].paused_reason
    assert reason is not None and reason.code is PauseCode.EXPORT_TYPE_GONE
    # Operators hear of it on the bus (docs/events.md).
    (paused,) = events.published
    assert paused.detail_type == Events.SCHEDULE_PAUSED
    assert (paused.detail["schedule_id"], paused.detail["user_id"], paused.detail["reason"]["code"]) == (
        schedule.schedule_id,
        "alice",
        "EXPORT_TYPE_GONE",
    )


def test_a_transient_fault_gives_the_firing_back_and_the_retry_creates_exactly_one_task():
    queue = BrokenQueue()
    services, deps, _, _ = world(queue)
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)

    with pytest.raises(ServiceUnavailable):
        firing.fire(schedule.schedule_id, at, deps)
    queue.broken = False
    retried = firing.fire(schedule.schedule_id, at, deps)
    again = firing.fire(schedule.schedule_id, at, deps)

    assert retried.outcome is firing.FiringOutcome.CREATED
    assert again.outcome is firing.FiringOutcome.DUPLICATE and again.task_id == retried.task_id
    live = [task for task in services.tasks.tasks.values() if task.status is TaskStatus.PENDING]
    assert [task.task_id for task in live] == [retried.task_id]


def test_a_patch_by_another_user_is_not_found_and_changes_nothing():
    _, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)

    with pytest.raises(ScheduleNotFound):
        service.update_schedule(
            schedule.schedule_id,
            service.ScheduleChanges({"name": "mine"}),
            Caller("bob", {"groups": "[finance]"}),
            deps,
        )
    assert store.schedules[schedule.schedule_id] == schedule


def run_end(services: ServiceWorld, store: FakeScheduleStore, mailer: FakeMailer, **changes: Any) -> RunEndDependencies:
    base = RunEndDependencies(
        schedules=store,
        mailer=mailer,
        sender="reports@acme.example",
        allowed_domains=frozenset(),
        results=services.files,
        clock=services.clock,
    )
    return dataclasses.replace(base, **changes)


def test_a_runs_end_is_mailed_once_to_the_allowed_recipients_with_rows_and_a_link():
    services, deps, store, _ = world()
    spec = dataclasses.replace(SPEC, recipients=("finance@acme.example", "old@elsewhere.example"))
    schedule = service.create_schedule(spec, FINANCE, deps)
    task_id = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps).task_id or ""
    task = services.tasks.tasks[task_id]
    done = complete(
        claim(task, services.clock(), timedelta(minutes=2)), make_result(rows=7), services.clock(), timedelta(hours=24)
    )
    mailer = FakeMailer()
    # The deployment narrowed its domains since the schedule was made.
    ends = run_end(services, store, mailer, allowed_domains=frozenset({"acme.example"}))

    assert on_run_end(done, ends) is None
    on_run_end(done, ends)  # observed again (a retried delivery): no second mail

    [(sender, to, subject, text)] = mailer.sent
    assert sender == "reports@acme.example" and to == ("finance@acme.example",)
    assert "7 rows" in subject and "7 rows" in text and "Not attached; download" in text
    stored = store.schedules[schedule.schedule_id]
    assert stored.last_run is not None and stored.last_run.task_id == task_id and stored.mailed_task_id == task_id


def mailed_run(services: ServiceWorld, deps: Any, body: bytes, **changes: Any) -> Task:
    """A run of a schedule mailing finance@, COMPLETED with ``body`` as its file in our bucket."""
    spec = dataclasses.replace(SPEC, recipients=("finance@acme.example",))
    schedule = service.create_schedule(spec, FINANCE, deps)
    task_id = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps).task_id or ""
    result = make_result(bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
    services.files.objects[result.key] = {"body": body, "metadata": {}, "parts": 1}
    task = services.tasks.tasks[task_id]
    done = complete(claim(task, services.clock(), timedelta(minutes=2)), result, services.clock(), timedelta(hours=24))
    return done.model_copy(update=changes)


def test_a_file_within_the_limit_is_attached_and_one_over_it_is_linked():
    services, deps, store, _ = world()
    body = b"id\n" + b"1\n" * 50
    done = mailed_run(services, deps, body)
    mailer = FakeMailer()
    domains = frozenset({"acme.example"})

    on_run_end(done, run_end(services, store, mailer, allowed_domains=domains, attachment_max_bytes=len(body)))

    [attachment] = mailer.attachments
    assert attachment is not None and attachment.data == body
    assert done.result is not None and attachment.file_name == done.result.file_name
    assert "Attached: " in mailer.sent[0][3] and "download" not in mailer.sent[0][3]

    services, deps, store, _ = world()
    done = mailed_run(services, deps, body)
    mailer = FakeMailer()
    on_run_end(done, run_end(services, store, mailer, allowed_domains=domains, attachment_max_bytes=len(body) - 1))
    assert mailer.attachments == [None] and "Not attached; download" in mailer.sent[0][3]


def test_a_file_whose_bytes_do_not_match_its_sha256_is_linked_not_attached():
    services, deps, store, _ = world()
    done = mailed_run(services, deps, b"id\n1\n")
    assert done.result is not None
    services.files.objects[done.result.key]["body"] = b"id\n2\n"
    mailer = FakeMailer()

    on_run_end(done, run_end(services, store, mailer, allowed_domains=frozenset({"acme.example"})))

    assert mailer.attachments == [None] and "Not attached; download" in mailer.sent[0][3]


def test_a_run_still_delivering_is_mailed_when_its_deliveries_end_saying_where_the_file_went():
    services, deps, store, _ = world()
    pending = Delivery(destination_id="dst_A")
    done = mailed_run(services, deps, b"id\n1\n", deliveries=(pending,))
    mailer = FakeMailer()
    ends = run_end(services, store, mailer, allowed_domains=frozenset({"acme.example"}))

    on_run_end(done, ends)
    mail_after_deliveries(done, ends)  # a delivery still pending: not yet
    assert mailer.sent == []

    delivered = pending.model_copy(
        update={"status": DeliveryStatus.DELIVERED, "attempts": 1, "remote_path": "/upload/f.csv"}
    )
    ended = done.model_copy(update={"deliveries": (delivered,)})
    mail_after_deliveries(ended, ends)
    mail_after_deliveries(ended, ends)  # repeated (a retried step): one mail

    [(_, _, _, text)] = mailer.sent
    assert "Delivered to dst_A: /upload/f.csv" in text.splitlines()


def test_the_mail_names_the_destinations_read_in_the_runs_tenant_and_a_deleted_one_by_its_id():
    services, deps, store, _ = world()
    destinations = FakeDestinationStore()
    destinations.create(destination(1, name="Finance lake"), 10)
    destinations.create(destination(2, tenant="initech", name="Not yours"), 10)
    ids = (destination_id(1), destination_id(2), destination_id(3))
    ended = tuple(
        Delivery(destination_id=i, status=DeliveryStatus.DELIVERED, attempts=1, remote_path=f"{i}/f.csv") for i in ids
    )
    plan = DeliveryPlan(tenant="acme", destination_ids=ids)
    done = mailed_run(services, deps, b"id\n1\n", delivery=plan, deliveries=ended)
    mailer = FakeMailer()

    on_run_end(
        done, run_end(services, store, mailer, allowed_domains=frozenset({"acme.example"}), destinations=destinations)
    )

    [(_, _, _, text)] = mailer.sent
    lines = text.splitlines()
    assert f'Delivered to "Finance lake" (s3): {ids[0]}/f.csv' in lines
    # Another tenant's destination of the same id is never read: named by id, as a deleted one.
    assert f"Delivered to {ids[1]}: {ids[1]}/f.csv" in lines and "Not yours" not in text
    assert f"Delivered to {ids[2]}: {ids[2]}/f.csv" in lines


class UnreadableDestinations(FakeDestinationStore):
    def get(self, tenant, destination_id):
        raise RetryableError("throttled")


def test_destinations_that_cannot_be_read_are_named_by_id_and_the_mail_still_goes():
    services, deps, store, _ = world()
    delivered = Delivery(
        destination_id=destination_id(1), status=DeliveryStatus.DELIVERED, attempts=1, remote_path="/f"
    )
    plan = DeliveryPlan(tenant="acme", destination_ids=(destination_id(1),))
    done = mailed_run(services, deps, b"id\n1\n", delivery=plan, deliveries=(delivered,))
    mailer = FakeMailer()
    ends = run_end(
        services, store, mailer, allowed_domains=frozenset({"acme.example"}), destinations=UnreadableDestinations()
    )

    on_run_end(done, ends)

    [(_, _, _, text)] = mailer.sent
    assert f"Delivered to {destination_id(1)}: /f" in text.splitlines()


def test_another_users_task_naming_the_schedule_changes_nothing():
    services, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    task_id = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps).task_id or ""
    foreign = services.tasks.tasks[task_id].model_copy(update={"user_id": "bob", "status": TaskStatus.FAILED})
    mailer = FakeMailer()

    assert on_run_end(foreign, run_end(services, store, mailer)) is None
    assert store.schedules[schedule.schedule_id] == schedule and mailer.sent == []


class TenantNumbers(NumbersExport):
    """Numbers of the caller's tenant: binds the ``custom:tenant_id`` claim."""

    name = "tenant_numbers"

    def bind_caller(self, caller: Caller) -> dict[str, Any]:
        tenant = caller.text("custom:tenant_id")
        if tenant is None:
            raise CallerRefused("needs custom:tenant_id", claim="custom:tenant_id")
        return {"tenant_id": tenant}

    def claims_read(self) -> ClaimsRead:
        return ClaimsRead(frozenset({"custom:tenant_id"}), scopes=False)


def test_a_run_binds_the_tenant_from_the_claims_stored_at_creation():
    services = service_world(TenantNumbers())
    deps = ScheduleDependencies(api=services.api, schedules=FakeScheduleStore(), timer=FakeTimer())
    caller = Caller("alice", {"custom:tenant_id": "acme", "email": "a@acme.example", "iat": 5})
    spec = dataclasses.replace(SPEC, export=ExportSpec(export_type="tenant_numbers"))

    schedule = service.create_schedule(spec, caller, deps)
    fired = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps)

    assert schedule.caller.claims == {"custom:tenant_id": "acme"}
    assert services.tasks.tasks[fired.task_id or ""].caller == {"tenant_id": "acme"}


def test_two_submits_of_one_firing_share_a_task_and_two_firings_make_two():
    # A claim taken over after its lease (its holder was slow, not dead) must not make a second
    # task: the run's dedup key holds its firing.
    services, deps, _, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)
    caller = caller_of(schedule)

    first = service.submit_run(schedule, caller, at, deps)
    again = service.submit_run(schedule, caller, at, deps)
    next_hour = service.submit_run(schedule, caller, at + timedelta(hours=1), deps)

    assert again.deduplicated and again.task.task_id == first.task.task_id
    assert not next_hour.deduplicated and next_hour.task.task_id != first.task.task_id
    assert len(services.tasks.tasks) == 2


def test_a_firing_in_the_dst_gap_keeps_its_one_time_schedule_from_create_to_delete():
    services, deps, _, timer = world()
    services.clock.now = datetime(2026, 3, 1, tzinfo=UTC)
    daily = dataclasses.replace(SPEC, every=None, cron="30 2 * * *", timezone="Europe/Berlin")
    moved, next_year = datetime(2026, 3, 29, 1, tzinfo=UTC), datetime(2027, 3, 28, 1, tzinfo=UTC)

    schedule = service.create_schedule(daily, FINANCE, deps)
    assert timer.moved == {schedule.schedule_id: moved}  # 03:00 CEST: Scheduler skips 02:30

    services.clock.now = moved + timedelta(seconds=2)
    fired = firing.fire(schedule.schedule_id, moved, deps)
    assert fired.outcome is firing.FiringOutcome.CREATED
    assert services.tasks.tasks[fired.task_id or ""].scheduled_for == moved
    assert timer.moved == {schedule.schedule_id: next_year}

    pause = service.ScheduleChanges({"state": ScheduleState.PAUSED})
    service.update_schedule(schedule.schedule_id, pause, FINANCE, deps)
    assert timer.moved == {}
    resume = service.ScheduleChanges({"state": ScheduleState.ACTIVE})
    service.update_schedule(schedule.schedule_id, resume, FINANCE, deps)
    assert timer.moved == {schedule.schedule_id: next_year}
    service.update_schedule(schedule.schedule_id, service.ScheduleChanges({"cron": "30 4 * * *"}), FINANCE, deps)
    assert timer.moved == {}  # 04:30 is never in a gap
    service.update_schedule(schedule.schedule_id, service.ScheduleChanges({"cron": "15 2 * * *"}), FINANCE, deps)
    assert timer.moved == {schedule.schedule_id: next_year}

    service.delete_schedule(schedule.schedule_id, "alice", deps)
    assert timer.moved == {} and timer.schedules == {}


def test_a_scheduler_fault_after_a_firing_keeps_the_firings_task():
    services, deps, _, timer = world()
    services.clock.now = datetime(2026, 3, 1, tzinfo=UTC)
    daily = dataclasses.replace(SPEC, every=None, cron="30 2 * * *", timezone="Europe/Berlin")
    schedule = service.create_schedule(daily, FINANCE, deps)
    at = datetime(2026, 3, 2, 1, 30, tzinfo=UTC)
    services.clock.now = at
    timer.fail = True

    fired = firing.fire(schedule.schedule_id, at, deps)

    assert fired.outcome is firing.FiringOutcome.CREATED and fired.task_id in services.tasks.tasks


# --- bursts of firings ---------------------------------------------------------------------------


def test_a_firing_refused_for_capacity_is_deferred_within_its_window_never_failed():
    services, deps, store, timer = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)
    services.clock.now = at + timedelta(minutes=3)
    services.capacity.reserve("lane#normal", 10**6, limit_sec=10**7)  # a lane a day behind

    deferred = firing.fire(schedule.schedule_id, at, deps)

    assert deferred.outcome is firing.FiringOutcome.DEFERRED and services.tasks.tasks == {}
    retry_at = timer.deferred[(schedule.schedule_id, at)]
    assert deferred.retry_at == retry_at and services.clock() < retry_at
    assert store.schedules[schedule.schedule_id].consecutive_failures == 0
    assert (services.counts(Metric.SCHEDULE_DEFERRED), services.counts(Metric.SCHEDULE_MISSED)) == (1, 0)


def test_a_deferred_firing_runs_once_there_is_room_and_the_run_keeps_its_time():
    services, deps, _, timer = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)
    services.clock.now = at + timedelta(seconds=30)
    services.capacity.reserve("lane#normal", 600.0, limit_sec=10**7)  # ten minutes queued

    first = firing.fire(schedule.schedule_id, at, deps)
    services.capacity.release("lane#normal", 600.0)  # the lane drained
    services.clock.now = timer.deferred[(schedule.schedule_id, at)]
    again = firing.fire(schedule.schedule_id, at, deps)

    assert first.outcome is firing.FiringOutcome.DEFERRED
    assert again.outcome is firing.FiringOutcome.CREATED
    task = services.tasks.tasks[again.task_id or ""]
    assert task.scheduled_for == at  # its window is resolved from the firing's own time
    assert (services.counts(Metric.SCHEDULE_DEFERRED), services.counts(Metric.SCHEDULE_FIRED)) == (1, 1)


def test_a_firing_refused_past_its_deferral_window_is_missed_not_failed():
    services, deps, store, timer = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)  # hourly: the next firing closes the window
    at = datetime(2026, 1, 5, 9, tzinfo=UTC)
    services.clock.now = at + timedelta(minutes=50)
    services.capacity.reserve("lane#normal", 6000.0, limit_sec=10**7)  # 50 min of work queued

    missed = firing.fire(schedule.schedule_id, at, deps)

    assert missed.outcome is firing.FiringOutcome.MISSED and timer.deferred == {}
    assert services.tasks.tasks == {} and store.schedules[schedule.schedule_id].consecutive_failures == 0
    assert services.counts(Metric.SCHEDULE_MISSED) == 1


# --- No open mail relay -----------------------------------------------------------------------


VERIFIED = Caller("alice", {**FINANCE.claims, "email": "Alice@Home.example", "email_verified": "true"})


@pytest.mark.parametrize(
    ("caller", "recipients", "refused"),
    [
        # No domain allowed: only the caller's own verified address (any case).
        (VERIFIED, ("alice@home.example",), None),
        (VERIFIED, ("alice@home.example", "mallory@outside.example"), "recipients[1]"),
        # An address in the token but not verified is not the caller's to give.
        (FINANCE, ("alice@acme.example",), "recipients[0]"),
        (Caller("alice", {**FINANCE.claims, "email_verified": False}), ("alice@acme.example",), "recipients[0]"),
    ],
)
def test_a_deployment_that_allows_no_domain_mails_the_owners_verified_address_only(caller, recipients, refused):
    _, deps, store, _ = world(mail_allowed_domains="")
    spec = dataclasses.replace(SPEC, recipients=recipients)

    if refused is None:
        created = service.create_schedule(spec, caller, deps)
        assert created.caller.verified_email == "alice@home.example"
        return
    with pytest.raises(InvalidRequest) as error:
        service.create_schedule(spec, caller, deps)
    assert (error.value.field, error.value.code) == (refused, "RECIPIENT_NOT_ALLOWED")
    assert store.schedules == {}


@pytest.mark.parametrize(
    "address",
    [
        "a@b",
        "a@b.example\r\nBcc: x@evil.example",
        "Name <a@b.example>",
        "a@b.example, c@d.example",
        '"quoted"@b.example',
        "a..b@b.example",
        "a@-b.example",
        "a b@b.example",
        "a@b.example\n",
    ],
)
def test_what_is_not_a_plain_address_is_422_on_its_index(address):
    _, deps, _, _ = world()

    with pytest.raises(InvalidRequest) as error:
        service.create_schedule(dataclasses.replace(SPEC, recipients=("ok@acme.example", address)), FINANCE, deps)

    assert error.value.field == "recipients[1]"


def test_a_runs_mail_keeps_the_owners_address_and_drops_what_the_deployment_no_longer_allows():
    services, deps, store, _ = world(mail_allowed_domains="acme.example")
    spec = dataclasses.replace(SPEC, recipients=("alice@home.example", "finance@acme.example"))
    schedule = service.create_schedule(spec, VERIFIED, deps)
    task_id = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps).task_id or ""
    task = services.tasks.tasks[task_id]
    done = complete(
        claim(task, services.clock(), timedelta(minutes=2)), make_result(rows=3), services.clock(), timedelta(hours=24)
    )
    mailer = FakeMailer()

    # The deployment stopped mailing acme.example since.
    on_run_end(done, run_end(services, store, mailer, allowed_domains=frozenset()))

    [(_, to, _, _)] = mailer.sent
    assert to == ("alice@home.example",)


def test_a_name_with_a_line_break_never_reaches_the_subject():
    services, deps, store, _ = world()
    schedule = service.create_schedule(dataclasses.replace(SPEC, recipients=("finance@acme.example",)), FINANCE, deps)
    # Stored before names were checked (the API refuses them now).
    store.schedules[schedule.schedule_id] = schedule.model_copy(update={"name": "Weekly\r\nBcc: x@evil.example\u2028"})
    task_id = firing.fire(schedule.schedule_id, datetime(2026, 1, 5, 9, tzinfo=UTC), deps).task_id or ""
    task = services.tasks.tasks[task_id]
    done = complete(
        claim(task, services.clock(), timedelta(minutes=2)), make_result(rows=3), services.clock(), timedelta(hours=24)
    )
    mailer = FakeMailer()

    on_run_end(done, run_end(services, store, mailer, allowed_domains=frozenset({"acme.example"})))

    [(_, _, subject, text)] = mailer.sent
    assert not any(char in subject for char in "\r\n\u2028")
    assert subject.startswith("Weekly  Bcc: x@evil.example")
    assert "\r" not in text and "\u2028" not in text


def test_an_every_schedules_first_firing_at_its_creation_is_its_first_next_run():
    # Scheduler's rate fires at the schedule's creation (its anchor), then every interval.
    _, deps, _, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    now = deps.api.clock()

    runs = service.next_runs(schedule, now, 3)

    assert schedule.anchor_at == now
    assert runs == [now, now + timedelta(hours=1), now + timedelta(hours=2)]
    assert service.next_runs(schedule, now + timedelta(minutes=2), 1) == [now + timedelta(hours=1)]


def test_the_first_firing_shows_while_it_is_due_and_not_after_it_ran_or_its_grace():
    _, deps, _, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    anchor = schedule.anchor_at
    ran = schedule.model_copy(update={"last_run": LastRun(task_id="exp_1", scheduled_for=anchor, status="RUNNING")})

    assert service.next_runs(schedule, anchor + timedelta(seconds=2), 1) == [anchor]
    assert service.next_runs(ran, anchor + timedelta(seconds=2), 1) == [anchor + timedelta(hours=1)]
    assert service.next_runs(schedule, anchor + timedelta(minutes=5), 1) == [anchor + timedelta(hours=1)]


# What a PATCH's body cannot know conflicts with the stored schedule (409); a callback host that
# does not resolve yet is taken (each run's delivery checks it again).


def test_a_patch_whose_filters_are_not_the_types_conflicts_with_the_schedule_and_changes_nothing():
    _, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)

    with pytest.raises(ScheduleConflict) as refused:
        service.update_schedule(
            schedule.schedule_id, service.ScheduleChanges({"filters": {"date_from": "2026-01-01"}}), FINANCE, deps
        )

    assert refused.value.field == "filters.date_from"
    assert "finance_numbers" in refused.value.message
    assert store.schedules[schedule.schedule_id] == schedule


def test_a_patch_of_an_encoding_against_the_stored_csv_bom_conflicts_with_the_schedule():
    _, deps, store, _ = world()
    schedule = service.create_schedule(
        dataclasses.replace(SPEC, export=ExportSpec(export_type="finance_numbers", csv_bom=True)), FINANCE, deps
    )

    gb18030 = CsvDialect(encoding=CsvEncoding.GB18030)
    with pytest.raises(ScheduleConflict) as refused:
        service.update_schedule(schedule.schedule_id, service.ScheduleChanges({"csv_dialect": gb18030}), FINANCE, deps)

    assert refused.value.field == "csv_dialect.encoding"
    assert store.schedules[schedule.schedule_id] == schedule


def test_a_callback_host_that_does_not_resolve_yet_is_taken_and_a_private_one_is_not():
    services = service_world(
        FinanceNumbers(), resolve=FakeResolver({"hooks.later.example": [], "intra.example": ["10.0.0.5"]})
    )
    deps = ScheduleDependencies(api=services.api, schedules=FakeScheduleStore(), timer=FakeTimer())

    later = dataclasses.replace(
        SPEC, export=ExportSpec(export_type="finance_numbers", callback_url="https://hooks.later.example/x")
    )
    assert service.create_schedule(later, FINANCE, deps).callback_url == "https://hooks.later.example/x"

    private = dataclasses.replace(
        SPEC, export=ExportSpec(export_type="finance_numbers", callback_url="https://intra.example/x")
    )
    with pytest.raises(InvalidRequest, match="not public") as refused:
        service.create_schedule(private, FINANCE, deps)
    assert refused.value.field == "callback_url"


DST_A, DST_B = "dst_01JABCDEFGHJKMNPQRSTVWXYZ0", "dst_01JABCDEFGHJKMNPQRSTVWXYZ1"


def _plan(checked: list[tuple[str, ...]]) -> service.PlanDelivery:
    """A planner as the route's: the tenant's destinations A and B pass, any other is a 422."""

    def plan(destination_ids: Sequence[str], template: str | None, caller: Caller) -> DeliveryPlan | None:
        checked.append(tuple(destination_ids))
        for index, named in enumerate(destination_ids):
            if named not in (DST_A, DST_B):
                raise InvalidRequest(f"no destination {named}", field=f"destinations.{index}")
        return DeliveryPlan(tenant="acme", destination_ids=tuple(destination_ids), path_template=template or "{file}")

    return plan


def _patch(**body: Any) -> service.ScheduleChanges:
    return SchedulePatch.model_validate(body).changes()


def test_a_patch_replaces_keeps_or_clears_the_destinations_each_named_one_checked():
    _, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    checked: list[tuple[str, ...]] = []
    plan = _plan(checked)

    named = service.update_schedule(
        schedule.schedule_id, _patch(destinations=[DST_A], path_template="{type}/{file}"), FINANCE, deps, plan
    )
    assert named.delivery == DeliveryPlan(tenant="acme", destination_ids=(DST_A,), path_template="{type}/{file}")
    # A template alone keeps the destinations (not checked again); null is the default.
    renamed = service.update_schedule(schedule.schedule_id, _patch(path_template=None), FINANCE, deps, plan)
    assert renamed.delivery == named.delivery.model_copy(update={"path_template": "{file}"})
    # Destinations alone keep the template.
    both = service.update_schedule(schedule.schedule_id, _patch(destinations=[DST_A, DST_B]), FINANCE, deps, plan)
    assert both.delivery is not None and both.delivery.path_template == "{file}"
    assert checked == [(DST_A,), (DST_A, DST_B)]
    cleared = service.update_schedule(schedule.schedule_id, _patch(destinations=[]), FINANCE, deps, plan)
    assert cleared.delivery is None and store.schedules[schedule.schedule_id].delivery is None


def test_a_patch_naming_a_destination_the_caller_may_not_use_or_a_template_for_none_changes_nothing():
    _, deps, store, _ = world()
    schedule = service.create_schedule(SPEC, FINANCE, deps)
    plan = _plan([])

    with pytest.raises(InvalidRequest) as refused:
        service.update_schedule(
            schedule.schedule_id, _patch(destinations=[DST_A, "dst_01JABCDEFGHJKMNPQRSTVWXYZ9"]), FINANCE, deps, plan
        )
    assert refused.value.field == "destinations.1"
    with pytest.raises(ScheduleConflict) as conflict:
        service.update_schedule(schedule.schedule_id, _patch(path_template="{file}"), FINANCE, deps, plan)
    assert conflict.value.field == "path_template"
    with pytest.raises(ValueError, match="path template is for the destinations"):
        _patch(destinations=[], path_template="{file}")
    assert store.schedules[schedule.schedule_id] == schedule
