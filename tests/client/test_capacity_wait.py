"""A submit the service refuses for capacity (429) waits its Retry-After, with jitter and a bound,
says so, and submits again; opting out raises at once."""

import pytest

from exports_client import ExportsClient, RateLimitedError
from tests.client.fake_api import ACCEPTED, BASE_URL, TOKEN, FakeApi, error_response, json_response

REFUSED = error_response(
    429,
    "WOULD_TIME_OUT",
    "the exports queued ahead would keep this one from finishing",
    estimate={"estimated_start_sec": 40, "estimated_completion_sec": 41, "timeout_sec": 30},
    headers={"Retry-After": "10"},
)


def client_for(api: FakeApi, slept: list[float], jitter: float = 0.5) -> ExportsClient:
    return ExportsClient(BASE_URL, TOKEN, transport=api.transport, sleep=slept.append, random=lambda: jitter)


def test_a_refused_submit_waits_retry_after_with_jitter_then_submits_again() -> None:
    api = FakeApi().on("POST", "/v1/exports", REFUSED, REFUSED, json_response(202, ACCEPTED))
    slept: list[float] = []
    told: list[tuple[str, int | None, float]] = []

    accepted = client_for(api, slept).submit(
        "orders",
        timeout_sec=30,
        on_refused=lambda error, seconds: told.append(
            (error.code, error.estimate.estimated_completion_sec if error.estimate else None, seconds)
        ),
    )

    assert accepted.task_id == "exp_1"
    assert slept == [12.5, 12.5]  # Retry-After 10 plus a quarter (jitter 0.5 of up to half again)
    assert told == [("WOULD_TIME_OUT", 41, 12.5), ("WOULD_TIME_OUT", 41, 12.5)]
    assert api.paths() == ["POST /v1/exports"] * 3


def test_the_wait_is_bounded_and_can_be_turned_off() -> None:
    api = FakeApi().on("POST", "/v1/exports", REFUSED)
    slept: list[float] = []

    with pytest.raises(RateLimitedError) as bounded:
        client_for(api, slept).submit("orders", wait_for_capacity=30)
    with pytest.raises(RateLimitedError):
        client_for(api, slept).submit("orders", wait_for_capacity=0)

    assert slept == [12.5, 12.5]  # a third wait would pass 30 s in all
    assert bounded.value.estimate is not None and bounded.value.estimate.timeout_sec == 30


def test_a_gateway_429_without_retry_after_is_backed_off_all_the_same() -> None:
    throttled = error_response(429, "HTTP_429", "Too Many Requests")
    api = FakeApi().on("POST", "/v1/exports", throttled, throttled, json_response(202, ACCEPTED))
    slept: list[float] = []

    client_for(api, slept, jitter=0.0).submit("orders")

    assert slept == [1.0, 2.0]  # the polling backoff: 1 s, then 2 s
