"""``estimated_completion_sec`` against reality, on moto with the lanes' real worker loops: a small
and a large export, alone and queued behind others, each estimate compared with how long the task
really took from its submit to COMPLETED.

The orders come from a paced source (:mod:`tests.integration.paced_orders`): an export takes the
time its size says whatever else runs on the machine, so the test can share the cores with the
rest of the suite; what it checks is how the estimate follows size and queue position."""

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.core.config.env import Env
from exports.core.config.queues import LANES
from exports.core.status import TaskStatus
from functions.submit import handler as api
from functions.worker import handler as worker
from local_stack.embedded_aws import REGION, Resources
from local_stack.worker_loop import WorkerLoop
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.polling import poll_until

PACED = Path(__file__).parents[1] / "declarations" / "paced_orders.toml"  # 2,250 orders: 25 a day
MIX = (30, 90, 10, 60, 45)  # days of the exports a burst queues


def window(days: int, offset: int = 0) -> dict[str, Any]:
    last = SEED_DAY - timedelta(days=offset)
    return {"date_from": (last - timedelta(days=days - 1)).isoformat(), "date_to": last.isoformat()}


def submit(filters: dict[str, Any], fresh: bool = False) -> tuple[str, int, float]:
    """Submit; ``fresh``: through a new API instance, which reads the queue depth at once."""
    if fresh:
        api.dependencies.cache_clear()
    body = {"export_type": "orders", "format": "csv", "filters": filters, "priority": 5}
    result = api.lambda_handler(http_event("POST", "/v1/exports", body, user="alice"), FakeContext())
    assert result["statusCode"] == 202, result
    answer = json.loads(result["body"])
    return answer["task_id"], answer["estimated_completion_sec"], time.monotonic()


def wait_done(task_ids: list[str], limit_sec: float = 120) -> dict[str, float]:
    deps, done = worker.dependencies(), dict[str, float]()

    def completed() -> dict[str, float]:
        for task_id in task_ids:
            if task_id not in done and deps.tasks.get(task_id).status is TaskStatus.COMPLETED:
                done[task_id] = time.monotonic()
        return done

    return poll_until(
        completed,
        lambda done: len(done) == len(task_ids),
        timeout_sec=limit_sec,
        interval_sec=0.05,
        fail="exports did not complete",
    )


def close(estimate: int, actual: float, factor: float) -> bool:
    """Within ``factor`` of the real duration either way, or 2 s (estimates are whole seconds;
    the worker polls)."""
    return abs(estimate - actual) <= 2.0 or actual / factor <= estimate <= actual * factor


def test_estimates_follow_size_and_queue_position(
    aws: Resources, atomic_dynamodb: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(Env.EXPORTS_CONFIG, str(PACED))
    sqs = boto3.client("sqs", region_name=REGION)
    lane = next(lane for lane in LANES if lane.name == "normal")
    loop = WorkerLoop(
        sqs, aws.queue_urls[lane.name], worker.lambda_handler, batch_size=1, concurrency=lane.max_concurrency
    )
    loop.start()
    try:
        # Warm-up: runs of several sizes give the type its measured speed and start-up.
        for days in (1, 90, 10, 60, 3):
            task_id, _, _ = submit(window(days, offset=days % 7))
            wait_done([task_id])
        report = []
        for label, days in (("small alone", 2), ("large alone", 90)):
            task_id, estimate, started = submit(window(days, offset=11), fresh=True)
            report.append((label, estimate, wait_done([task_id])[task_id] - started))
        # A burst of the lane's usual mix gives it its measured wait per task ahead; then a small
        # and a large export queue behind another such burst.
        burst = [submit(window(days, offset=40 + n), fresh=True) for n, days in enumerate(MIX)]
        wait_done([task_id for task_id, _, _ in burst])
        ahead = [submit(window(days, offset=20 + n), fresh=True) for n, days in enumerate(MIX[:4])]
        small = submit(window(2, offset=30), fresh=True)
        large = submit(window(90, offset=31), fresh=True)
        finished = wait_done([task_id for task_id, _, _ in [*ahead, small, large]])
        report.append(("small behind 4", small[1], finished[small[0]] - small[2]))
        report.append(("large behind 5", large[1], finished[large[0]] - large[2]))
    finally:
        loop.stop()
    print("\n".join(f"{label}: estimated {estimate} s, took {actual:.1f} s" for label, estimate, actual in report))
    (small_alone, large_alone, small_queued, large_queued) = report
    assert small_alone[1] < large_alone[1]
    assert small_alone[1] < small_queued[1] < large_queued[1]
    # Alone: the type's measured speed. Queued: the lane's measured wait per task ahead, which
    # knows the lane's usual mix but not the sizes of what is queued now (docs/performance.md).
    for (label, estimate, actual), factor in zip(report, (1.5, 1.5, 2, 2), strict=True):
        assert close(estimate, actual, factor), f"{label}: estimated {estimate} s, took {actual:.1f} s"
