"""What the OpenAPI document says each route answers: every real status, its body and headers,
and the request body of each export type this deployment serves.

The routes pass these to Powertools' ``responses=``; :func:`contract_document` then removes what
Powertools adds on its own (a 422 ``HTTPValidationError`` of FastAPI's ``{"detail": [...]}``
shape, which this API never returns: every error is :class:`exports.api.models.ErrorBody`, see
exports/api/http/errors.py) and makes the body of ``POST /v1/exports`` a union on ``export_type``
with one schema per type (:func:`describe_export_types`). 401 and 413 may come from the gateway
itself (the JWT authorizer, the payload limit) in the same shape.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from exports.accepting.requests import ZONE_MARK
from exports.api.models import ErrorBody
from exports.core.config.api import PUBLIC_PATHS
from exports.core.export_type import AnyExportType
from exports.core.task import ExportFormat
from exports.core.zones import accepted_zones
from exports.schedules.mail import RECIPIENT_MARK, recipient_pattern

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
    "no such schedule among the caller's (code SCHEDULE_NOT_FOUND), "
    "or no such export type among those the caller may use (code UNKNOWN_EXPORT_TYPE).",
    409: "The task is not in a state that allows this.",
    413: "The body is larger than the limit (code PAYLOAD_TOO_LARGE).",
    415: "The body is not `application/json` (or `application/*+json`) (code UNSUPPORTED_MEDIA_TYPE).",
    422: "A field, filter or query parameter is invalid (code VALIDATION_ERROR; `field` names it, and `errors` "
    "lists every invalid one when there are several).",
    429: "Try again after `Retry-After` seconds: the exports queued ahead would keep this one from finishing"
    " within its `timeout_sec` (code WOULD_TIME_OUT, with the `estimate` it was refused on), the user has too"
    " many active tasks (QUOTA_EXCEEDED), or the queue is full (BACKLOG_FULL); a new schedule:"
    " SCHEDULE_LIMIT_REACHED, the user has as many as a user may; TENANT_QUOTA_EXCEEDED: the caller's tenant"
    " used a quota of docs/audit.md, which the message names.",
    503: "A dependency is busy or unreachable: try again after `Retry-After` seconds (code SERVICE_UNAVAILABLE).",
}
_RETRY_LATER = (429, 503)


def error(status: int, description: str | None = None) -> dict[str, Any]:
    """The documented error answer ``status`` (``description``: what it means on this route, else
    on every route): the one error shape, and ``Retry-After`` on 429/503."""
    response: dict[str, Any] = {"description": description or _ERRORS[status], "content": {_JSON: {"model": ErrorBody}}}
    if status in _RETRY_LATER:
        response["headers"] = {"Retry-After": retry_after("Seconds to wait before trying again.")}
    return response


def conflict(codes: dict[str, str]) -> tuple[int, str]:
    """A route's ``409``, naming each code it can answer with what it means there (for
    :func:`responses`)."""
    return 409, " ".join([_ERRORS[409], *(f"{code}: {meaning}" for code, meaning in codes.items())])


def responses(success: dict[int, dict[str, Any]], *errors: int | tuple[int, str]) -> dict[int, Any]:
    """A route's ``responses=``: its success answers (Powertools fills in a missing ``content``
    from the route's return type) and its error statuses, each a status or a (status,
    description) of this route; 401 and 503 are possible on every route."""
    described = dict(given if isinstance(given, tuple) else (given, None) for given in errors)
    every = sorted({401, 503, *described})
    return {**success, **{status: error(status, described.get(status)) for status in every}}


_SCHEMAS = "#/components/schemas/"
# Powertools' own validation-error answer and its component schemas: never what this API sends.
_POWERTOOLS_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")


def contract_document(document: str, export_types: Sequence[AnyExportType], mail_domains: Collection[str]) -> str:
    """The OpenAPI document without Powertools' ``HTTPValidationError``/``ValidationError``
    schemas (and any answer still pointing at them), with no ``content`` on answers that have no
    body, no security on the public paths, every schedule recipient limited to ``mail_domains``
    (:func:`_recipients_stated`), and with the request body of ``POST /v1/exports`` of
    ``export_types`` (:func:`describe_export_types`); everything else unchanged."""
    data = json.loads(document)
    _recipients_stated(data, recipient_pattern(mail_domains))
    removed = {_SCHEMAS + name for name in _POWERTOOLS_SCHEMAS}
    for route, path in data.get("paths", {}).items():
        for operation in path.values():
            if route in PUBLIC_PATHS:
                operation["security"] = []  # served without a token (Powertools drops an empty list)
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
    if _zones_referenced(schemas):
        schemas[ZONE_SCHEMA] = {
            "type": "string",
            "enum": accepted_zones(),
            "description": "An IANA time zone name of the tz database, spelled exactly (case matters).",
        }
    describe_export_types(data, export_types)
    return json.dumps(data, ensure_ascii=False)


SUBMIT_PATH = "/v1/exports"
SHARED_REQUEST = "ExportRequest"
SCHEDULES_PATH = "/v1/schedules"
SCHEDULE_REQUEST = "ScheduleRequest"
# The shared schema of every zone name (the tz database's), which each ``timezone`` refers to;
# a model marks such a field with ZONE_MARK.
ZONE_SCHEMA = "TimeZone"
# The bodies made per type: (path of the POST, shared schema, what an example adds to a type's).
_PER_TYPE_BODIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (SUBMIT_PATH, SHARED_REQUEST, {}),
    (SCHEDULES_PATH, SCHEDULE_REQUEST, {"cron": "0 8 * * 1"}),
)
# The day the examples' dates are (a fixed one keeps the committed document stable): any date
# range from it to itself passes every date_ranges rule.
EXAMPLE_DAY = "2026-01-05"
_ALL_FORMATS = frozenset(ExportFormat)
_BODY_DESCRIPTION = (
    "One schema per export type this deployment serves to every caller, told apart by"
    " `export_type`; each has the type's `filters` (the JSON Schema GET /v1/export-types serves) and"
    " its formats, and an example that runs as it is. A type with an access rule (`allow`) is not in"
    " this document, which is served without a token: its callers find it in GET /v1/export-types and"
    " send the same fields (`#/components/schemas/{shared}`) with its `filters_schema`."
)


def _zones_referenced(node: Any) -> bool:
    """Turn each schema marked :data:`ZONE_MARK` into a reference to :data:`ZONE_SCHEMA` (pydantic
    writes no reference to a component of the document's own); whether there was one."""
    found = False
    if isinstance(node, dict):
        if node.pop(ZONE_MARK, False):
            node["$ref"] = _SCHEMAS + ZONE_SCHEMA
            found = True
        for value in node.values():
            found = _zones_referenced(value) or found
    elif isinstance(node, list):
        for item in node:
            found = _zones_referenced(item) or found
    return found


def _recipients_stated(node: Any, pattern: str | None) -> None:
    """Give each schema marked :data:`RECIPIENT_MARK` (a schedule's recipient) the deployment's
    rule as its ``pattern``: an address in one of its mail domains. Without a domain the
    deployment mails its callers' own verified addresses only, which no document served without
    a token can name: the address's shape (``format: email``) is then all it states."""
    if isinstance(node, dict):
        if node.pop(RECIPIENT_MARK, False) and pattern is not None:
            node["pattern"] = pattern
        for value in node.values():
            _recipients_stated(value, pattern)
    elif isinstance(node, list):
        for item in node:
            _recipients_stated(item, pattern)


def describe_export_types(data: dict[str, Any], export_types: Sequence[AnyExportType]) -> None:
    """Make the bodies of ``POST /v1/exports`` and ``POST /v1/schedules`` in ``data`` a ``oneOf``
    of one schema per type, discriminated by ``export_type`` (``ExportRequest.<type>``,
    ``ScheduleRequest.<type>``: the shared fields, ``export_type`` a ``const``, the type's
    formats, ``filters`` a reference to ``Filters.<type>``, its filters' JSON Schema), with an
    example body per type. Without types the bodies stay the shared schemas."""
    if not export_types:
        return
    schemas = data["components"]["schemas"]
    for path, shared_name, example_extra in _PER_TYPE_BODIES:
        shared = schemas[shared_name]
        body = data["paths"][path]["post"]["requestBody"]
        mapping: dict[str, str] = {}
        examples: dict[str, Any] = {}
        for export_type in export_types:
            filters_name = f"Filters.{export_type.name}"
            if filters_name not in schemas:
                schemas[filters_name] = _hoisted(export_type.filters_schema(), filters_name, schemas)
            filters = schemas[filters_name]
            request_name = f"{shared_name}.{export_type.name}"
            schemas[request_name] = _type_request(shared, request_name, export_type, _SCHEMAS + filters_name, filters)
            mapping[export_type.name] = _SCHEMAS + request_name
            example = _example_filters(filters, schemas, EXAMPLE_DAY)
            if example is not None:
                value = {"export_type": export_type.name, "format": export_type.formats[0].value, "filters": example}
                examples[export_type.name] = {"summary": export_type.description, "value": value | example_extra}
        body["description"] = _BODY_DESCRIPTION.format(shared=shared_name)
        media = body["content"][_JSON]
        media["schema"] = {
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "export_type", "mapping": mapping},
        }
        if examples:
            media["examples"] = examples


