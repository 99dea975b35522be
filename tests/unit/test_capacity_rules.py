"""Admission by deadline (exports.domain.capacity): the pure rules, then a simulated lane that a
burst of submits meets, run on a controlled clock (no sleeping)."""

import heapq
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from exports.config.limits import Admission
from exports.domain.capacity import (
    Drain,
    Pool,
    admission_window,
    drained,
    estimate,
    plan,
    retry_after_sec,
    too_late_to_finish,
)
from tests.unit.service_fakes import FakeCapacityPools

EPOCH = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_a_pool_without_a_measured_drain_takes_its_workers_at_half_an_estimated_second_a_second() -> None:
    pool = Pool("lane#normal", workers=2)
    assert pool.rate == 1.0
    assert pool.wait_sec(10.0) == 10.0


def test_a_measured_drain_prices_the_queue() -> None:
    # Two workers take up 8 estimated seconds a second.
    pool = Pool("lane#normal", workers=2, drain=Drain(work_sec=8.0, elapsed_sec=1.0, samples=8))
    assert pool.wait_sec(16.0) == 2.0


def test_the_drain_is_a_weighted_mean_of_work_and_elapsed_time() -> None:
    first = drained(None, work_sec=2.0, elapsed_sec=1.0, smoothing=0.1)
    assert first == Drain(2.0, 1.0)
    second = drained(first, work_sec=2.0, elapsed_sec=3.0, smoothing=0.1)
    assert second == Drain(2.0, 2.0, samples=2) and second.rate == 1.0  # a plain mean at first
    later = Drain(2.0, 2.0, samples=100)
    assert drained(later, work_sec=2.0, elapsed_sec=12.0, smoothing=0.1) == Drain(2.0, 3.0, samples=101)
    assert drained(None, work_sec=1.0, elapsed_sec=0.0, smoothing=0.1).rate == 1000.0  # never divides by 0


def test_a_drain_counts_once_it_spans_four_rounds_of_the_workers_starts() -> None:
    assert Pool("lane", 2, Drain(8.0, 1.0, samples=7)).rate == 1.0
    assert Pool("lane", 2, Drain(8.0, 1.0, samples=8)).rate == 8.0


def test_the_plan_allows_the_work_ahead_that_still_ends_within_the_window() -> None:
    measured = Drain(work_sec=2.0, elapsed_sec=1.0, samples=100)
    lane, source = Pool("lane#normal", 2, measured), Pool("source#shop", 1, Drain(1.0, 1.0, samples=100))
    allowed = plan([lane, source], work_sec=4.0, window_sec=24.0)
    # Its own run is the slowest pool's share: the source runs it on one of one slot.
    assert allowed.run_sec == 4.0
    assert allowed.limits == {"lane#normal": 40.0, "source#shop": 20.0}
    # Too long for the window even with nothing ahead: only an empty pool takes it.
    assert plan([lane], work_sec=30.0, window_sec=24.0).limits == {"lane#normal": 0.001}


def test_the_estimate_waits_for_the_slowest_pool_then_runs() -> None:
    lane, source = Pool("lane#normal", 2), Pool("source#shop", 2)
    assert estimate([lane, source], {"lane#normal": 5.0, "source#shop": 8.0}, run_sec=2.0).completion_sec == 10
    assert estimate([lane], {}, run_sec=0.2).completion_sec == 1


def test_retry_after_is_when_the_pool_has_drained_to_the_limit() -> None:
    pool = Pool("lane#normal", 4)
    assert retry_after_sec(pool, queued_sec=50.0, limit_sec=40.0, most=900) == 5
    assert retry_after_sec(pool, queued_sec=40.5, limit_sec=40.0, most=900) == 1
    assert retry_after_sec(pool, queued_sec=10**6, limit_sec=0.0, most=900) == 900


def test_a_task_that_can_no_longer_finish_is_not_begun_unless_it_never_could() -> None:
    assert too_late_to_finish(remaining_sec=3.0, run_sec=5.0, timeout_sec=30)
    assert not too_late_to_finish(remaining_sec=6.0, run_sec=5.0, timeout_sec=30)
    assert not too_late_to_finish(remaining_sec=3.0, run_sec=50.0, timeout_sec=30)  # never fitted


def test_the_admission_window_is_a_share_of_the_deadline() -> None:
    assert admission_window(30, 0.8) == 24.0


# --- a simulated lane ---------------------------------------------------------------------------


@dataclass(order=True)
class _Event:
    at: float
    order: int
    kind: str = field(compare=False)
    client: int = field(compare=False, default=0)


@dataclass
class _Outcome:
    accepted: int = 0
    refused: int = 0
    refusals_without_retry_after: int = 0
    completed: int = 0
    late: int = 0
    not_begun: int = 0
    completed_by: dict[float, int] = field(default_factory=dict)
    estimate_errors: list[tuple[float, float]] = field(default_factory=list)

    def record(self, task: "_Task", ends: float, burst_start: float) -> None:
        """A task of the burst that ran, ending at ``ends``."""
        self.completed += 1
        self.late += ends > task.deadline
        self.estimate_errors.append((task.estimate, ends - task.created))
        for horizon in (30.0, 60.0):
            if ends - burst_start <= horizon:
                self.completed_by[horizon] = self.completed_by.get(horizon, 0) + 1


@dataclass
class _Task:
    created: float
    deadline: float
    work: float
    estimate: float
    measured: bool = True


