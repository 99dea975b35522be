"""The HTTP API function's entry point: the resolver, its composition and its routes are in
exports/api/ (one module per group of routes, each imported on the first request to its paths);
the names tests and tools reach through this module are these."""

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
