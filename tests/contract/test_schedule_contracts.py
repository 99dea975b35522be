"""The schedule ports against their fakes and their adapters on moto (the same cases): the
DynamoDB schedule store (conditional writes, the per-user cap, the firing claim), EventBridge
Scheduler and SES."""

from __future__ import annotations

import email
import email.policy
import functools
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from exports.core.aws.errors import AwsError
from exports.core.config.names import Names
from exports.core.errors import ConditionFailed, InvalidRequest
from exports.finishing.ports import Attachment
from exports.finishing.ses_mailer import SesMailer
from exports.schedules.dynamodb_schedules import FIRING_LEASE, DynamoScheduleStore
from exports.schedules.eventbridge_scheduler import EventBridgeScheduleTimer, moved_firing_name
from exports.schedules.model import Every, PauseCode, PauseReason, Schedule, StoredCaller, pause
from exports.schedules.ports import ScheduleLimitReached, ScheduleStore
from local_stack.embedded_aws import LOCAL_MAIL_SENDER, REGION, Resources, create_resources
from tests.integration.conftest import serialise_shared_state
from tests.unit.schedule_fakes import FakeScheduleStore

NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)
FIRING = datetime(2026, 12, 7, 7, tzinfo=UTC)


@pytest.fixture
def moto() -> Iterator[Resources]:
    with mock_aws():
        yield create_resources(functools.partial(boto3.client, region_name=REGION))


@pytest.fixture(params=["fake", "dynamodb"])
def store(request: pytest.FixtureRequest) -> ScheduleStore:
    if request.param == "fake":
        return FakeScheduleStore()
    resources = request.getfixturevalue("moto")
    return DynamoScheduleStore(boto3.client("dynamodb", region_name=REGION), resources.schedules_table)


def schedule_n(n: int, user: str = "alice", **changes: Any) -> Schedule:
    base = Schedule(
        schedule_id=f"sch_01JNCS6Z0000000000000000{n:02d}",
        user_id=user,
        caller=StoredCaller(user_id=user, claims={"custom:tenant_id": "acme"}),
        name="Weekly",
        export_type="orders",
        filters={"date_from": "previous_week"},
        cron="0 8 * * 1",
        timezone="Europe/Berlin",
        recipients=("finance@acme.example",),
        created_at=NOW,
        updated_at=NOW,
        anchor_at=NOW,
    )
    return base.model_copy(update=changes)


def test_a_created_schedule_reads_back_exactly(store: ScheduleStore) -> None:
    schedule = schedule_n(1, every=Every(minutes=30), cron=None)
    store.create(schedule, max_per_user=5)

    assert store.get(schedule.schedule_id) == schedule
    assert store.get(schedule_n(2).schedule_id) is None


def test_the_cap_counts_per_user_and_a_deletion_frees_a_place(store: ScheduleStore) -> None:
    store.create(schedule_n(1), max_per_user=2)
    store.create(schedule_n(2), max_per_user=2)
    with pytest.raises(ScheduleLimitReached):
        store.create(schedule_n(3), max_per_user=2)
    store.create(schedule_n(4, user="bob"), max_per_user=2)
    assert store.get(schedule_n(3).schedule_id) is None

    store.delete(schedule_n(1))
    store.delete(schedule_n(1))  # again: nothing more is freed
    store.create(schedule_n(3), max_per_user=2)
    with pytest.raises(ScheduleLimitReached):
        store.create(schedule_n(5), max_per_user=2)


def test_creating_an_existing_id_is_a_condition_failure(store: ScheduleStore) -> None:
    store.create(schedule_n(1), max_per_user=5)
    with pytest.raises(ConditionFailed):
        store.create(schedule_n(1), max_per_user=5)


def test_a_replace_is_conditional_on_the_version_read(store: ScheduleStore) -> None:
    first = schedule_n(1)
    store.create(first, max_per_user=5)
    paused = store.replace(first, pause(first, PauseReason(code=PauseCode.PAUSED_BY_USER, message="m"), NOW))

    assert paused.version == 1 and store.get(first.schedule_id) == paused
    with pytest.raises(ConditionFailed):
        store.replace(first, first.model_copy(update={"name": "lost"}))
    assert store.get(first.schedule_id) == paused