def _hoisted(schema: dict[str, Any], name: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` moved into the components as ``<name>.<def>`` (a ``#/$defs/``
    reference would point at the document's root once the schema is inside it)."""
    schema = copy.deepcopy(schema)
    definitions = schema.pop("$defs", {})

    def relinked(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: f"{_SCHEMAS}{name}.{value.removeprefix('#/$defs/')}"
                if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/")
                else relinked(value)
                for key, value in node.items()
            }
        return [relinked(item) for item in node] if isinstance(node, list) else node

    for definition, definition_schema in definitions.items():
        schemas[f"{name}.{definition}"] = relinked(definition_schema)
    top: dict[str, Any] = relinked(schema)
    return top


def _type_request(
    shared: dict[str, Any], title: str, export_type: AnyExportType, filters_ref: str, filters: dict[str, Any]
) -> dict[str, Any]:
    """A shared request body for one type: its name as ``export_type``, its formats, its filters."""
    schema = copy.deepcopy(shared)
    schema["title"] = title
    schema["description"] = export_type.description
    properties = schema["properties"]
    # const for JSON Schema 2020-12 validators, a one-value enum for generators that read only
    # enums (openapi-typescript's documented pattern for a discriminated oneOf); the same rule.
    properties["export_type"] = {
        "const": export_type.name,
        "enum": [export_type.name],
        "type": "string",
        "description": "The export type.",
    }
    formats = [fmt.value for fmt in export_type.formats]
    required = ["export_type"]
    if set(export_type.formats) != _ALL_FORMATS:
        described = {"description": properties["format"].get("description", ""), "enum": formats, "type": "string"}
        if ExportFormat.CSV in export_type.formats:
            described["default"] = ExportFormat.CSV.value
        else:
            required.append("format")  # the default, csv, is not one of this type's
        properties["format"] = described
    properties["filters"] = {"$ref": filters_ref, "description": properties["filters"].get("description", "")}
    if filters.get("required"):
        required.append("filters")  # the default, {}, would leave them out
    schema["required"] = [*required, *(name for name in schema.get("required", ()) if name not in required)]
    return schema


class _NoExample(Exception):
    """A value the schema alone does not give (a string that must match a pattern)."""


def example_filters(export_type: AnyExportType, day: str) -> dict[str, Any] | None:
    """Filters of ``export_type`` that pass its rules, made as the OpenAPI document's examples
    are (:func:`_example_filters`), its dates ``day`` (YYYY-MM-DD); None when a required value
    cannot be made up from its schema."""
    schemas: dict[str, Any] = {}
    filters = _hoisted(export_type.filters_schema(), "Filters", schemas)
    return _example_filters(filters, schemas, day)


def _example_filters(filters: dict[str, Any], schemas: dict[str, Any], day: str) -> dict[str, Any] | None:
    """Filters that pass ``filters``: its required parameters only, each its first example, its
    default, its first allowed value or the smallest value its bounds allow (dates ``day``, so
    every date range is one day). None when a required value cannot be made up from the
    schema: no example is better than one that fails."""
    try:
        value = _example(filters, schemas, day)
    except _NoExample:
        return None
    return value if isinstance(value, dict) else None


def _example(schema: dict[str, Any], schemas: dict[str, Any], day: str) -> Any:
    if "$ref" in schema:
        return _example(schemas[schema["$ref"].removeprefix(_SCHEMAS)], schemas, day)
    given = _given_value(schema)
    if given is not None:
        return given
    for branch in schema.get("anyOf", schema.get("oneOf", [])):
        if branch.get("type") != "null":
            return _example(branch, schemas, day)
    kinds = schema.get("type", [])
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    if "object" in kinds:
        properties = schema.get("properties", {})
        return {name: _example(properties.get(name, {}), schemas, day) for name in schema.get("required", [])}
    if "array" in kinds and schema.get("minItems", 0) <= 1:
        return [_example(schema.get("items", {}), schemas, day)]
    return _scalar(schema, kinds, day)


def _given_value(schema: dict[str, Any]) -> Any:
    """A value the schema names: its first example or allowed value, its constant, its default."""
    for word in ("examples", "enum"):
        if schema.get(word):
            return schema[word][0]
    return schema.get("const", schema.get("default"))


def _scalar(schema: dict[str, Any], kinds: set[str], day: str) -> Any:
    # Made-up values by format, unless a bound (x-minimum, x-maximum) gives one.
    by_format = {"date": day, "date-time": f"{day}T00:00:00Z", "decimal": "1"}
    if schema.get("format") in by_format:
        return schema.get("x-minimum", schema.get("x-maximum", by_format[schema["format"]]))
    if kinds & {"integer", "number"}:
        return schema.get("minimum", schema.get("maximum", 1))
    if "boolean" in kinds:
        return False
    if "string" in kinds and "pattern" not in schema:
        return "x" * max(1, schema.get("minLength", 1))
    raise _NoExample


def swagger_page(document: str) -> str:
    """Swagger UI (Powertools' page and the assets it bundles) on ``document`` itself: ``/docs``
    shows exactly what ``/openapi.json`` serves. (Powertools' ``enable_swagger`` would embed a
    document of its own, with the framework's 422 shape and without the export types.)"""
    from aws_lambda_powertools.event_handler.openapi import swagger_ui

    assets = Path(swagger_ui.__file__).parent
    return swagger_ui.generate_swagger_html(
        # Inside a <script>: "</" would end it (Powertools escapes its own document the same way).
        document.replace("</", "<\\/"),
        (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (assets / "swagger-ui.min.css").read_text(encoding="utf-8"),
        "",
        None,
    )
