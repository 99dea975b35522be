"""The caller's routes beside the exports: who is asking, the export types they may use, a push channel ticket.

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

from aws_lambda_powertools.event_handler import Response

from exports.api import app as api
from exports.api.answers import json_response
from exports.api.app import app, tracer
from exports.api_models import (
    CallerView,
    ExportTypeList,
    ExportTypeView,
    StreamTicketView,
)
from exports.config.api import API_VERSION_PREFIX
from exports.http.envelope import (
    caller_of,
)
from exports.http.openapi import (
    responses,
)
from exports.push.model import PushNotAvailable, Viewer
from exports.services import queries
from exports.services.push import issue_ticket

_TICKET_RESPONSES = responses(
    {201: {"description": "A single-use ticket for the push channel, valid `expires_in` seconds."}},
    (404, "This deployment has no push channel: poll instead."),
)
_ME_RESPONSES = responses({200: {"description": "The caller as the token says, and what the types bind from it."}})
_TYPES_RESPONSES = responses({200: {"description": "The export types of this deployment the caller may use."}})
_TYPE_RESPONSES = responses({200: {"description": "The export type."}}, 404)


@app.post(
    f"{API_VERSION_PREFIX}/stream-tickets",
    status_code=201,
    summary="Get a push channel ticket",
    description="A single-use ticket, valid 60 s and bound to the caller, and the URL of the WebSocket push"
    " channel: open it with the subprotocols `exports.v1` and `ticket.<ticket>` (never in the URL), then"
    " subscribe to a task or to all of yours (docs/push.md).",
    tags=["push"],
    responses=_TICKET_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def stream_ticket() -> Response[StreamTicketView]:
    """A ticket of the caller for the push channel; ``404`` where there is none."""
    caller = caller_of(app.current_event)
    deps = api.dependencies()
    url, table = deps.settings.websocket_url, deps.settings.connections_table
    if not (url and table):
        raise PushNotAvailable("this deployment has no push channel: poll GET /v1/exports/{task_id}")
    ticket = issue_ticket(Viewer.of(caller), api.ticket_store(table), url, deps.clock())
    body = StreamTicketView(ticket=ticket.ticket, url=ticket.url, expires_in=ticket.expires_in)
    return json_response(201, body.model_dump(mode="json"), {"Cache-Control": "no-store"})


@app.get(
    f"{API_VERSION_PREFIX}/me",
    summary="Who is asking",
    description="The token's subject and what the export types the caller may use bind from the token"
    " (a tenant id, the groups): a console says who is signed in with it.",
    tags=["caller"],
    responses=_ME_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def get_caller() -> CallerView:
    """The caller's user id and the values the types they may use bind from their token."""
    caller = caller_of(app.current_event)
    return CallerView(user_id=caller.user_id, bound=queries.caller_bindings(caller, api.dependencies()))


@app.get(
    f"{API_VERSION_PREFIX}/export-types",
    summary="What can be exported",
    description="The export types the caller may use, their formats and the JSON Schema of their filters"
    " (`filters_schema`), in declaration order.",
    tags=["export types"],
    responses=_TYPES_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def list_export_types() -> ExportTypeList:
    """The export types the caller may use, their formats and the JSON Schema of their filters."""
    types = queries.export_types(caller_of(app.current_event), api.dependencies())
    return ExportTypeList(items=[ExportTypeView.of(export_type) for export_type in types])


@app.get(
    f"{API_VERSION_PREFIX}/export-types/<name>",
    summary="One export type",
    description="One export type the caller may use; `404` for any other name (a type refused to the caller"
    " looks the same as no type).",
    tags=["export types"],
    responses=_TYPE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def get_export_type(name: str) -> ExportTypeView:
    """One type the caller may use; ``404`` for any other name (a type refused to the caller
    looks the same as no type)."""
    return ExportTypeView.of(queries.export_type(name, caller_of(app.current_event), api.dependencies()))