def test_a_user_lists_only_their_schedules_newest_first_a_page_at_a_time(store: ScheduleStore) -> None:
    for n in (1, 2, 3):
        store.create(schedule_n(n), max_per_user=5)
    store.create(schedule_n(4, user="bob"), max_per_user=5)

    first = store.list_for_user("alice", 2, None)
    assert [s.schedule_id for s in first.schedules] == [schedule_n(3).schedule_id, schedule_n(2).schedule_id]
    assert first.cursor is not None
    rest = store.list_for_user("alice", 2, first.cursor)
    assert [s.schedule_id for s in rest.schedules] == [schedule_n(1).schedule_id]
    # The cursor is the page's last id: the schema states its shape, so any id of that shape is
    # a position in the caller's own list (another user's, or a deleted schedule's), never a leak.
    assert first.cursor == schedule_n(2).schedule_id
    assert store.list_for_user("bob", 2, first.cursor).schedules == []
    never_made = schedule_n(3).schedule_id[:-2] + "99"
    assert [s.schedule_id for s in store.list_for_user("alice", 5, never_made).schedules] == [
        schedule_n(n).schedule_id for n in (3, 2, 1)
    ]
    with pytest.raises(InvalidRequest):
        store.list_for_user("alice", 2, "eyJwayI6ICJ4In0")  # not a schedule id


def test_a_firing_is_claimed_once_its_holder_finishes_and_a_duplicate_sees_the_task(store: ScheduleStore) -> None:
    won = store.claim_firing("sch_1", FIRING, NOW)
    lost = store.claim_firing("sch_1", FIRING, NOW)
    assert won.won and not lost.won and lost.task_id is None

    store.finish_firing("sch_1", FIRING, won.token, "exp_1")
    again = store.claim_firing("sch_1", FIRING, NOW + FIRING_LEASE * 2)
    assert not again.won and again.task_id == "exp_1"
    assert store.claim_firing("sch_1", FIRING + timedelta(days=7), NOW).won  # another firing
    with pytest.raises(ConditionFailed):
        store.finish_firing("sch_1", FIRING, "not-the-token", "exp_2")


def test_a_released_or_lapsed_claim_can_be_claimed_again(store: ScheduleStore) -> None:
    first = store.claim_firing("sch_1", FIRING, NOW)
    store.release_firing("sch_1", FIRING, first.token)
    second = store.claim_firing("sch_1", FIRING, NOW)
    assert second.won

    # Its holder died: the lease runs out, and the next delivery takes the firing over.
    assert not store.claim_firing("sch_1", FIRING, NOW + FIRING_LEASE - timedelta(seconds=1)).won
    third = store.claim_firing("sch_1", FIRING, NOW + FIRING_LEASE + timedelta(seconds=1))
    assert third.won
    with pytest.raises(ConditionFailed):
        store.finish_firing("sch_1", FIRING, second.token, "exp_late")  # the old holder lost it
    store.release_firing("sch_1", FIRING, second.token)  # and cannot release it either
    assert not store.claim_firing("sch_1", FIRING, NOW + FIRING_LEASE + timedelta(seconds=2)).won


def test_concurrent_claims_of_one_firing_have_exactly_one_winner(
    store: ScheduleStore, request: pytest.FixtureRequest
) -> None:
    if isinstance(store, DynamoScheduleStore):
        # DynamoDB checks and writes atomically; moto does not lock: serialise it, as local mode does.
        serialise_shared_state(request.getfixturevalue("monkeypatch"))
    start = threading.Barrier(8)
    results: list[bool] = []

    def claim() -> None:
        start.wait()
        results.append(store.claim_firing("sch_1", FIRING, NOW).won)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == [False] * 7 + [True]


# EventBridge Scheduler ----------------------------------------------------------------------------


@pytest.fixture
def timer(moto: Resources) -> EventBridgeScheduleTimer:
    return EventBridgeScheduleTimer(
        boto3.client("scheduler", region_name=REGION),
        Names.SCHEDULE_GROUP,
        moto.schedule_target_arn,
        moto.scheduler_role_arn,
        moto.schedule_dlq_arn,
    )


