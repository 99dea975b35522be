"""The schedule function: EventBridge Scheduler (or local mode's loop) invokes it at each firing
of a schedule with ``{"schedule_id", "scheduled_time", "execution_id"}``; it creates that
firing's task, exactly once however often the firing is delivered, then points the schedule's
one-time Scheduler schedule at its next firing moved out of a DST gap (docs/schedules.md)."""

from __future__ import annotations

from datetime import UTC
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from pydantic import AwareDatetime, BaseModel, ConfigDict

from exports.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.schedules.dependencies import ScheduleDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()


class FiringEvent(BaseModel):
    """Scheduler's target Input: the schedule and the firing's context attributes."""

    # Built at the first firing, not at import (pydantic's schema build).
    model_config = ConfigDict(defer_build=True)

    schedule_id: str
    scheduled_time: AwareDatetime
    execution_id: str | None = None


@cache
def dependencies() -> ScheduleDependencies:
    """This function's adapters (the submit path's and the schedules'), built on first use
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.composition import PowertoolsMetrics, compose_api, compose_schedules
    from exports.config.settings import ScheduleSettings

    return compose_schedules(compose_api(PowertoolsMetrics(metrics), settings_type=ScheduleSettings))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point; a transient fault propagates, so Scheduler retries the firing."""
    from exports.schedules.firing import fire

    firing = FiringEvent.model_validate(event)
    logger.set_correlation_id(firing.schedule_id)
    logger.append_keys(schedule_id=firing.schedule_id, execution_id=firing.execution_id)
    outcome = fire(firing.schedule_id, firing.scheduled_time.astimezone(UTC), dependencies())
    logger.info("schedule fired", extra={"outcome": outcome.outcome.value, "task_id": outcome.task_id})
    return {"outcome": outcome.outcome.value, "task_id": outcome.task_id}
