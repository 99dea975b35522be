"""The API routes in front of the function are exactly the routes its code serves."""

from __future__ import annotations

import pytest

from exports.config.api import API_VERSION_PREFIX, PUBLIC_PATHS
from infra.api import PROTECTED_ROUTES

pytestmark = pytest.mark.infra


def test_every_v1_route_of_the_handler_has_a_protected_api_route_and_no_more():
    """(The public ones, a schedule's permalink, have a route without the authorizer.)"""
    from functions.submit.handler import app, load_every_route

    load_every_route()  # each group of routes is imported on first use
    served = {
        (method.upper(), path)
        for path, item in app.get_openapi_schema().paths.items()
        for method in ("get", "post", "put", "patch", "delete")
        if getattr(item, method, None) is not None
    }
    routed = {(method.value, path) for path, methods in PROTECTED_ROUTES for method in methods}

    assert routed == {
        (method, path)
        for method, path in served
        if path.startswith(f"{API_VERSION_PREFIX}/") and path not in PUBLIC_PATHS
    }
