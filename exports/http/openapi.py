"""What the OpenAPI document says each route answers: every real status, its body and headers.

The routes pass these to Powertools' ``responses=``; :func:`contract_document` then removes what
Powertools adds on its own (a 422 ``HTTPValidationError`` of FastAPI's ``{"detail": [...]}``
shape, which this API never returns: every error is :class:`exports.api_models.ErrorBody`, see
exports/http/errors.py). 401 and 413 may come from the gateway itself (the JWT authorizer, the
payload limit) in the same shape.
"""

from __future__ import annotations

import json
from typing import Any

from exports.api_models import ErrorBody

_JSON = "application/json"
_RETRY_AFTER_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0}


def _header(description: str, schema: dict[str, Any], required: bool) -> dict[str, Any]:
    return {"description": description, "schema": schema, "required": required}


def retry_after(description: str, required: bool = True) -> dict[str, Any]:
    """The ``Retry-After`` header (seconds)."""
    return _header(description, _RETRY_AFTER_SCHEMA, required)


def location(description: str) -> dict[str, Any]:
    """The ``Location`` header (always sent)."""
    return _header(description, {"type": "string", "minLength": 1}, True)


CACHE_CONTROL = _header("How long the answer may be cached.", {"type": "string"}, True)

# Every error answer, by status: what it means on this API.
_ERRORS: dict[int, str] = {
    400: "The body is not one UTF-8 JSON document (code MALFORMED_JSON; a key given twice is named in `field`).",
    401: "No valid bearer token (code UNAUTHORIZED; from the gateway's authorizer or the function).",
    403: "The export type binds a claim the caller's token lacks (code CLAIM_MISSING; nothing is stored).",
    404: "No such task among the caller's (code TASK_NOT_FOUND; another user's task is not found either), "
    "or no such export type among those the caller may use (code UNKNOWN_EXPORT_TYPE).",
    409: "The task is not in a state that allows this (e.g. TASK_NOT_READY, TASK_NOT_CANCELLABLE).",
    413: "The body is larger than the limit (code PAYLOAD_TOO_LARGE).",
    415: "The body is not `application/json` (or `application/*+json`) (code UNSUPPORTED_MEDIA_TYPE).",
    422: "A field, filter or query parameter is invalid (code VALIDATION_ERROR; `field` names it, and `errors` "
    "lists every invalid one when there are several).",
    429: "Too many active tasks, or the queue is full: try again after `Retry-After` seconds.",
    503: "A dependency is busy or unreachable: try again after `Retry-After` seconds (code SERVICE_UNAVAILABLE).",
}
_RETRY_LATER = (429, 503)


def error(status: int) -> dict[str, Any]:
    """The documented error answer ``status``: the one error shape, and ``Retry-After`` on 429/503."""
    response: dict[str, Any] = {"description": _ERRORS[status], "content": {_JSON: {"model": ErrorBody}}}
    if status in _RETRY_LATER:
        response["headers"] = {"Retry-After": retry_after("Seconds to wait before trying again.")}
    return response


def responses(success: dict[int, dict[str, Any]], *errors: int) -> dict[int, Any]:
    """A route's ``responses=``: its success answers (Powertools fills in a missing ``content``
    from the route's return type) and its error statuses; 401 and 503 are possible on every route."""
    every = sorted({401, 503, *errors})
    return {**success, **{status: error(status) for status in every}}


# Powertools' own validation-error answer and its component schemas: never what this API sends.
_POWERTOOLS_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")


def contract_document(document: str) -> str:
    """The OpenAPI document without Powertools' ``HTTPValidationError``/``ValidationError``
    schemas (and any answer still pointing at them), and with no ``content`` on answers that
    have no body; everything else unchanged."""
    data = json.loads(document)
    prefix = "#/components/schemas/"
    removed = {prefix + name for name in _POWERTOOLS_SCHEMAS}
    for path in data.get("paths", {}).values():
        for operation in path.values():
            answers = operation.get("responses", {})
            for status in list(answers):
                contents = answers[status].get("content", {}).values()
                if any(content.get("schema", {}).get("$ref") in removed for content in contents):
                    del answers[status]
                elif answers[status].get("content") == {}:
                    del answers[status]["content"]  # an answer without a body (the download's 302)
    schemas = data.get("components", {}).get("schemas", {})
    for name in _POWERTOOLS_SCHEMAS:
        schemas.pop(name, None)
    return json.dumps(data, ensure_ascii=False)
