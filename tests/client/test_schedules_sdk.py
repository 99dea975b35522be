"""The SDK's schedule calls against the contract's routes, kept in memory by FakeSchedules:
the requests they send, the typed views they return, pagination, errors and tenancy."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from exports_client import (
    UNSET,
    Every,
    EveryHours,
    EveryMinutes,
    ExportsClient,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    ScheduleState,
    TaskStatus,
)
from tests.client.fake_api import BASE_URL, TOKEN, FakeApi, FakeSchedules, mail_json


@pytest.fixture
def backend() -> FakeSchedules:
    return FakeSchedules()


@pytest.fixture
def api(backend: FakeSchedules) -> FakeApi:
    return FakeApi(backend)


def client_of(api: FakeApi, token: str = TOKEN) -> ExportsClient:
    return ExportsClient(BASE_URL, token, transport=api.transport)


def body_of(api: FakeApi, index: int = -1) -> dict[str, object]:
    return json.loads(api.requests[index].content)


def test_create_sends_the_contracts_body_and_returns_a_typed_schedule(api: FakeApi) -> None:
    with client_of(api) as client:
        schedule = client.create_schedule(
            "orders",
            {"date_from": "previous_week"},
            cron="0 8 * * 1",
            timezone="Europe/Berlin",
            name="Weekly orders",
            format="xlsx",
            recipients=("finance@acme.example",),
            start_at=datetime(2026, 12, 7, tzinfo=UTC),
            priority=3,
        )

    assert body_of(api) == {
        "export_type": "orders",
        "filters": {"date_from": "previous_week"},
        "name": "Weekly orders",
        "format": "xlsx",
        "cron": "0 8 * * 1",
        "timezone": "Europe/Berlin",
        "start_at": "2026-12-07T00:00:00+00:00",
        "recipients": ["finance@acme.example"],
        "priority": 3,
    }
    assert api.paths() == ["POST /v1/schedules"]
    assert schedule.state is ScheduleState.ACTIVE
    assert schedule.cron == "0 8 * * 1"
    assert schedule.every is None
    assert schedule.start_at == datetime(2026, 12, 7, tzinfo=UTC)
    assert schedule.next_runs[0].local.utcoffset() is not None


def test_every_is_sent_as_one_unit_and_its_next_runs_are_in_the_zone(api: FakeApi) -> None:
    with client_of(api) as client:
        by_mapping = client.create_schedule("orders", {"date_from": "previous_day"}, every={"hours": 2})
        by_model = client.create_schedule(
            "orders", {"date_from": "previous_day"}, every=Every(minutes=30), timezone="Asia/Kathmandu"
        )

    assert body_of(api, 0)["every"] == {"hours": 2}
    assert body_of(api, 1)["every"] == {"minutes": 30}
    assert by_mapping.every == EveryHours(hours=2)
    assert len(by_model.next_runs) == 5
    first = by_model.next_runs[0]
    assert first.local.utcoffset() == timedelta(hours=5, minutes=45)
    assert first.local == first.utc


def test_an_idempotency_key_makes_a_repeated_create_answer_the_same_schedule(api: FakeApi) -> None:
    with client_of(api) as client:
        first = client.create_schedule("orders", {"date_from": "previous_day"}, every={"days": 1}, idempotency_key="k1")
        again = client.create_schedule("orders", {"date_from": "previous_day"}, every={"days": 1}, idempotency_key="k1")
        other = client.create_schedule("orders", {"date_from": "previous_day"}, every={"days": 1})

    assert [request.headers.get("Idempotency-Key") for request in api.requests] == ["k1", "k1", None]
    assert again.schedule_id == first.schedule_id
    assert other.schedule_id != first.schedule_id


def test_list_pages_and_iter_schedules_follows_every_page(api: FakeApi) -> None:
    with client_of(api) as client:
        made = [client.create_schedule("orders", {}, every={"days": n}).schedule_id for n in (1, 2, 3)]
        page = client.list_schedules(limit=2)
        everything = [schedule.schedule_id for schedule in client.iter_schedules(page_size=2)]

    assert [schedule.schedule_id for schedule in page.items] == made[::-1][:2]
    assert page.next_token is not None
    assert everything == made[::-1]
    pages = [request.url.params.get("next_token") for request in api.requests if request.method == "GET"]
    assert pages == [None, None, page.next_token]


def test_update_sends_only_what_is_given_and_none_as_null(api: FakeApi) -> None:
    with client_of(api) as client:
        created = client.create_schedule("orders", {"date_from": "previous_week"}, cron="0 8 * * 1")
        changed = client.update_schedule(
            created.schedule_id, cron=None, every={"minutes": 30}, end_at=None, recipients=["ops@acme.example"]
        )
        renamed = client.update_schedule(created.schedule_id, name="Half-hourly", timezone=UNSET)

    assert api.requests[1].method == "PATCH"
    assert body_of(api, 1) == {
        "cron": None,
        "every": {"minutes": 30},
        "end_at": None,
        "recipients": ["ops@acme.example"],
    }
    assert body_of(api, 2) == {"name": "Half-hourly"}
    assert changed.every == EveryMinutes(minutes=30) and changed.cron is None
    assert renamed.name == "Half-hourly"


def test_pause_and_resume_set_the_state_and_the_reason(api: FakeApi, backend: FakeSchedules) -> None:
    with client_of(api) as client:
        schedule_id = client.create_schedule("orders", {}, cron="0 8 * * 1").schedule_id
        paused = client.pause_schedule(schedule_id)
        backend.schedules[schedule_id]["consecutive_failures"] = 5
        resumed = client.resume_schedule(schedule_id)

    assert [body_of(api, index) for index in (1, 2)] == [{"state": "PAUSED"}, {"state": "ACTIVE"}]
    assert paused.state is ScheduleState.PAUSED
    assert paused.paused_reason is not None and paused.paused_reason.code == "PAUSED_BY_USER"
    assert paused.next_runs == []
    assert resumed.state is ScheduleState.ACTIVE
    assert resumed.paused_reason is None and resumed.consecutive_failures == 0


def test_run_now_then_the_runs_are_the_schedules_tasks(api: FakeApi) -> None:
    with client_of(api) as client:
        schedule_id = client.create_schedule("orders", {"date_from": "previous_week"}, cron="0 8 * * 1").schedule_id
        first, second = client.run_schedule(schedule_id), client.run_schedule(schedule_id)
        runs = list(client.schedule_runs(schedule_id))

    assert first.status is TaskStatus.PENDING
    assert [run.task_id for run in runs] == [second.task_id, first.task_id]
    assert all(run.schedule_id == schedule_id and run.scheduled_for is not None for run in runs)
    listed = [request for request in api.requests if request.url.path == "/v1/exports"]
    assert [request.url.params["schedule_id"] for request in listed] == [schedule_id]


def test_delete_answers_nothing_and_the_schedule_is_gone(api: FakeApi) -> None:
    with client_of(api) as client:
        schedule_id = client.create_schedule("orders", {}, cron="0 8 * * 1").schedule_id
        client.delete_schedule(schedule_id)
        with pytest.raises(NotFoundError) as gone:
            client.get_schedule(schedule_id)

    assert gone.value.code == "SCHEDULE_NOT_FOUND"
    assert api.paths()[1] == f"DELETE /v1/schedules/{schedule_id}"


def test_another_users_schedule_is_not_found_for_every_call(api: FakeApi) -> None:
    with client_of(api) as alice:
        schedule_id = alice.create_schedule("orders", {}, cron="0 8 * * 1").schedule_id
    with client_of(api, "bob-token") as bob:
        calls = [
            lambda: bob.get_schedule(schedule_id),
            lambda: bob.pause_schedule(schedule_id),
            lambda: bob.update_schedule(schedule_id, name="mine"),
            lambda: bob.run_schedule(schedule_id),
            lambda: bob.delete_schedule(schedule_id),
        ]
        for call in calls:
            with pytest.raises(NotFoundError):
                call()
        assert bob.list_schedules().items == []
        assert list(bob.schedule_runs(schedule_id)) == []


@pytest.mark.parametrize(
    ("options", "code", "field"),
    [
        ({"cron": "0 8 * * 1", "every": {"days": 1}}, "VALIDATION_ERROR", "cron"),
        ({"cron": "0 8 * *"}, "INVALID_CRON", "cron"),
        ({"cron": "0 8 * * 1", "timezone": "Mars/Olympus"}, "UNKNOWN_TIMEZONE", "timezone"),
        (
            {"cron": "0 8 * * 1", "recipients": ["a@acme.example", "b@evil.example"]},
            "RECIPIENT_NOT_ALLOWED",
            "recipients[1]",
        ),
    ],
)
def test_refusals_are_invalid_request_errors_naming_the_field(
    api: FakeApi, options: dict[str, object], code: str, field: str
) -> None:
    with client_of(api) as client, pytest.raises(InvalidRequestError) as refused:
        client.create_schedule("orders", {}, **options)  # type: ignore[arg-type]

    assert (refused.value.status, refused.value.code, refused.value.field) == (422, code, field)


def test_the_per_user_cap_is_a_rate_limited_error(api: FakeApi) -> None:
    with client_of(api) as client:
        for _ in range(FakeSchedules.MAX_PER_USER):
            client.create_schedule("orders", {}, every={"days": 1})
        with pytest.raises(RateLimitedError) as capped:
            client.create_schedule("orders", {}, every={"days": 1})

    assert capped.value.code == "SCHEDULE_LIMIT_REACHED"


def test_the_mailbox_is_read_with_its_from_field(api: FakeApi, backend: FakeSchedules) -> None:
    backend.mail += [mail_json("msg_1"), mail_json("msg_2", subject="Weekly orders: failed")]
    with client_of(api) as client:
        messages = client.mailbox()

    assert [message.id for message in messages] == ["msg_2", "msg_1"]
    assert messages[1].from_ == "exports@local.test"
    assert messages[1].to == ["finance@acme.example"]
    assert api.paths() == ["GET /local/mailbox"]


def test_a_deployment_without_a_mailbox_says_not_found() -> None:
    with client_of(FakeApi()) as client, pytest.raises(NotFoundError):
        client.mailbox()
