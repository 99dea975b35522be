"""The callback function: one signed delivery attempt per call; the workflow retries it."""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools import Logger, Metrics
from pydantic import BaseModel, ConfigDict, Field

from exports.core.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.finishing.delivery.deliver import DeliveryDependencies
    from exports.finishing.dependencies import CallbackDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()
# The event models are built at the first event, not at import (pydantic's schema build).
_DEFERRED = ConfigDict(defer_build=True)


class DeliverRequest(BaseModel):
    """Send the task's callback once."""

    model_config = _DEFERRED

    action: Literal["deliver"]
    task_id: str


class GiveUpRequest(BaseModel):
    """Retries are spent; ``error`` is what the workflow caught."""

    model_config = _DEFERRED

    action: Literal["give_up"]
    task_id: str
    error: dict[str, Any] | None = None


class DeliverFilesRequest(BaseModel):
    """Deliver the task's file to its pending destinations once (docs/destinations.md): the
    lifecycle's round, or with ``destination_id`` and ``requested_retries`` a retry on request's."""

    model_config = _DEFERRED

    action: Literal["deliver_files"]
    task_id: str
    destination_id: str | None = None
    requested_retries: int = Field(default=0, ge=0)


class GiveUpFilesRequest(BaseModel):
    """The deliveries' retries are spent; ``error`` is what the workflow caught."""

    model_config = _DEFERRED

    action: Literal["give_up_files"]
    task_id: str
    error: dict[str, Any] | None = None
    destination_id: str | None = None
    requested_retries: int = Field(default=0, ge=0)


class CallbackRequest(BaseModel):
    """One of the workflow's requests."""

    model_config = _DEFERRED

    request: Annotated[
        DeliverRequest | GiveUpRequest | DeliverFilesRequest | GiveUpFilesRequest, Field(discriminator="action")
    ]


@cache
def dependencies() -> CallbackDependencies:
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.core.metrics import PowertoolsMetrics
    from exports.finishing.composition import compose_callback

    return compose_callback(PowertoolsMetrics(metrics))


@cache
def delivery_dependencies() -> DeliveryDependencies:
    """The file deliveries' adapters beside this function's own."""
    from exports.finishing.delivery.composition import compose_delivery

    return compose_delivery(dependencies())


def _caught_message(error: dict[str, Any] | None) -> str | None:
    """The message of the error the workflow caught (its ``Cause`` is the function's error JSON)."""
    if not error:
        return None
    cause = str(error.get("Cause") or "")
    try:
        message = json.loads(cause).get("errorMessage")
    except (ValueError, AttributeError):
        message = None
    return str(message or cause or error.get("Error") or "")[:500] or None


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point. ``CallbackRetryable`` and ``DeliveryRetryable`` propagate: the workflow
    retries on their names. Each is counted (``CallbackRetryRaised``) so that the function's
    error alarm pages only on the errors that are not a receiver's or a destination's refusal."""
    try:
        return _handle(event)
    except Exception as error:
        from exports.core.config.callbacks import Callback
        from exports.core.config.destinations import Destinations
        from exports.core.config.metrics import Metric

        if type(error).__name__ in (Callback.RETRYABLE_ERROR, Destinations.DELIVERY_RETRYABLE_ERROR):
            metrics.add_metric(name=Metric.CALLBACK_RETRY_RAISED, unit="Count", value=1)
        raise


def _handle(event: dict[str, Any]) -> dict[str, Any]:
    """One request of the lifecycle workflow: a callback attempt, its giving up, or the files'."""
    # Imported on first use: the handler's import is the stack's floor and little more (issue 50).
    from exports.finishing import callbacks

    # pydantic directly: Powertools' parser package costs ~0.2 s of import for one model_validate.
    request = CallbackRequest.model_validate({"request": event}).request
    logger.set_correlation_id(request.task_id)
    logger.append_keys(task_id=request.task_id, action=request.action)
    if isinstance(request, DeliverFilesRequest | GiveUpFilesRequest):
        return _files(request)
    if isinstance(request, DeliverRequest):
        outcome = callbacks.deliver(request.task_id, dependencies())
        logger.info("callback attempt", extra={"outcome": outcome.value})
        return {"outcome": outcome.value}
    callbacks.give_up(request.task_id, _caught_message(request.error), dependencies())
    return {"outcome": "given_up"}


def _files(request: DeliverFilesRequest | GiveUpFilesRequest) -> dict[str, Any]:
    """The task's file deliveries: ``DeliveryRetryable`` propagates (the workflow retries on it)."""
    from exports.finishing.delivery import deliver

    scope = deliver.Round(request.requested_retries, request.destination_id)
    if isinstance(request, DeliverFilesRequest):
        deliver.deliver_files(request.task_id, delivery_dependencies(), scope)
        return {"outcome": "delivered"}
    deliver.give_up_files(request.task_id, _caught_message(request.error), delivery_dependencies(), scope)
    return {"outcome": "given_up"}
