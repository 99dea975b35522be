"""The HTTP API function: submit exports, read them, download them, list export types, and
manage scheduled exports (docs/schedules.md).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

import hashlib
from collections.abc import Sequence
from datetime import date
from functools import cache
from typing import Annotated, Any
from urllib.parse import urlencode

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BeforeValidator

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_connections import DynamoTickets
from exports.adapters.dynamodb_idempotency import IdempotentCalls
from exports.api_models import (
    CallerView,
    ExportAccepted,
    ExportRequest,
    ExportTypeList,
    ExportTypeView,
    StreamTicketView,
    TaskList,
    TaskView,
)
from exports.audit import service as audit
from exports.audit.api_models import AuditPage, UsageDay, UsageList
from exports.audit.model import AuditAction
from exports.audit.ports import AuditNotKept
from exports.audit.service import AuditDependencies, TrailQuery
from exports.composition import PowertoolsMetrics, compose_api, compose_destinations, compose_schedules
from exports.config.api import API_VERSION_PREFIX, DOCS_PATH, OPENAPI_PATH, PERMALINK_PATH
from exports.config.audit import Audit
from exports.config.limits import Limits
from exports.config.schedules import Schedules
from exports.destinations import service as destinations
from exports.destinations.api_models import DestinationList, DestinationView, VerificationView
from exports.destinations.model import Destination
from exports.destinations.requests import DestinationPatch, DestinationRequest, HostKeyConfirmation
from exports.destinations.service import DestinationDependencies
from exports.domain.policies import Polling, poll_after_sec
from exports.domain.status import TaskStatus
from exports.domain.task import ExportFormat
from exports.export_types.base import AnyExportType
from exports.http.envelope import (
    caller_id,
    caller_of,
    check_envelope,
    normalised_event,
    refuse_unknown_query,
    strict_json,
    upper_case,
)
from exports.http.errors import register_error_handlers
from exports.http.idempotency import idempotency_key
from exports.http.openapi import (
    CACHE_CONTROL,
    conflict,
    contract_document,
    location,
    responses,
    retry_after,
    swagger_page,
)
from exports.push.model import PushNotAvailable, Viewer
from exports.schedules import latest
from exports.schedules import service as schedules
from exports.schedules.api_models import Permalink, ScheduleList, SchedulePatch, ScheduleRequest, ScheduleView
from exports.schedules.dependencies import ScheduleDependencies
from exports.schedules.model import Schedule
from exports.services import control, queries
from exports.services.dependencies import ApiDependencies
from exports.services.push import issue_ticket
from exports.services.submission import Submission, caller_scope, submit_export
from exports.tracing import lazy_tracer

logger = Logger()
tracer = lazy_tracer()  # X-Ray is imported on the first invocation, not here
metrics = Metrics()

app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=strict_json)
register_error_handlers(app)


@cache
def openapi_settings() -> dict[str, Any]:
    """Title, version and security scheme of the OpenAPI document.

    Built on first use: Powertools' OpenAPI models cost about 0.2 s of import (a third of this
    function's cold start), and only the documentation routes need them, never an API request.
    """
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    return {
        "title": "exports",
        "version": "1.0.0",
        # From the enum: a new format is named here without anyone remembering to.
        "description": f"Asynchronous data exports ({', '.join(ExportFormat)}): submit, then poll, get called"
        " back or follow pushed events, and download.",
        "security_schemes": {"bearerAuth": HTTPBearer(bearerFormat="JWT")},
        "security": [{"bearerAuth": []}],
    }


@cache
def dependencies() -> ApiDependencies:
    """This function's adapters, built on first use from its own variables of the environment."""
    return compose_api(PowertoolsMetrics(metrics))


@cache
def schedule_dependencies() -> ScheduleDependencies:
    """The schedules' adapters beside this function's own."""
    return compose_schedules(dependencies())


@cache
def destination_dependencies() -> DestinationDependencies:
    """The destinations' adapters beside this function's own."""
    return compose_destinations(dependencies())


@cache
def idempotent_calls() -> IdempotentCalls:
    """The Idempotency-Key store (the tasks table)."""
    return IdempotentCalls(aws_client("dynamodb"), dependencies().settings.tasks_table)


@cache
def ticket_store(table: str) -> DynamoTickets:
    """The stream tickets (the connections table)."""
    return DynamoTickets(aws_client("dynamodb"), table)


