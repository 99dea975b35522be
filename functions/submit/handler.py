"""Entry point of the HTTP API function. Lambda calls :func:`lambda_handler`; the resolver and
the routes live in exports/api/ (one module per resource, imported on the first request that
needs it). Tests and tools import the names below from here."""

from exports.api.app import (
    api_document,
    app,
    dependencies,
    destination_dependencies,
    lambda_handler,
    load_every_route,
    route_module,
    schedule_dependencies,
)

__all__ = [
    "api_document",
    "app",
    "dependencies",
    "destination_dependencies",
    "lambda_handler",
    "load_every_route",
    "route_module",
    "schedule_dependencies",
]
