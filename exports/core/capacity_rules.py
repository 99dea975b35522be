"""Admission by deadline: a task is accepted only when its wait in the queue plus its own run
should end before its deadline (docs/capacity.md). Pure functions of their inputs.

A *pool* is what a task waits for: its priority lane's workers, and the concurrent exports its
data source allows when the source declares a limit. Each pool counts the work admitted to it
that has not started yet, in the seconds each task's run was estimated at (the per-type and
format averages), and measures how fast its workers take that work up while a backlog waits
(its *drain*: estimated seconds started per wall-clock second). Measuring the drain in the same
seconds as the queue makes the wait right even when every estimate is off by the same factor
(a cold start's defaults, workers slowed by each other): the estimate's bias divides out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

# Seconds; a drain is never measured over less (two workers starting in the same instant).
_MIN_ELAPSED: Final = 0.001
# A pool "has room" below this much queued work (float residue of additions and removals).
_EMPTY_SEC: Final = 0.001
# Starts per worker before a measured drain is trusted, and the pace taken until then.
_ROUNDS_MEASURED: Final = 4
_UNMEASURED_PACE: Final = 0.5


def lane_pool(lane: str) -> str:
    """The pool of a priority lane's workers."""
    return f"lane#{lane}"


def source_pool(source: str) -> str:
    """The pool of a data source's concurrent-export slots."""
    return f"source#{source}"


@dataclass(frozen=True)
class Drain:
    """How fast a pool's workers took up queued work while a backlog waited: means of the
    estimated seconds each start took off the queue and of the wall-clock seconds since the start
    before it, over ``samples`` starts (plain means at first, then exponentially weighted)."""

    work_sec: float
    elapsed_sec: float
    samples: int = 1

    @property
    def rate(self) -> float:
        """Estimated seconds of work started per wall-clock second."""
        return self.work_sec / max(self.elapsed_sec, _MIN_ELAPSED)


def drained(old: Drain | None, work_sec: float, elapsed_sec: float, smoothing: float) -> Drain:
    """Fold in one start that took ``work_sec`` off a queue ``elapsed_sec`` after the start
    before it (the queue held other work in between, so the workers were all busy). The first
    ``1 / smoothing`` starts are averaged plainly: idle workers start together, so the first
    intervals alone say nothing of the drain."""
    elapsed_sec = max(elapsed_sec, _MIN_ELAPSED)
    if old is None:
        return Drain(work_sec, elapsed_sec)
    weight = max(smoothing, 1 / (old.samples + 1))
    return Drain(
        work_sec=weight * work_sec + (1 - weight) * old.work_sec,
        elapsed_sec=weight * elapsed_sec + (1 - weight) * old.elapsed_sec,
        samples=old.samples + 1,
    )


def drain_rate(drain: Drain | None, workers: int) -> float:
    """The pool's measured drain once it spans four rounds of its workers' starts (fewer
    intervals vary too much); before that, its workers each at half an estimated second per
    second: an unmeasured pool is taken to be slower than its estimates rather than faster, since
    a guess too slow only refuses early, one too fast lets in work that cannot finish."""
    if drain is None or drain.samples < _ROUNDS_MEASURED * max(1, workers):
        return max(1, workers) * _UNMEASURED_PACE
    return drain.rate


@dataclass(frozen=True)
class Pool:
    """One pool a task waits for: its name, its workers, and its measured drain."""

    name: str
    workers: int
    drain: Drain | None = None

    @property
    def rate(self) -> float:
        """:func:`drain_rate` of this pool."""
        return drain_rate(self.drain, self.workers)

    def wait_sec(self, queued_sec: float) -> float:
        """Seconds until the work queued ahead (``queued_sec``) has started."""
        return max(0.0, queued_sec) / self.rate


@dataclass(frozen=True)
class Plan:
    """What admission allows a task: for each pool, the most work it may find queued ahead and
    still finish within its window, and its own run."""

    run_sec: float
    limits: dict[str, float]


def admission_window(timeout_sec: int, share: float) -> float:
    """Seconds of a task's deadline admission may plan to use: a share of it, the rest a margin
    for what estimates do not see (an export slower than its average, a retried part)."""
    return timeout_sec * share


def plan(pools: list[Pool], work_sec: float, window_sec: float) -> Plan:
    """The limits of :class:`Plan`: its own run is its estimated work (the type's measured run
    time, which the workers' contention is already in). A task whose own run does not fit the
    window even with nothing ahead may still be admitted into an empty pool: the queue is not
    what would make it late (and its caller asked for that deadline)."""
    limits = {pool.name: max(_EMPTY_SEC, (window_sec - work_sec) * pool.rate) for pool in pools}
    return Plan(run_sec=work_sec, limits=limits)


@dataclass(frozen=True)
class Estimate:
    """When a task should start and end, from now."""

    wait_sec: float
    run_sec: float

    @property
    def completion_sec(self) -> int:
        """Whole seconds until it should be done (at least 1)."""
        return max(1, math.ceil(self.wait_sec + self.run_sec))


def estimate(pools: list[Pool], queued_ahead: dict[str, float], run_sec: float) -> Estimate:
    """The task's estimate with ``queued_ahead`` seconds of work ahead of it in each pool: it
    starts when every pool it needs has started what is ahead of it."""
    wait = max(pool.wait_sec(queued_ahead.get(pool.name, 0.0)) for pool in pools)
    return Estimate(wait_sec=wait, run_sec=run_sec)


def retry_after_sec(pool: Pool, queued_sec: float, limit_sec: float, most: int) -> int:
    """Whole seconds until a pool holding ``queued_sec`` has drained to ``limit_sec`` (when the
    same request would be admitted), at least 1 and at most ``most``."""
    return max(1, min(most, math.ceil((queued_sec - limit_sec) / pool.rate)))


def too_late_to_finish(remaining_sec: float, run_sec: float, timeout_sec: int) -> bool:
    """Whether a task about to start with ``remaining_sec`` left before its deadline should not
    be begun: its run (estimated now) no longer fits. A task whose run never fitted its whole
    deadline is tried all the same (admission let it in on an empty queue)."""
    return run_sec < timeout_sec and remaining_sec < run_sec
