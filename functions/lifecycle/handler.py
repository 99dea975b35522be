"""The lifecycle function: what the task's workflow asks for (store its token, expire the task)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools import Logger, Metrics
from pydantic import BaseModel, ConfigDict, Field

from exports.core.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.finishing.dependencies import LifecycleDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()
# The event models are built at the first event, not at import (pydantic's schema build).
_DEFERRED = ConfigDict(defer_build=True)


class WatchRequest(BaseModel):
    """Store the workflow's task token on the task."""

    model_config = _DEFERRED

    action: Literal["watch"]
    task_id: str
    token: str


class ExpireRequest(BaseModel):
    """The deadline passed."""

    model_config = _DEFERRED

    action: Literal["expire"]
    task_id: str


class LifecycleRequest(BaseModel):
    """One of the workflow's requests."""

    model_config = _DEFERRED

    request: Annotated[WatchRequest | ExpireRequest, Field(discriminator="action")]


@cache
def dependencies() -> LifecycleDependencies:
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.core.metrics import PowertoolsMetrics
    from exports.finishing.composition import compose_lifecycle

    return compose_lifecycle(PowertoolsMetrics(metrics))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point; errors propagate so the workflow's Retry sees them."""
    # Imported on first use: the handler's import is the stack's floor and little more (issue 50).
    from exports.core.workflows import task_outcome
    from exports.finishing import lifecycle

    # pydantic directly: Powertools' parser package costs ~0.2 s of import for one model_validate.
    request = LifecycleRequest.model_validate({"request": event}).request
    logger.set_correlation_id(request.task_id)
    logger.append_keys(task_id=request.task_id, action=request.action)
    if isinstance(request, WatchRequest):
        lifecycle.watch(request.task_id, request.token, dependencies())
        return {"status": "WATCHING"}
    task = lifecycle.expire(request.task_id, dependencies())
    return task_outcome(task.status.value, task.notifies_at_end, task.delivers)
