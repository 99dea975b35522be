"""How ExportsClient.wait paces its polls: backoff 1 s doubling to 30 s, Retry-After as a floor."""

import httpx
import pytest

from exports_client import ExportsClient, NotFoundError, TaskStatus, WaitTimeoutError
from exports_client.polling import backoff_delay, poll_delay
from tests.client.fake_api import BASE_URL, TOKEN, FakeApi, FakeTime, error_response, json_response, task_json


def client_for(api: FakeApi, fake_time: FakeTime) -> ExportsClient:
    return ExportsClient(BASE_URL, TOKEN, transport=api.transport, sleep=fake_time.sleep, clock=fake_time.clock)


def running(progress: int = 0, retry_after: str | None = None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return json_response(200, task_json(status="RUNNING", progress=progress), headers)


def test_the_backoff_doubles_from_one_second_and_stays_at_thirty() -> None:
    assert [backoff_delay(attempt) for attempt in range(8)] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert backoff_delay(10_000) == 30


@pytest.mark.parametrize(
    ("attempt", "retry_after", "expected"),
    [(0, None, 1), (0, 5, 5), (3, 2, 8), (3, 60, 60), (9, 45, 45), (9, 0, 30)],
)
def test_retry_after_is_a_floor_never_a_ceiling(attempt: int, retry_after: float | None, expected: float) -> None:
    assert poll_delay(attempt, retry_after) == expected


def test_wait_polls_with_backoff_until_the_task_ends_and_reports_every_state() -> None:
    # Given a task that runs for five polls
    api = FakeApi().on(
        "GET",
        "/v1/exports/exp_1",
        json_response(200, task_json(status="PENDING")),
        running(20),
        running(40),
        running(80),
        json_response(200, task_json(status="COMPLETED", progress=100)),
    )
    fake_time = FakeTime()
    seen: list[tuple[TaskStatus, int]] = []

    # When the client waits for it
    task = client_for(api, fake_time).wait("exp_1", on_update=lambda t: seen.append((t.status, t.progress)))

    # Then it slept 1, 2, 4, 8 s between the polls and saw every state
    assert task.status is TaskStatus.COMPLETED
    assert fake_time.sleeps == [1, 2, 4, 8]
    assert seen == [
        (TaskStatus.PENDING, 0),
        (TaskStatus.RUNNING, 20),
        (TaskStatus.RUNNING, 40),
        (TaskStatus.RUNNING, 80),
        (TaskStatus.COMPLETED, 100),
    ]


def test_wait_honours_retry_after_when_it_asks_for_longer() -> None:
    api = FakeApi().on(
        "GET",
        "/v1/exports/exp_1",
        running(retry_after="16"),
        running(retry_after="1"),
        json_response(200, task_json(status="FAILED", error={"code": "EXPORT_FAILED", "message": "boom"})),
    )
    fake_time = FakeTime()

    task = client_for(api, fake_time).wait("exp_1")

    assert task.status is TaskStatus.FAILED
    assert task.error is not None and task.error.code == "EXPORT_FAILED"
    assert fake_time.sleeps == [16, 2]


def test_wait_rides_out_429_and_503_for_as_long_as_they_ask() -> None:
    api = FakeApi().on(
        "GET",
        "/v1/exports/exp_1",
        error_response(429, "RATE_LIMITED", headers={"Retry-After": "7"}),
        error_response(503, "SERVICE_UNAVAILABLE", headers={"Retry-After": "5"}),
        json_response(200, task_json(status="COMPLETED", progress=100)),
    )
    fake_time = FakeTime()

    task = client_for(api, fake_time).wait("exp_1")

    assert task.status is TaskStatus.COMPLETED
    assert fake_time.sleeps == [7, 5]


def test_wait_does_not_retry_errors_that_would_fail_again() -> None:
    api = FakeApi().on("GET", "/v1/exports/exp_1", error_response(404, "TASK_NOT_FOUND"))
    fake_time = FakeTime()

    with pytest.raises(NotFoundError):
        client_for(api, fake_time).wait("exp_1")

    assert fake_time.sleeps == []


def test_wait_stops_at_the_timeout_with_the_last_state_seen() -> None:
    # Given a task that never ends
    api = FakeApi().on("GET", "/v1/exports/exp_1", running(60))
    fake_time = FakeTime()

    # When the client waits 10 s for it
    with pytest.raises(WaitTimeoutError) as raised:
        client_for(api, fake_time).wait("exp_1", timeout=10)

    # Then the last sleep is cut to the time left, one last poll is made at the deadline, and
    # the error carries what was seen last
    assert fake_time.sleeps == [1, 2, 4, 3]
    # (after asking for a push channel ticket: this fake service offers none, so it polls)
    assert [request.method for request in api.requests] == ["POST"] + ["GET"] * 5
    assert raised.value.task_id == "exp_1"
    assert raised.value.task is not None and raised.value.task.progress == 60


def test_max_interval_caps_the_backoff_and_a_running_tasks_retry_after_but_not_a_429s() -> None:
    api = FakeApi().on(
        "GET",
        "/v1/exports/exp_1",
        running(retry_after="30"),
        running(),
        running(),
        error_response(429, "RATE_LIMITED", headers={"Retry-After": "9"}),
        running(retry_after="30"),
        json_response(200, task_json(status="COMPLETED", progress=100)),
    )
    fake_time = FakeTime()

    task = client_for(api, fake_time).wait("exp_1", max_interval=3)

    assert task.status is TaskStatus.COMPLETED
    assert fake_time.sleeps == [3, 2, 3, 9, 3]
