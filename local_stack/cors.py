"""CORS as API Gateway's HTTP API applies it when the CDK app sets ``cors_allowed_origins``, for
the local gateway: the same rules (:class:`exports.core.config.api.Cors`), answered the same way.

API Gateway answers a preflight itself (the function never sees it) and adds the allowed origin
and the exposed headers to every other response of an allowed origin. A preflight it cannot
allow (an origin, a method or a header outside the rules) gets no ``Access-Control-Allow-*``
headers, so the browser refuses the call.
"""

from __future__ import annotations

from collections.abc import Iterable

from werkzeug.datastructures import Headers

from exports.core.config.api import Cors


def is_preflight(method: str, headers: Headers) -> bool:
    """Whether a request is a CORS preflight (OPTIONS with ``Access-Control-Request-Method``)."""
    return method == "OPTIONS" and "Access-Control-Request-Method" in headers


def _allowed_origin(origin: str | None, allowed_origins: Iterable[str]) -> str | None:
    allowed = tuple(allowed_origins)
    if origin is None or not allowed:
        return None
    if "*" in allowed:
        return "*"
    return origin if origin in allowed else None


def preflight_headers(headers: Headers, allowed_origins: Iterable[str]) -> dict[str, str]:
    """The ``Access-Control-*`` headers of the answer to the preflight with ``headers`` (none if
    the rules do not allow what it asks)."""
    origin = _allowed_origin(headers.get("Origin"), allowed_origins)
    method = headers.get("Access-Control-Request-Method", "").upper()
    requested = {name.strip().lower() for name in headers.get("Access-Control-Request-Headers", "").split(",")}
    requested.discard("")
    if origin is None or method not in Cors.ALLOW_METHODS or not requested <= set(Cors.ALLOW_HEADERS):
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": ",".join(Cors.ALLOW_METHODS),
        "Access-Control-Allow-Headers": ",".join(Cors.ALLOW_HEADERS),
        "Access-Control-Max-Age": str(Cors.MAX_AGE_SEC),
    }


def response_headers(headers: Headers, allowed_origins: Iterable[str]) -> dict[str, str]:
    """What an allowed origin's (non-preflight) response carries besides its own headers."""
    origin = _allowed_origin(headers.get("Origin"), allowed_origins)
    if origin is None:
        return {}
    return {"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": ",".join(Cors.EXPOSE_HEADERS)}
