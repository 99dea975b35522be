"""The retry policies' arithmetic (exports/core/config/retry.py) and how the adapters turn them into
tenacity, botocore and Step Functions settings."""

from __future__ import annotations

import math

import pytest
from tenacity import RetryCallState, Retrying

from exports.core.aws import clients, retries
from exports.core.config.retry import (
    HOT_KEY_DEFERRAL,
    MESSAGE_RETRY,
    SDK_RETRY,
    SOURCE_BUSY_DEFERRAL,
    TASK_RETRY,
    TRANSIENT_RETRY,
    Backoff,
    Deferral,
    Jitter,
)
from exports.core.workflows import retrier

ALMOST_ONE = 1 - 2**-53


def test_a_backoffs_ceiling_grows_by_its_factor_up_to_its_cap():
    policy = Backoff(retries=5, base_sec=15, factor=4, cap_sec=300)

    assert [policy.ceiling_sec(n) for n in range(5)] == [15, 60, 240, 300, 300]
    assert Backoff(retries=3, base_sec=1, factor=4).ceiling_sec(10) == 4**10
    assert policy.attempts == 6


@pytest.mark.parametrize(
    ("jitter", "lowest", "highest"), [(Jitter.NONE, 60, 60), (Jitter.FULL, 0, 60), (Jitter.EQUAL, 30, 60)]
)
def test_a_wait_is_drawn_below_the_ceiling_as_its_jitter_says(jitter, lowest, highest):
    policy = Backoff(retries=2, base_sec=15, factor=4, jitter=jitter)

    assert policy.wait_sec(1, 0.0) == lowest
    assert policy.wait_sec(1, ALMOST_ONE) == pytest.approx(highest)


def test_a_deferral_waits_its_wait_plus_up_to_as_much_again_within_its_cap():
    assert SOURCE_BUSY_DEFERRAL.delay_sec(0.0) == 15
    assert SOURCE_BUSY_DEFERRAL.delay_sec(ALMOST_ONE) == 30
    # A hot key's bucket wait is the caller's; the cap still holds.
    assert HOT_KEY_DEFERRAL.delay_sec(0.5, after=10) == 15
    assert HOT_KEY_DEFERRAL.delay_sec(ALMOST_ONE, after=45) == HOT_KEY_DEFERRAL.cap_sec
    assert Deferral(wait_sec=7, cap_sec=100).delay_sec(0.1) == 8


def test_a_failed_delivery_backs_off_as_a_task_retry_and_only_the_count_differs():
    assert (MESSAGE_RETRY.base_sec, MESSAGE_RETRY.factor, MESSAGE_RETRY.cap_sec, MESSAGE_RETRY.jitter) == (
        TASK_RETRY.base_sec,
        TASK_RETRY.factor,
        TASK_RETRY.cap_sec,
        TASK_RETRY.jitter,
    )
    assert MESSAGE_RETRY.attempts == 5


def test_step_functions_retriers_carry_the_cap_and_full_jitter_only_when_the_policy_has_them():
    capped = Backoff(retries=10, base_sec=1, factor=2.0, cap_sec=30, jitter=Jitter.FULL)

    assert retrier(["E"], capped) == {
        "ErrorEquals": ["E"],
        "IntervalSeconds": 1,
        "BackoffRate": 2.0,
        "MaxAttempts": 10,
        "MaxDelaySeconds": 30,
        "JitterStrategy": "FULL",
    }
    assert retrier(["E"], Backoff(retries=3, base_sec=1, factor=4)) == {
        "ErrorEquals": ["E"],
        "IntervalSeconds": 1,
        "BackoffRate": 4,
        "MaxAttempts": 3,
    }
    with pytest.raises(ValueError, match="equal jitter"):
        retrier(["E"], TASK_RETRY)


def test_transient_faults_are_retried_by_tenacity_on_the_transient_policy(monkeypatch):
    built: list[Retrying] = []

    def recording(**kwargs):
        built.append(Retrying(**kwargs))
        return built[-1]

    monkeypatch.setattr(retries, "Retrying", recording)
    assert retries.retry_transient(lambda: "done") == "done"

    (retrying,) = built
    waits = []
    for attempt in range(1, 8):
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        waits.append(retrying.wait(state))
        assert retrying.stop(state) is (attempt >= TRANSIENT_RETRY.attempts)
    ceilings = [TRANSIENT_RETRY.ceiling_sec(n) for n in range(7)]
    assert all(0 <= wait <= ceiling for wait, ceiling in zip(waits, ceilings, strict=True))
    assert ceilings[-1] == TRANSIENT_RETRY.cap_sec and math.isfinite(TRANSIENT_RETRY.cap_sec)


def test_every_boto3_client_retries_in_standard_mode_as_often_as_the_sdk_policy_says():
    factory = clients.ClientFactory()

    configs = [factory(service).meta.config for service in ("sqs", "s3")]
    # botocore's stubs leave the retries out of Config.
    retries = [config.retries for config in configs]  # type: ignore[attr-defined]

    # botocore counts the first attempt in total_max_attempts only.
    assert retries == [{"mode": "standard", "total_max_attempts": SDK_RETRY.attempts}] * 2