def test_the_timer_creates_updates_and_deletes_the_scheduler_schedule(timer: EventBridgeScheduleTimer) -> None:
    schedule = schedule_n(1)
    timer.create(schedule, datetime.now(UTC))
    created = timer.describe(schedule.schedule_id)
    assert created["ScheduleExpression"] == "cron(0 8 ? * MON *)"
    assert created["ScheduleExpressionTimezone"] == "Europe/Berlin"
    assert created["State"] == "ENABLED"
    assert json.loads(created["Target"]["Input"])["schedule_id"] == schedule.schedule_id

    every = schedule.model_copy(update={"cron": None, "every": Every(hours=6), "start_at": NOW})
    timer.update(pause(every, PauseReason(code=PauseCode.TOO_MANY_FAILURES, message="m"), NOW), datetime.now(UTC))
    updated = timer.describe(schedule.schedule_id)
    assert updated["ScheduleExpression"] == "rate(6 hours)" and updated["State"] == "DISABLED"
    assert "StartDate" not in updated  # paused: no window (given again when it resumes)

    timer.delete(schedule.schedule_id)
    timer.delete(schedule.schedule_id)  # gone already: fine
    with pytest.raises(AwsError) as missing:
        timer.describe(schedule.schedule_id)
    assert missing.value.aws_code == "ResourceNotFoundException"


@pytest.mark.parametrize(
    ("changes", "state", "start", "end"),
    [
        # A start long past: no StartDate for a cron; an every's next firing in its phase.
        ({"start_at": datetime(1110, 9, 13, tzinfo=UTC)}, "ENABLED", None, None),
        (
            {"cron": None, "every": Every(hours=6), "start_at": datetime(1110, 9, 13, 1, tzinfo=UTC)},
            "ENABLED",
            "next 6-hour step from 01:00",
            None,
        ),
        # Ended, or an end not after the start: nothing ahead, kept disabled without dates.
        ({"end_at": datetime(2000, 1, 1, tzinfo=UTC)}, "DISABLED", None, None),
        (
            {"start_at": datetime(2100, 1, 1, tzinfo=UTC), "end_at": datetime(2100, 1, 1, tzinfo=UTC)},
            "DISABLED",
            None,
            None,
        ),
        (
            {"start_at": datetime(2100, 1, 1, tzinfo=UTC), "end_at": datetime(2101, 1, 1, tzinfo=UTC)},
            "ENABLED",
            "start",
            "end",
        ),
    ],
)
def test_scheduler_takes_every_window_the_api_takes(
    timer: EventBridgeScheduleTimer, changes: dict[str, Any], state: str, start: str | None, end: str | None
) -> None:
    """moto's Scheduler refuses what AWS's does (a StartDate more than 5 minutes ago, an EndDate
    in the past or not after the StartDate): each of these was a 503 before."""
    schedule = schedule_n(5, **changes)
    now = datetime.now(UTC)

    timer.create(schedule, now)

    described = timer.describe(schedule.schedule_id)
    assert described["State"] == state
    if start == "start":
        assert described["StartDate"] == schedule.start_at
    elif start is not None:  # the rate's phase: 01:00, 07:00, 13:00, 19:00 UTC, the first after now
        assert described["StartDate"] > now and described["StartDate"] - now <= timedelta(hours=6)
        assert described["StartDate"].hour % 6 == 1 and described["StartDate"].minute == 0
    else:
        assert "StartDate" not in described
    assert described.get("EndDate") == (schedule.end_at if end else None)


def test_updating_a_missing_scheduler_schedule_creates_it(timer: EventBridgeScheduleTimer) -> None:
    timer.update(schedule_n(2), datetime.now(UTC))

    assert timer.describe(schedule_n(2).schedule_id)["State"] == "ENABLED"


