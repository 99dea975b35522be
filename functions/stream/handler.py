"""The WebSocket API's function: ``$connect`` (the credential in ``Sec-WebSocket-Protocol``),
``$disconnect``, and the client's messages (``subscribe``, ``unsubscribe``, ``ping`` and
``$default``). See docs/push.md."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from exports.config.push import Push
from exports.snapstart import register_hooks
from exports.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.services.push import PushDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()
# This function runs from a SnapStart snapshot on Lambda (infra/function_factory.py).
register_hooks()


@cache
def dependencies() -> PushDependencies:
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.composition import PowertoolsMetrics
    from exports.push.composition import compose_push

    return compose_push(PowertoolsMetrics(metrics))


def _header(event: dict[str, Any], name: str) -> str | None:
    headers = {key.lower(): value for key, value in (event.get("headers") or {}).items()}
    return headers.get(name)


@logger.inject_lambda_context(correlation_id_path="requestContext.connectionId", clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point: one route of the WebSocket API."""
    # Imported on first use: the handler's import is the stack's floor and little more (issue 50).
    from exports.push.model import Refused
    from exports.services import push

    context_ = event["requestContext"]
    connection_id, route = context_["connectionId"], context_["routeKey"]
    if route == "$connect":
        protocols = _header(event, "sec-websocket-protocol")
        if push_credential_missing(protocols):
            return {"statusCode": 401}
        try:
            viewer = push.connect(connection_id, protocols, dependencies())
        except Refused as refused:
            logger.info("connection refused", reason=str(refused))
            return {"statusCode": 403}
        logger.append_keys(user_id=viewer.user_id)
        return {"statusCode": 200, "headers": {"Sec-WebSocket-Protocol": Push.SUBPROTOCOL}}
    if route == "$disconnect":
        push.disconnect(connection_id, dependencies())
        return {"statusCode": 200}
    push.receive(connection_id, event.get("body"), dependencies())
    return {"statusCode": 200}


def push_credential_missing(protocols: str | None) -> bool:
    """No ``exports.v1`` with a ticket or a JWT offered: 401 (a credential that fails is 403)."""
    from exports.push.protocol import credential

    return credential(protocols) is None