def simulate(
    clients: int,
    timeout_sec: int,
    estimated_sec: float,
    real_sec: float,
    workers: int = 2,
    burst_sec: float = 2.0,
    give_up_sec: float = 120.0,
    warm_tasks: int = 0,
    seed: int = 7,
    cold: bool = False,
    slowdown: tuple[float, float] = (0.0, 1.0),
) -> _Outcome:
    """``clients`` submit one export each within ``burst_sec`` (after an earlier burst of
    ``warm_tasks``), each estimated at ``estimated_sec`` and really taking ``real_sec`` (+-20 %),
    to a lane of ``workers``; a refused client tries again after Retry-After plus up to as much
    again (the SDK's jitter), until ``give_up_sec``. ``cold``: ``estimated_sec`` is the defaults'
    guess, until the first run ends and its type's speed is measured (then ``real_sec``; the
    drain learns only from measured estimates, as the worker's). ``slowdown``: (seconds into the
    burst, factor): from then on every run takes that factor longer (other work took the cores),
    which no estimate made before it can have seen. The pools are the fake of the DynamoDB
    adapter; the clock is the simulation's."""
    measured: float | None = None if cold else estimated_sec
    rng = random.Random(seed)
    pools = FakeCapacityPools(Admission.DRAIN_SMOOTHING)
    outcome = _Outcome()
    events: list[_Event] = []
    order = 0

    def push(at: float, kind: str, client: int = 0) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, _Event(at, order, kind, client))

    queue: list[_Task] = []
    free = workers
    now = 0.0
    for _ in range(warm_tasks):  # an earlier, smaller burst: the pool measured its drain
        push(0.0, "submit", -1)
    start = warm_tasks * real_sec / workers + 1
    for client in range(clients):
        push(start + rng.random() * burst_sec, "submit", client)
    while events:
        event = heapq.heappop(events)
        now = event.at
        if event.kind == "submit":
            work = measured if measured is not None else estimated_sec
            admitted, wait = _submit(pools, workers, work, timeout_sec)
            if admitted is not None:
                queue.append(_Task(now, now + timeout_sec, work, admitted, measured is not None))
                outcome.accepted += event.client >= 0
            else:
                outcome.refused += 1
                outcome.refusals_without_retry_after += wait < 1
                if now + wait - start < give_up_sec:
                    push(now + wait * (1 + rng.random()), "submit", event.client)
        elif event.kind == "done":
            free += 1
            measured = measured if measured is not None else real_sec
        while free and queue:
            task = queue.pop(0)
            if now >= task.deadline or too_late_to_finish(
                task.deadline - now, measured if measured is not None else task.work, timeout_sec
            ):
                pools.release("lane", task.work)
                outcome.not_begun += 1
                continue
            pools.start("lane", task.work, EPOCH + timedelta(seconds=now), task.work if task.measured else None)
            free -= 1
            pace = slowdown[1] if now - start >= slowdown[0] else 1.0
            ends = now + real_sec * pace * (0.8 + 0.4 * rng.random())
            push(ends, "done")
            if task.created >= start:
                outcome.record(task, ends, start)
    return outcome


def _submit(pools: FakeCapacityPools, workers: int, work_sec: float, timeout_sec: int) -> tuple[int | None, int]:
    """What submit does for one request: (its estimate, 0) when admitted, (None, Retry-After) when not."""
    pool = Pool("lane", workers, pools.drain("lane"))
    allowed = plan([pool], work_sec, admission_window(timeout_sec, Admission.DEADLINE_SHARE))
    reservation = pools.reserve("lane", work_sec, allowed.limits["lane"])
    if reservation.admitted:
        return estimate([pool], {"lane": reservation.queued_sec}, allowed.run_sec).completion_sec, 0
    return None, retry_after_sec(pool, reservation.queued_sec, allowed.limits["lane"], 900)


def _close(estimates: list[tuple[float, float]]) -> float:
    """The share of estimates within 2x + 5 s of the real time."""
    return sum(abs(guess - real) <= 2 * real + 5 for guess, real in estimates) / len(estimates)


@pytest.mark.parametrize(
    ("estimated_sec", "real_sec", "warm_tasks", "cold"),
    [
        (5.0, 0.3, 0, True),  # a cold stack: the defaults are far too long, until the first run ends
        (0.3, 0.3, 20, False),  # measured runs
        (0.2, 0.3, 20, False),  # runs half as slow again as measured: the drain learns it
    ],
)
def test_a_burst_of_600_with_30_s_deadlines_is_refused_in_time_never_timed_out(
    estimated_sec: float, real_sec: float, warm_tasks: int, cold: bool
) -> None:
    result = simulate(600, 30, estimated_sec, real_sec, warm_tasks=warm_tasks, cold=cold)

    assert result.late == 0 and result.not_begun == 0
    assert result.refused > 0 and result.refusals_without_retry_after == 0
    # The lane stays busy: two workers at 0.3 s finish 200 in 30 s; retries keep them fed.
    assert result.completed_by[30.0] >= 0.85 * 30 * 2 / real_sec
    assert _close(result.estimate_errors) >= 0.9


def test_workers_slowed_down_mid_burst_still_begin_every_task_they_accepted() -> None:
    # Ten seconds into a measured burst the runs take 1.5x longer (the cores are shared with
    # something else): the tasks admitted just before waited at the old pace's estimate, and
    # the deadline's margin is what lets them still start in time.
    result = simulate(600, 30, 0.3, 0.3, warm_tasks=20, slowdown=(10.0, 1.5))

    assert result.late == 0 and result.not_begun == 0
    assert result.refusals_without_retry_after == 0


def test_a_burst_of_2000_with_the_default_deadline_finishes_what_it_accepts() -> None:
    result = simulate(2000, 300, 2.0, 1.0, workers=6, burst_sec=5.0, give_up_sec=600.0, warm_tasks=60)

    assert result.late == 0 and result.not_begun == 0
    assert result.completed == result.accepted
    assert _close(result.estimate_errors) >= 0.9