# The answers of each route as the OpenAPI document states them (exports/http/openapi.py).
_ACCEPTED = {
    202: {
        "description": "Accepted: the task (PENDING, or the identical active task when deduplicated).",
        "headers": {
            "Location": location("The task's status URL (as `status_url`)."),
            "Retry-After": retry_after("Seconds to wait before the first poll."),
        },
    }
}
_SUBMIT_RESPONSES = responses(
    _ACCEPTED,
    400,
    403,
    conflict({"CONFLICT": "a request with the same Idempotency-Key is still in progress; try again shortly."}),
    413,
    415,
    422,
    429,
)
_GET_RESPONSES = responses(
    {
        200: {
            "description": "The task; once COMPLETED with a freshly presigned `download_url`.",
            "headers": {
                "Retry-After": retry_after("While PENDING or RUNNING: seconds until the next poll.", required=False),
                "Cache-Control": CACHE_CONTROL,
            },
        }
    },
    404,
)
_CANCEL_RESPONSES = responses(
    {200: {"description": "The task, CANCELLED."}},
    404,
    conflict(
        {
            "TASK_NOT_CANCELLABLE": "the task has ended already.",
            "CONFLICT": "the task kept changing while it was being cancelled; try again.",
        }
    ),
)
_RETRY_RESPONSES = responses(
    _ACCEPTED,
    403,
    404,
    conflict({"TASK_NOT_RETRYABLE": "only a FAILED, TIMEOUT or CANCELLED task is submitted again."}),
    422,
    429,
)
_LIST_RESPONSES = responses({200: {"description": "A page of the caller's tasks, newest first."}}, 422)
_DOWNLOAD_RESPONSES = responses(
    {
        302: {
            "description": "Redirect to a short-lived presigned link to the file (no body).",
            "headers": {"Location": location("The presigned link."), "Cache-Control": CACHE_CONTROL},
            "content": {},
        }
    },
    404,
    conflict({"TASK_NOT_READY": "the task has not COMPLETED, so there is no file (yet)."}),
)
_TICKET_RESPONSES = responses(
    {201: {"description": "A single-use ticket for the push channel, valid `expires_in` seconds."}},
    (404, "This deployment has no push channel: poll instead."),
)
_LIST_QUERY = frozenset({"limit", "status", "next_token", "schedule_id"})
_ME_RESPONSES = responses({200: {"description": "The caller as the token says, and what the types bind from it."}})
_SCHEDULE_LIST_QUERY = frozenset({"limit", "next_token"})
_SCHEDULE_CREATE_RESPONSES = responses(
    {
        201: {
            "description": "The schedule, ACTIVE, with its next runs.",
            "headers": {"Location": location("The schedule's URL.")},
        }
    },
    400,
    403,
    conflict({"CONFLICT": "a request with the same Idempotency-Key is still in progress; try again shortly."}),
    413,
    415,
    422,
    (
        429,
        "The caller has as many schedules as a user may have (code SCHEDULE_LIMIT_REACHED), or their tenant as many"
        " as its quota allows (code TENANT_QUOTA_EXCEEDED).",
    ),
)
_SCHEDULE_GET_RESPONSES = responses({200: {"description": "The schedule, with its next runs."}}, 404)
_SCHEDULE_LIST_RESPONSES = responses({200: {"description": "A page of the caller's schedules, newest first."}}, 422)
_SCHEDULE_PATCH_RESPONSES = responses({200: {"description": "The schedule as changed."}}, 400, 403, 404, 413, 415, 422)
_SCHEDULE_DELETE_RESPONSES = responses({204: {"description": "Deleted (its runs stay, as tasks).", "content": {}}}, 404)
_SCHEDULE_RUN_RESPONSES = responses(_ACCEPTED, 403, 404, 422, 429)
_LATEST_RESPONSES = responses(
    {
        302: {
            "description": "Redirect to a freshly presigned link to the newest COMPLETED run's file (no body).",
            "headers": {"Location": location("The presigned link."), "Cache-Control": CACHE_CONTROL},
            "content": {},
        }
    },
    (404, "No such schedule of yours (SCHEDULE_NOT_FOUND), or no COMPLETED run's file kept (NO_LATEST_FILE)."),
)
_PERMALINK_GET_RESPONSES = responses(
    {302: _LATEST_RESPONSES[302]},
    (404, "A wrong, rotated or revoked key, or no such schedule (SCHEDULE_NOT_FOUND); no file (NO_LATEST_FILE)."),
    (422, "No `key` in the query string."),
)
_PERMALINK_CREATE_RESPONSES = responses(
    {201: {"description": "The new permalink, shown once (the previous key stops working)."}}, 404
)
_PERMALINK_DELETE_RESPONSES = responses({204: {"description": "Revoked: its key stops working.", "content": {}}}, 404)
_TYPES_RESPONSES = responses({200: {"description": "The export types of this deployment the caller may use."}})
_TYPE_RESPONSES = responses({200: {"description": "The export type."}}, 404)


def _json(status: int, body: Any, headers: dict[str, str]) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


