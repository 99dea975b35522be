"""The HTTP API function's resolver, composition and route registry (its entry point,
``functions/submit/handler.py``, is this module's :func:`lambda_handler`): submit exports, read
them, download them, list export types, manage scheduled exports (docs/schedules.md) and
delivery destinations (docs/destinations.md), and read the audit trail (docs/audit.md).

In the shared package, not the function's folder: a Lambda package puts the folder's files at its
root, where a route module could not name the module it registers on. Each group of routes is
a module of ``exports/api/routes`` imported on the first request to its paths
(:data:`ROUTE_MODULES`): a cold start imports the resolver and the routes its request needs, not
the schedules', the audit trail's or the documentation's (issue 50, docs/performance.md). Every
route module registers its routes on :data:`app`; :func:`load_every_route` imports them all (the
OpenAPI document, the route tests).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

import importlib
from collections.abc import Collection, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths

from exports.api.http.envelope import normalised_event, strict_json
from exports.api.http.errors import register_error_handlers
from exports.core.config.api import API_VERSION_PREFIX, DOCS_PATH, OPENAPI_PATH
from exports.core.snapstart import register_hooks
from exports.core.tracing import lazy_tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from exports.accepting.dependencies import ApiDependencies
    from exports.accepting.dynamodb_idempotency import IdempotentCalls
    from exports.api.redelivery import RedeliveryDependencies
    from exports.core.export_type import AnyExportType
    from exports.finishing.destinations.service import DestinationDependencies
    from exports.push.dynamodb_connections import DynamoTickets
    from exports.schedules.dependencies import ScheduleDependencies

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()

app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=strict_json)
register_error_handlers(app)
# This function runs from a SnapStart snapshot on Lambda (infra/function_factory.py).
register_hooks()

# The module of each group of routes, by the first segment of a path under /v1 (the permalink,
# /v1/permalinks/..., is a schedule's) and by the documentation's own paths.
ROUTE_MODULES: Final = {
    "exports": "exports.api.routes.exports",
    "schedules": "exports.api.routes.schedules",
    "permalinks": "exports.api.routes.schedules",
    "audit": "exports.api.routes.audit",
    "destinations": "exports.api.routes.destinations",
    "me": "exports.api.routes.caller",
    "export-types": "exports.api.routes.caller",
    "stream-tickets": "exports.api.routes.caller",
}
DOCUMENTATION_MODULE: Final = "exports.api.routes.docs"


def route_module(path: str) -> str | None:
    """The module that serves ``path``, or None where none does (the resolver answers ``404``)."""
    if path in (OPENAPI_PATH, DOCS_PATH):
        return DOCUMENTATION_MODULE
    version, _, rest = path.lstrip("/").partition("/")
    if f"/{version}" != API_VERSION_PREFIX:
        return None
    return ROUTE_MODULES.get(rest.partition("/")[0])


def load_every_route() -> None:
    """Import every route module: their routes registered on :data:`app`, as for the OpenAPI
    document. Importing a module twice is a no-op (``sys.modules``), so is calling this again."""
    for module in (*ROUTE_MODULES.values(), DOCUMENTATION_MODULE):
        importlib.import_module(module)


@cache
def openapi_settings() -> dict[str, Any]:
    """Title, version and security scheme of the OpenAPI document.

    Built on first use: Powertools' OpenAPI models cost about 0.2 s of import (a third of this
    function's cold start), and only the documentation routes need them, never an API request.
    """
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    from exports.core.task import ExportFormat

    return {
        "title": "exports",
        "version": "1.0.0",
        # From the enum: a new format is named here without anyone remembering to.
        "description": f"Asynchronous data exports ({', '.join(ExportFormat)}): submit, then poll, get called"
        " back or follow pushed events, and download.",
        "security_schemes": {"bearerAuth": HTTPBearer(bearerFormat="JWT")},
        "security": [{"bearerAuth": []}],
    }


def api_document(export_types: "Sequence[AnyExportType]", mail_domains: "Collection[str]") -> str:
    """The OpenAPI document of this API serving ``export_types`` (their request bodies) and
    mailing schedule recipients in ``mail_domains``: every route module imported first, so that
    the document names every route."""
    from exports.api.http.openapi import contract_document

    load_every_route()
    return contract_document(app.get_openapi_json_schema(**openapi_settings()), export_types, mail_domains)


@cache
def dependencies() -> "ApiDependencies":
    """This function's adapters, built on first use from its own variables of the environment
    (the composition and the adapters are imported then, not at the handler's import)."""
    from exports.api.composition import compose_api
    from exports.core.metrics import PowertoolsMetrics

    return compose_api(PowertoolsMetrics(metrics))


@cache
def schedule_dependencies() -> "ScheduleDependencies":
    """The schedules' adapters beside this function's own."""
    from exports.schedules.composition import compose_schedules

    return compose_schedules(dependencies())


@cache
def destination_dependencies() -> "DestinationDependencies":
    """The destinations' adapters beside this function's own."""
    from exports.finishing.destinations.composition import compose_destinations

    return compose_destinations(dependencies())


@cache
def redelivery_dependencies() -> "RedeliveryDependencies":
    """What a delivery retried on request needs: the API's and the destinations' adapters, and
    the redelivery workflow (when the deployment names it)."""
    from exports.api.redelivery import RedeliveryDependencies
    from exports.core.aws.clients import aws_client
    from exports.core.aws.stepfunctions import StepFunctionsRedelivery

    arn = dependencies().settings.redelivery_state_machine_arn
    workflow = StepFunctionsRedelivery(aws_client("stepfunctions"), arn) if arn else None
    return RedeliveryDependencies(dependencies(), destination_dependencies(), workflow)


@cache
def idempotent_calls() -> "IdempotentCalls":
    """The Idempotency-Key store (the tasks table)."""
    from exports.accepting.dynamodb_idempotency import IdempotentCalls
    from exports.core.aws.clients import aws_client

    return IdempotentCalls(aws_client("dynamodb"), dependencies().settings.tasks_table)


@cache
def ticket_store(table: str) -> "DynamoTickets":
    """The stream tickets (the connections table)."""
    from exports.core.aws.clients import aws_client
    from exports.push.dynamodb_connections import DynamoTickets

    return DynamoTickets(aws_client("dynamodb"), table)


@app.route(".+", method="OPTIONS", include_in_schema=False)
def preflight() -> Response[str]:
    """A browser's CORS preflight, which reaches the function through the unauthenticated
    ``OPTIONS /{proxy+}`` route when CORS is on: an empty 204, to which API Gateway adds the
    stage's CORS headers (it ignores the integration's own)."""
    return Response(status_code=204, content_type=content_types.TEXT_PLAIN, body="")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: "LambdaContext") -> dict[str, Any]:
    """Entry point of the API function: the request's routes imported, then resolved."""
    event = normalised_event(event)
    module = route_module(str(event.get("rawPath") or event.get("path") or ""))
    if module is not None:
        importlib.import_module(module)
    return app.resolve(event, context)