def test_the_timer_keeps_a_one_time_schedule_for_a_moved_firing(timer: EventBridgeScheduleTimer) -> None:
    schedule = schedule_n(3, cron="30 2 * * *")
    name = moved_firing_name(schedule.schedule_id)
    timer.create(schedule, datetime.now(UTC))
    timer.set_moved_firing(schedule, None)  # none to delete yet: fine

    timer.set_moved_firing(schedule, datetime(2027, 3, 28, 1, tzinfo=UTC))
    companion, main = timer.describe(name), timer.describe(schedule.schedule_id)
    assert name == f"{schedule.schedule_id}-dst" and len(name) <= 64
    assert companion["ScheduleExpression"] == "at(2027-03-28T01:00:00)"
    assert companion["ScheduleExpressionTimezone"] == "UTC"
    assert companion["ActionAfterCompletion"] == "DELETE"
    # A daily schedule: its firings, the moved one too, arrive within its ten-minute window.
    assert companion["State"] == "ENABLED"
    assert companion["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 10}
    # The same target: the same function, role, retries, dead letters and Input (Scheduler's
    # scheduled time then is the at() time: the moved firing's idempotency key).
    assert companion["Target"] == main["Target"]

    timer.set_moved_firing(schedule, datetime(2028, 3, 26, 1, tzinfo=UTC))  # an update
    assert timer.describe(name)["ScheduleExpression"] == "at(2028-03-26T01:00:00)"

    timer.delete(schedule.schedule_id)  # both go
    for gone in (schedule.schedule_id, name):
        with pytest.raises(AwsError) as missing:
            timer.describe(gone)
        assert missing.value.aws_code == "ResourceNotFoundException"


# SES ----------------------------------------------------------------------------------------------


def test_the_mailer_sends_a_text_message_through_ses(moto: Resources) -> None:
    SesMailer(boto3.client("sesv2", region_name=REGION)).send(
        LOCAL_MAIL_SENDER, ["finance@acme.example", "ops@acme.example"], "Weekly: 3 rows ready", "line\n"
    )

    [message] = ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages
    assert message.source == LOCAL_MAIL_SENDER
    assert message.destinations["ToAddresses"] == ["finance@acme.example", "ops@acme.example"]
    assert (message.subject, message.body) == ("Weekly: 3 rows ready", "line\n")


def test_the_mailer_attaches_the_file_in_a_raw_message_ses_sends_as_it_is(moto: Resources) -> None:
    # Given a file of bytes a text part would mangle (a NUL, a lone CR, non-ASCII)
    data = b"id,name\r\n1,J\xc3\xbcrgen\r\n\x00\rend"
    attachment = Attachment(file_name="orders 2026-12-07.csv", content_type="text/csv; charset=utf-8", data=data)

    # When it is mailed
    SesMailer(boto3.client("sesv2", region_name=REGION)).send(
        LOCAL_MAIL_SENDER, ["finance@acme.example"], "Weekly: 2 rows ready", "Attached: orders.csv\n", attachment
    )

    # Then SES got one raw message whose text and attachment the email package reads back whole
    [sent] = ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages
    # (moto lists a recipient once from Destination and once from the To header)
    assert set(sent.destinations) == {"finance@acme.example"}
    message = email.message_from_bytes(sent.raw_data.encode(), policy=email.policy.default)
    assert message["Subject"] == "Weekly: 2 rows ready"
    assert message.get_body(("plain",)).get_content().splitlines() == ["Attached: orders.csv"]
    [part] = list(message.iter_attachments())
    assert part.get_filename() == "orders 2026-12-07.csv"
    assert part.get_content_type() == "text/csv"
    assert part.get_payload(decode=True) == data


def test_an_unverified_sender_is_a_typed_error(moto: Resources) -> None:
    with pytest.raises(AwsError):
        SesMailer(boto3.client("sesv2", region_name=REGION)).send(
            "nobody@unverified.example", ["a@b.example"], "s", "t"
        )


def test_concurrent_creates_never_pass_the_cap(store: ScheduleStore, request: pytest.FixtureRequest) -> None:
    if isinstance(store, DynamoScheduleStore):
        serialise_shared_state(request.getfixturevalue("monkeypatch"))
    start = threading.Barrier(6)
    refused: list[int] = []

    def create(n: int) -> None:
        start.wait()
        try:
            store.create(schedule_n(n), max_per_user=3)
        except ScheduleLimitReached:
            refused.append(n)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(refused) == 3
    assert len(store.list_for_user("alice", 10, None).schedules) == 3