@app.post(
    f"{API_VERSION_PREFIX}/exports",
    summary="Submit an export",
    description="Validates the body (the export type validates its own `filters`), stores the task as PENDING"
    " and queues it; answers at once with the task id. An identical active export of the same user is"
    " answered with that task (`deduplicated`). With `Idempotency-Key`, the same key and body within"
    " 24 hours replay the first answer (`Idempotent-Replayed: true`).",
    tags=["exports"],
    responses=_SUBMIT_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def submit(request: Annotated[ExportRequest, Body()]) -> Response[ExportAccepted]:
    """Validate, store as PENDING and queue; answers at once with the task id."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    key = idempotency_key(app.current_event.headers)

    def accept() -> dict[str, Any]:
        return _accepted(submit_export(request.spec(), caller, dependencies())).model_dump(mode="json")

    if key is None:
        return _answer(accept())
    scope = caller_scope(request.export_type, caller, dependencies())
    body = request.idempotency_body()
    answer, replayed = idempotent_calls().replay_or_call(caller.user_id, key, body, accept, scope=scope)
    return _answer(answer, {"Idempotent-Replayed": "true"} if replayed else {})


def _accepted(submission: Submission) -> ExportAccepted:
    task = submission.task
    logger.append_keys(task_id=task.task_id)
    return ExportAccepted(
        task_id=task.task_id,
        status=task.status,
        created_at=task.created_at,
        estimated_completion_sec=submission.estimated_completion_sec,
        status_url=f"{API_VERSION_PREFIX}/exports/{task.task_id}",
        deduplicated=submission.deduplicated,
    )


def _answer(accepted: dict[str, Any], headers: dict[str, str] | None = None) -> Response[ExportAccepted]:
    return _json(
        202,
        accepted,
        {"Location": accepted["status_url"], "Retry-After": str(Polling.MIN_DELAY_SEC), **(headers or {})},
    )


@app.get(
    f"{API_VERSION_PREFIX}/exports/<task_id>",
    summary="Get an export task",
    description="The caller's task: status, progress, rows, timestamps, error; once COMPLETED a freshly presigned"
    " `download_url`. Another user's task is not found. Poll after `Retry-After` seconds while it runs.",
    tags=["exports"],
    responses=_GET_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def get_export(task_id: str) -> Response[TaskView]:
    """The task; once COMPLETED with a freshly presigned download link."""
    deps = dependencies()
    user_id = caller_id(app.current_event)
    details = queries.task_details(task_id, user_id, deps)
    task = details.task
    if details.download_expires_at is not None and deps.audit is not None:
        audit.record_link(task, user_id, _request_id(), details.download_expires_at, False, deps.audit)
    if task.status in (TaskStatus.PENDING, TaskStatus.RUNNING):
        retry_after = poll_after_sec(task.created_at, deps.clock())
        headers = {"Retry-After": str(retry_after), "Cache-Control": "no-store"}
    else:
        headers = {"Cache-Control": f"private, max-age={Polling.TERMINAL_MAX_AGE_SEC}"}
    return _json(200, TaskView.of(task, details.download_url, details.download_expires_at), headers)


@app.post(
    f"{API_VERSION_PREFIX}/exports/<task_id>/cancel",
    summary="Cancel an export",
    description="Ends a PENDING or RUNNING task as CANCELLED: a running worker stops at its next progress write"
    " and leaves no file.",
    tags=["exports"],
    responses=_CANCEL_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def cancel(task_id: str) -> TaskView:
    """CANCELLED from PENDING or RUNNING; ``409`` once the task has ended."""
    logger.append_keys(task_id=task_id)
    return TaskView.of(control.cancel_export(task_id, caller_id(app.current_event), dependencies()))


@app.post(
    f"{API_VERSION_PREFIX}/exports/<task_id>/retry",
    status_code=202,
    summary="Retry an export",
    description="Submits a FAILED, TIMEOUT or CANCELLED task again as a new task with the same parameters"
    " (`retry_of` points back), as a new submission by the caller.",
    tags=["exports"],
    responses=_RETRY_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def retry(task_id: str) -> Response[ExportAccepted]:
    """A new task with the same parameters for a FAILED, TIMEOUT or CANCELLED one; ``409`` otherwise."""
    submission = control.retry_export(task_id, caller_of(app.current_event), dependencies())
    return _answer(_accepted(submission).model_dump(mode="json"))


@app.get(
    f"{API_VERSION_PREFIX}/exports",
    summary="List your export tasks",
    description="The caller's tasks, newest first, a page at a time (`next_token` from the previous page);"
    " `status` filters by status, in any case; `schedule_id` lists a schedule's runs (yours only).",
    tags=["exports"],
    responses=_LIST_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def list_exports(
    limit: Annotated[int, Query(ge=1, le=Limits.LIST_PAGE_MAX)] = Limits.LIST_PAGE_DEFAULT,
    status: Annotated[TaskStatus | None, BeforeValidator(upper_case), Query(description="In any case.")] = None,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
    schedule_id: Annotated[
        str | None, Query(max_length=64, description="Only the runs of this schedule of yours.")
    ] = None,
) -> TaskList:
    """The caller's tasks, newest first; ``422`` for a query parameter it does not know."""
    refuse_unknown_query(app.current_event, _LIST_QUERY)
    user_id = caller_id(app.current_event)
    page = queries.list_tasks(user_id, dependencies(), limit, status, next_token, schedule_id)
    return TaskList(items=[TaskView.of(task) for task in page.tasks], next_token=page.cursor)


@app.get(
    f"{API_VERSION_PREFIX}/exports/<task_id>/download",
    summary="Download the file",
    description="A `302` to a short-lived presigned link to the COMPLETED task's file, minted on each request;"
    " the bearer token is not sent to the file store.",
    tags=["exports"],
    responses=_DOWNLOAD_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def download(task_id: str) -> Response[str]:
    """``302`` to a fresh presigned link; ``409`` unless the task is COMPLETED."""
    deps = dependencies()
    user_id = caller_id(app.current_event)
    task = queries.owned_task(task_id, user_id, deps)
    url, expires_at = queries.download_link(task, deps)
    if deps.audit is not None:
        audit.record_link(task, user_id, _request_id(), expires_at, True, deps.audit)
    return Response(status_code=302, headers={"Location": url, "Cache-Control": "no-store"}, body="")


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
    deps = dependencies()
    url, table = deps.settings.websocket_url, deps.settings.connections_table
    if not (url and table):
        raise PushNotAvailable("this deployment has no push channel: poll GET /v1/exports/{task_id}")
    ticket = issue_ticket(Viewer.of(caller), ticket_store(table), url, deps.clock())
    body = StreamTicketView(ticket=ticket.ticket, url=ticket.url, expires_in=ticket.expires_in)
    return _json(201, body.model_dump(mode="json"), {"Cache-Control": "no-store"})


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
    return CallerView(user_id=caller.user_id, bound=queries.caller_bindings(caller, dependencies()))


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
    types = queries.export_types(caller_of(app.current_event), dependencies())
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
    return ExportTypeView.of(queries.export_type(name, caller_of(app.current_event), dependencies()))


def _schedule_view(schedule: Schedule) -> ScheduleView:
    deps = schedule_dependencies()
    runs = schedules.next_runs(schedule, deps.api.clock(), Schedules.NEXT_RUNS_SHOWN)
    logger.append_keys(schedule_id=schedule.schedule_id)
    return ScheduleView.of(schedule, runs)


def _schedule_url(schedule_id: str) -> str:
    return f"{API_VERSION_PREFIX}/schedules/{schedule_id}"


@app.post(
    f"{API_VERSION_PREFIX}/schedules",
    summary="Schedule an export",
    description="An export (the body of POST /v1/exports) run at every firing of `cron` (5 fields) or `every`"
    " in `timezone`; each firing creates an ordinary task (GET /v1/exports?schedule_id=). Window parameters may"
    " take relative values (`previous_week`, ...). With `Idempotency-Key`, the same key and body within 24 hours"
    " replay the first answer.",
    tags=["schedules"],
    responses=_SCHEDULE_CREATE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def create_schedule(request: Annotated[ScheduleRequest, Body()]) -> Response[ScheduleView]:
    """Validate and store the schedule; ``201`` with its next runs."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    key = idempotency_key(app.current_event.headers)

    def create() -> dict[str, Any]:
        audit_deps = dependencies().audit
        if audit_deps is not None:
            audit.check_schedule_quota(audit_deps.tenancy.tenant_of(caller), audit_deps)
        schedule = schedules.create_schedule(request.schedule_spec(), caller, schedule_dependencies())
        _record_schedule(AuditAction.SCHEDULE_CREATED, schedule)
        return _schedule_view(schedule).model_dump(mode="json")

    headers: dict[str, str] = {}
    if key is None:
        answer = create()
    else:
        # Scoped apart from the exports' keys: the same key may create an export and a schedule.
        scope = "schedule:" + caller_scope(request.export_type, caller, dependencies())
        body = request.model_dump(mode="json")
        answer, replayed = idempotent_calls().replay_or_call(caller.user_id, key, body, create, scope=scope)
        headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return _json(201, answer, {"Location": _schedule_url(answer["schedule_id"]), **headers})


@app.get(
    f"{API_VERSION_PREFIX}/schedules",
    summary="List your schedules",
    description="The caller's schedules, newest first, a page at a time (`next_token` from the previous page).",
    tags=["schedules"],
    responses=_SCHEDULE_LIST_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def list_schedules(
    limit: Annotated[int, Query(ge=1, le=Limits.LIST_PAGE_MAX)] = Limits.LIST_PAGE_DEFAULT,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
) -> ScheduleList:
    """The caller's schedules, newest first; ``422`` for a query parameter it does not know."""
    refuse_unknown_query(app.current_event, _SCHEDULE_LIST_QUERY)
    page = schedules.list_schedules(caller_id(app.current_event), schedule_dependencies(), limit, next_token)
    return ScheduleList(items=[_schedule_view(schedule) for schedule in page.schedules], next_token=page.cursor)


@app.get(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>",
    summary="Get a schedule",
    description="The caller's schedule with its next runs, last run and failures; another user's is not found.",
    tags=["schedules"],
    responses=_SCHEDULE_GET_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def get_schedule(schedule_id: str) -> ScheduleView:
    """The caller's schedule; ``404`` for any other."""
    return _schedule_view(schedules.owned_schedule(schedule_id, caller_id(app.current_event), schedule_dependencies()))


@app.patch(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>",
    summary="Change, pause or resume a schedule",
    description="Changes the fields given, validated like a create; `state` PAUSED pauses, ACTIVE resumes"
    " (clearing the pause reason and the failures).",
    tags=["schedules"],
    responses=_SCHEDULE_PATCH_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def patch_schedule(schedule_id: str, changes: Annotated[SchedulePatch, Body()]) -> ScheduleView:
    """The schedule as changed."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    changed = schedules.update_schedule(schedule_id, changes.changes(), caller, schedule_dependencies())
    _record_schedule(AuditAction.SCHEDULE_CHANGED, changed)
    return _schedule_view(changed)


@app.delete(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>",
    summary="Delete a schedule",
    description="Deletes the schedule (its Scheduler schedule too); its runs stay, as tasks.",
    tags=["schedules"],
    responses=_SCHEDULE_DELETE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def delete_schedule(schedule_id: str) -> Response[str]:
    """``204``; ``404`` for another user's."""
    deps = schedule_dependencies()
    schedule = schedules.owned_schedule(schedule_id, caller_id(app.current_event), deps)
    schedules.delete_schedule(schedule_id, schedule.user_id, deps)
    _record_schedule(AuditAction.SCHEDULE_DELETED, schedule)
    return Response(status_code=204, body="")


@app.post(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>/run",
    status_code=202,
    summary="Run a schedule now",
    description="One run now, as POST /v1/exports with the schedule's export (its window resolved now), tagged"
    " with the schedule.",
    tags=["schedules"],
    responses=_SCHEDULE_RUN_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def run_schedule(schedule_id: str) -> Response[ExportAccepted]:
    """``202`` with the run's task."""
    submission = schedules.run_now(schedule_id, caller_of(app.current_event), schedule_dependencies())
    return _answer(_accepted(submission).model_dump(mode="json"))


def _redirect(url: str) -> Response[str]:
    return Response(status_code=302, headers={"Location": url, "Cache-Control": "no-store"}, body="")


@app.get(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>/latest",
    summary="Download a schedule's latest file",
    description="Redirects to a freshly presigned link to the file of the schedule's newest COMPLETED run (an empty"
    " run it skipped has none). The bearer token is not sent to the file store.",
    tags=["schedules"],
    responses=_LATEST_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def schedule_latest(schedule_id: str) -> Response[str]:
    """``302`` to the latest file; ``404`` for another user's schedule or no file."""
    return _redirect(latest.owner_latest(schedule_id, caller_id(app.current_event), schedule_dependencies()))


@app.post(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>/permalink",
    status_code=201,
    summary="Turn on or rotate a schedule's secret permalink",
    description="A URL that gives the latest file without a token, for tools that cannot send one (a spreadsheet's"
    " IMPORTDATA). Anyone who has it gets the file: keep it like a password. Calling again rotates the key (the"
    " previous one stops working); DELETE revokes it.",
    tags=["schedules"],
    responses=_PERMALINK_CREATE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def create_permalink(schedule_id: str) -> Response[Permalink]:
    """``201`` with the permalink, shown once."""
    key = latest.mint_permalink(schedule_id, caller_id(app.current_event), schedule_dependencies())
    event = app.current_event
    path = PERMALINK_PATH.format(schedule_id=schedule_id)
    scheme = event.headers.get("x-forwarded-proto") or "https"
    url = f"{scheme}://{event.request_context.domain_name}{path}?{urlencode({'key': key})}"
    return _json(201, Permalink(url=url, key=key).model_dump(mode="json"), {})


@app.delete(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>/permalink",
    summary="Revoke a schedule's secret permalink",
    description="Its key stops working at once.",
    tags=["schedules"],
    responses=_PERMALINK_DELETE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def delete_permalink(schedule_id: str) -> Response[str]:
    """``204``; ``404`` for another user's schedule."""
    latest.revoke_permalink(schedule_id, caller_id(app.current_event), schedule_dependencies())
    return Response(status_code=204, body="")


@app.get(
    PERMALINK_PATH.replace("{schedule_id}", "<schedule_id>"),
    summary="A schedule's latest file through its permalink",
    description="Without a token: the permalink's `key` is the credential. Redirects as GET"
    " /v1/schedules/{id}/latest does.",
    tags=["schedules"],
    responses=_PERMALINK_GET_RESPONSES,
    security=[],
)
@tracer.capture_method(capture_response=False)
def permalink(schedule_id: str, key: Annotated[str, Query(min_length=1, max_length=200)]) -> Response[str]:
    """``302`` to the latest file for the right key; ``404`` otherwise."""
    return _redirect(latest.permalink_latest(schedule_id, key, schedule_dependencies()))


_DESTINATION_LIST_QUERY = frozenset({"limit", "next_token"})
_NOT_MANAGER = (
    403,
    "The caller's token has no tenant (CLAIM_MISSING), or they may not manage destinations (NOT_DESTINATION_MANAGER).",
)
_DESTINATION_CREATE_RESPONSES = responses(
    {
        201: {
            "description": "The destination; for SFTP key authentication with the public key to install (shown this"
            " once); for S3 with the trust and permissions policies of the role.",
            "headers": {"Location": location("The destination's URL.")},
        }
    },
    400,
    _NOT_MANAGER,
    conflict({"CONFLICT": "a request with the same Idempotency-Key is still in progress; try again shortly."}),
    413,
    415,
    422,
    (429, "The tenant has as many destinations as it may have (code DESTINATION_LIMIT_REACHED)."),
)
_DESTINATION_LIST_RESPONSES = responses(
    {200: {"description": "A page of the tenant's destinations the caller may use (a manager: all), newest first."}},
    (403, "The caller's token has no tenant (code CLAIM_MISSING)."),
    422,
)
_DESTINATION_GET_RESPONSES = responses(
    {200: {"description": "The destination."}}, (403, "The caller's token has no tenant (code CLAIM_MISSING)."), 404
)
_DESTINATION_PATCH_RESPONSES = responses(
    {200: {"description": "The destination as changed."}},
    400,
    _NOT_MANAGER,
    404,
    conflict({"CONFLICT": "the destination changed meanwhile; read it again."}),
    413,
    415,
    422,
)
_DESTINATION_DELETE_RESPONSES = responses(
    {204: {"description": "Deleted, with its secret.", "content": {}}}, _NOT_MANAGER, 404
)
_DESTINATION_CONFIRM_RESPONSES = responses(
    {200: {"description": "The destination, its host key pinned, ACTIVE."}},
    400,
    _NOT_MANAGER,
    404,
    conflict({"HOST_KEY_MISMATCH": "not the fingerprint shown, or no fetched host key waits for confirmation."}),
    413,
    415,
    422,
)
_DESTINATION_VERIFY_RESPONSES = responses(
    {200: {"description": "What the probe found: `ok`, or the failed step and what to do about it."}},
    _NOT_MANAGER,
    404,
    conflict({"HOST_KEY_UNCONFIRMED": "confirm the fetched host key first."}),
)


def _destination_url(destination_id: str) -> str:
    return f"{API_VERSION_PREFIX}/destinations/{destination_id}"


def _destination_view(destination: Destination, public_key: str | None = None) -> DestinationView:
    return DestinationView.of(destination, destination_dependencies().principal_arn, public_key)


@app.post(
    f"{API_VERSION_PREFIX}/destinations",
    summary="Create a delivery destination",
    description="Your tenant's S3 bucket (through a role in your account that trusts ours with the ExternalId the"
    " answer shows) or SFTP server (its host key pinned: give `host_key_fingerprint`, or leave it out to have it"
    " fetched and confirm it with POST /v1/destinations/{id}/confirm). For the tenant's destination managers."
    " With `Idempotency-Key`, the same key and body within 24 hours replay the first answer.",
    tags=["destinations"],
    responses=_DESTINATION_CREATE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def create_destination(request: Annotated[DestinationRequest, Body()]) -> Response[DestinationView]:
    """``201`` with the destination (and, once, the public key to install)."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    key = idempotency_key(app.current_event.headers)

    def create() -> dict[str, Any]:
        created = destinations.create_destination(request, caller, destination_dependencies())
        logger.info("destination created", extra={"destination_id": created.destination.destination_id})
        _record_destination(AuditAction.DESTINATION_CREATED, created.destination)
        return _destination_view(created.destination, created.public_key).model_dump(mode="json")

    headers: dict[str, str] = {}
    if key is None:
        answer = create()
    else:
        # The body's secrets take part in the comparison only as their digest (exports.http.idempotency).
        body = {"destination": request.model_dump(mode="json"), "secrets": _secret_digest(request)}
        answer, replayed = idempotent_calls().replay_or_call(caller.user_id, key, body, create, scope="destination")
        headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return _json(201, answer, {"Location": _destination_url(answer["destination_id"]), **headers})


def _secret_digest(request: DestinationRequest) -> str:
    """A digest of the request's secrets: a replay with another password is another request."""
    target = request.target
    password = getattr(target, "password", None)
    zip_password = request.encryption.zip_password
    plain = "\0".join(value.get_secret_value() if value else "" for value in (password, zip_password))
    return hashlib.sha256(plain.encode()).hexdigest()


@app.get(
    f"{API_VERSION_PREFIX}/destinations",
    summary="List your tenant's destinations",
    description="The destinations of the caller's tenant they may use (a manager: all), newest first, a page at a"
    " time (`next_token` from the previous page).",
    tags=["destinations"],
    responses=_DESTINATION_LIST_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def list_destinations(
    limit: Annotated[int, Query(ge=1, le=Limits.LIST_PAGE_MAX)] = Limits.LIST_PAGE_DEFAULT,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
) -> DestinationList:
    """A page of the tenant's destinations."""
    refuse_unknown_query(app.current_event, _DESTINATION_LIST_QUERY)
    caller = caller_of(app.current_event)
    page = destinations.list_destinations(caller, destination_dependencies(), limit, next_token)
    return DestinationList(items=[_destination_view(d) for d in page.destinations], next_token=page.cursor)


@app.get(
    f"{API_VERSION_PREFIX}/destinations/<destination_id>",
    summary="Get a destination",
    description="One of your tenant's destinations you may use; another tenant's is not found.",
    tags=["destinations"],
    responses=_DESTINATION_GET_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def get_destination(destination_id: str) -> DestinationView:
    """The destination; ``404`` for any other tenant's."""
    caller = caller_of(app.current_event)
    return _destination_view(destinations.visible_destination(destination_id, caller, destination_dependencies()))


@app.patch(
    f"{API_VERSION_PREFIX}/destinations/<destination_id>",
    summary="Change a destination",
    description="Changes the fields given: `name`, `use`, `encryption`, an S3 `prefix`, an SFTP `path`, `password`"
    " or `host_key_fingerprint` (the server's key rotated on purpose). Where files go (kind, host, bucket, role)"
    " is another destination.",
    tags=["destinations"],
    responses=_DESTINATION_PATCH_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def patch_destination(destination_id: str, changes: Annotated[DestinationPatch, Body()]) -> DestinationView:
    """The destination as changed."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    changed = destinations.update_destination(destination_id, changes, caller, destination_dependencies())
    _record_destination(AuditAction.DESTINATION_CHANGED, changed)
    return _destination_view(changed)


@app.delete(
    f"{API_VERSION_PREFIX}/destinations/<destination_id>",
    summary="Delete a destination",
    description="Deletes the destination and its secret (recoverable by an operator for 7 days).",
    tags=["destinations"],
    responses=_DESTINATION_DELETE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def delete_destination(destination_id: str) -> Response[str]:
    """``204``; ``404`` for another tenant's."""
    deleted = destinations.delete_destination(destination_id, caller_of(app.current_event), destination_dependencies())
    _record_destination(AuditAction.DESTINATION_DELETED, deleted)
    return Response(status_code=204, body="")


@app.post(
    f"{API_VERSION_PREFIX}/destinations/<destination_id>/confirm",
    summary="Confirm an SFTP destination's host key",
    description="Pins the host key the service fetched when you send back the fingerprint it showed (compare it"
    " with the server's own `ssh-keygen -lf`); any other fingerprint is refused.",
    tags=["destinations"],
    responses=_DESTINATION_CONFIRM_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def confirm_destination(destination_id: str, confirmation: Annotated[HostKeyConfirmation, Body()]) -> DestinationView:
    """The destination, ACTIVE."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    fingerprint = confirmation.host_key_fingerprint
    confirmed = destinations.confirm_destination(destination_id, fingerprint, caller, destination_dependencies())
    _record_destination(AuditAction.DESTINATION_CHANGED, confirmed)
    return _destination_view(confirmed)


@app.post(
    f"{API_VERSION_PREFIX}/destinations/<destination_id>/verify",
    summary="Verify a destination",
    description="Writes a small probe file to the destination and removes it; answers whether it worked, or which"
    " step failed (DNS, ADDRESS, TCP, HOST_KEY, AUTH, PERMISSION, PATH) and what to do about it.",
    tags=["destinations"],
    responses=_DESTINATION_VERIFY_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def verify_destination(destination_id: str) -> VerificationView:
    """What the probe found."""
    caller = caller_of(app.current_event)
    verification = destinations.verify_destination(destination_id, caller, destination_dependencies())
    logger.info("destination verified", extra={"destination_id": destination_id, "ok": verification.ok})
    report = VerificationView.of(verification)
    detail = {"verification": report.model_dump(mode="json")}
    _record_destination(AuditAction.DESTINATION_VERIFIED, verification.destination, detail)
    return report


def _request_id() -> str:
    """The gateway's id of this request: an audit record's event id (one per request)."""
    return str(app.current_event.request_context.request_id)


def _record_destination(action: AuditAction, destination: Destination, extra: dict[str, Any] | None = None) -> None:
    """Record a destination's change in the audit trail, if the deployment keeps one."""
    deps = dependencies().audit
    if deps is not None:
        audit.record_destination(action, destination, caller_of(app.current_event), _request_id(), deps, extra)


def _record_schedule(action: AuditAction, schedule: Schedule) -> None:
    """Record a schedule change in the audit trail, if the deployment keeps one."""
    deps = dependencies().audit
    if deps is not None:
        audit.record_schedule(action, schedule, caller_of(app.current_event), _request_id(), deps)


def _audit_reader() -> tuple[str, AuditDependencies]:
    """The audit trail and the tenant the caller may read it for (an admin's own)."""
    deps = dependencies().audit
    if deps is None:
        raise AuditNotKept("this deployment keeps no audit trail")
    return audit.admin_tenant(caller_of(app.current_event), deps.tenancy), deps


_AUDIT_RESPONSES = responses(
    {200: {"description": "A page of the tenant's audit records, by day then number."}},
    (403, "The caller is not in the audit admin group, or has no tenant (code NOT_AUDIT_ADMIN)."),
    (404, "This deployment keeps no audit trail."),
    422,
)
_USAGE_RESPONSES = responses(
    {200: {"description": "The tenant's usage per day."}},
    (403, "The caller is not in the audit admin group, or has no tenant (code NOT_AUDIT_ADMIN)."),
    (404, "This deployment keeps no audit trail."),
    422,
)
_AUDIT_QUERY = frozenset({"from", "to", "action", "actor", "subject", "limit", "next_token"})
_USAGE_QUERY = frozenset({"from", "to"})


def _days(day_from: date | None, day_to: date | None) -> tuple[date, date]:
    today = dependencies().clock().date()
    return day_from or day_to or today, day_to or today


@app.get(
    f"{API_VERSION_PREFIX}/audit",
    summary="Read your tenant's audit trail",
    description="For the deployment's audit admin group only: the records of the caller's tenant (exports, links,"
    " downloads, deliveries, schedule changes) of the days `from` to `to` (UTC, default today, at most 31 days),"
    " by day then number, as stored, with their hashes; `action`, `actor` and `subject` filter. Another tenant's"
    " records are never shown.",
    tags=["audit"],
    responses=_AUDIT_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def read_audit(
    day_from: Annotated[date | None, Query(alias="from", description="First day (UTC), YYYY-MM-DD.")] = None,
    day_to: Annotated[date | None, Query(alias="to", description="Last day (UTC), YYYY-MM-DD.")] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Only this action (`export.completed`, ...).")
    ] = None,
    actor: Annotated[str | None, Query(max_length=256, description="Only this user's (or `system`).")] = None,
    subject: Annotated[str | None, Query(max_length=64, description="Only this task's or schedule's.")] = None,
    limit: Annotated[int, Query(ge=1, le=Audit.PAGE_MAX)] = Audit.PAGE_DEFAULT,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
) -> AuditPage:
    """A page of the admin's tenant's records."""
    refuse_unknown_query(app.current_event, _AUDIT_QUERY)
    tenant, deps = _audit_reader()
    first, last = _days(day_from, day_to)
    query = TrailQuery(first, last, action=action, actor=actor, subject=subject)
    page = audit.read_trail(tenant, query, limit, next_token, deps)
    return AuditPage(items=page.records, next_token=page.cursor)


@app.get(
    f"{API_VERSION_PREFIX}/audit/usage",
    summary="Your tenant's usage per day",
    description="For the deployment's audit admin group only: exports ended, rows, bytes and CPU-seconds-equivalent"
    " of the caller's tenant on each day from `from` to `to` (UTC, default today, at most 31 days).",
    tags=["audit"],
    responses=_USAGE_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def read_usage(
    day_from: Annotated[date | None, Query(alias="from", description="First day (UTC), YYYY-MM-DD.")] = None,
    day_to: Annotated[date | None, Query(alias="to", description="Last day (UTC), YYYY-MM-DD.")] = None,
) -> UsageList:
    """The admin's tenant's usage per day."""
    refuse_unknown_query(app.current_event, _USAGE_QUERY)
    tenant, deps = _audit_reader()
    first, last = _days(day_from, day_to)
    days = audit.usage_by_day(tenant, TrailQuery(first, last), deps)
    items = [
        UsageDay(day=day, exports=u.exports, rows=u.rows, bytes=u.bytes, cpu_seconds=u.cpu_seconds) for day, u in days
    ]
    return UsageList(tenant=tenant, items=items)


@app.route(".+", method="OPTIONS", include_in_schema=False)
def preflight() -> Response[str]:
    """A browser's CORS preflight, which reaches the function through the unauthenticated
    ``OPTIONS /{proxy+}`` route when CORS is on: an empty 204, to which API Gateway adds the
    stage's CORS headers (it ignores the integration's own)."""
    return Response(status_code=204, content_type=content_types.TEXT_PLAIN, body="")


def api_document(export_types: Sequence[AnyExportType]) -> str:
    """The OpenAPI document of this API serving ``export_types`` (their request bodies)."""
    return contract_document(app.get_openapi_json_schema(**openapi_settings()), export_types)


@app.get(OPENAPI_PATH, include_in_schema=False)
def openapi_document() -> Response[str]:
    """The OpenAPI document of this API, with the export types every caller may use (it is
    served without a token)."""
    document = api_document(queries.documented_export_types(dependencies()))
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document)


@app.get(DOCS_PATH, include_in_schema=False)
def swagger_ui() -> Response[str]:
    """Swagger UI on the document ``/openapi.json`` serves."""
    document = api_document(queries.documented_export_types(dependencies()))
    return Response(status_code=200, content_type=content_types.TEXT_HTML, body=swagger_page(document))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Entry point of the API function."""
    return app.resolve(normalised_event(event), context)
