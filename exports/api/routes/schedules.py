"""The schedule routes: create, list, read, change, delete and run a schedule, its latest file and its
permalink (docs/schedules.md).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any
from urllib.parse import urlencode

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from exports.accepting.idempotency import idempotency_key
from exports.accepting.submission import caller_scope
from exports.api import app as api
from exports.api.answers import ACCEPTED, accepted, accepted_answer, json_response, request_id, with_delivery
from exports.api.app import app, logger, tracer
from exports.api.http.envelope import (
    caller_id,
    caller_of,
    check_envelope,
    refuse_unknown_query,
)
from exports.api.http.openapi import (
    CACHE_CONTROL,
    conflict,
    location,
    responses,
)
from exports.api.models import ExportAccepted
from exports.audit import service as audit
from exports.audit.events import PERMALINK
from exports.audit.model import AuditAction
from exports.core.caller import Caller
from exports.core.config.api import API_VERSION_PREFIX, PERMALINK_PATH
from exports.core.config.limits import Limits
from exports.core.config.schedules import Schedules
from exports.core.deliveries import DeliveryPlan
from exports.schedules import latest
from exports.schedules import service as schedules
from exports.schedules.api_models import Permalink, ScheduleList, SchedulePatch, ScheduleRequest, ScheduleView
from exports.schedules.audit_records import record_schedule
from exports.schedules.model import SCHEDULE_ID_PATTERN, Schedule

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
    (
        404,
        "A destination named in `destinations` is not one of the caller's tenant's that they may use (code"
        " DESTINATION_NOT_FOUND; `field` names `destinations.<i>`; another tenant's is not found either).",
    ),
    conflict(
        {
            "CONFLICT": "a request with the same Idempotency-Key is still in progress; try again shortly.",
            "HOST_KEY_UNCONFIRMED": "a destination named in `destinations` waits for its host key to be confirmed"
            " (`field` names `destinations.<i>`).",
        }
    ),
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
_SCHEDULE_PATCH_RESPONSES = responses(
    {200: {"description": "The schedule as changed."}},
    400,
    403,
    (
        404,
        "No such schedule among the caller's (code SCHEDULE_NOT_FOUND), or a destination named in `destinations`"
        " that is not one of the caller's tenant's that they may use (code DESTINATION_NOT_FOUND; `field` names"
        " `destinations.<i>`).",
    ),
    conflict(
        {
            "SCHEDULE_CONFLICT": "a field does not fit the stored schedule, which the body cannot know: filters its"
            " export type does not take, a watermark on a schedule that is no feed, an encoding other than UTF-8"
            " while it has csv_bom, a path template on a schedule without destinations (`field` names it).",
            "HOST_KEY_UNCONFIRMED": "a destination named in `destinations` waits for its host key to be confirmed"
            " (`field` names `destinations.<i>`).",
        }
    ),
    413,
    415,
    422,
)
_SCHEDULE_DELETE_RESPONSES = responses({204: {"description": "Deleted (its runs stay, as tasks).", "content": {}}}, 404)
_SCHEDULE_RUN_RESPONSES = responses(ACCEPTED, 403, 404, 422, 429)
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


def _schedule_view(schedule: Schedule) -> ScheduleView:
    deps = api.schedule_dependencies()
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
        audit_deps = api.dependencies().audit
        if audit_deps is not None:
            audit.check_schedule_quota(audit_deps.tenancy.tenant_of(caller), audit_deps)
        spec = request.schedule_spec()
        spec = replace(spec, export=with_delivery(spec.export, request, caller))
        schedule = schedules.create_schedule(spec, caller, api.schedule_dependencies())
        _record_schedule(AuditAction.SCHEDULE_CREATED, schedule)
        return _schedule_view(schedule).model_dump(mode="json")

    headers: dict[str, str] = {}
    if key is None:
        answer = create()
    else:
        # Scoped apart from the exports' keys: the same key may create an export and a schedule.
        scope = "schedule:" + caller_scope(request.export_type, caller, api.dependencies())
        # Bodies without destinations as they were before destinations existed (keys stored then match).
        body = request.model_dump(mode="json", exclude={"destinations", "path_template"} - request.model_fields_set)
        answer, replayed = api.idempotent_calls().replay_or_call(caller.user_id, key, body, create, scope=scope)
        headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return json_response(201, answer, {"Location": _schedule_url(answer["schedule_id"]), **headers})


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
    next_token: Annotated[
        str | None,
        Query(
            pattern=SCHEDULE_ID_PATTERN,
            description="The previous page's `next_token`: the id of its last schedule (the page lists the"
            " schedules created before it).",
        ),
    ] = None,
) -> ScheduleList:
    """The caller's schedules, newest first; ``422`` for a query parameter it does not know."""
    refuse_unknown_query(app.current_event, _SCHEDULE_LIST_QUERY)
    page = schedules.list_schedules(caller_id(app.current_event), api.schedule_dependencies(), limit, next_token)
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
    deps = api.schedule_dependencies()
    return _schedule_view(schedules.owned_schedule(schedule_id, caller_id(app.current_event), deps))


@app.patch(
    f"{API_VERSION_PREFIX}/schedules/<schedule_id>",
    summary="Change, pause or resume a schedule",
    description="Changes the fields given, validated like a create; `state` PAUSED pauses, ACTIVE resumes"
    " (clearing the pause reason and the failures). `destinations` replaces where each run's file goes (your"
    " tenant's destinations that you may use, as on a create); runs already started keep theirs.",
    tags=["schedules"],
    responses=_SCHEDULE_PATCH_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def patch_schedule(schedule_id: str, changes: Annotated[SchedulePatch, Body()]) -> ScheduleView:
    """The schedule as changed."""
    check_envelope(app.current_event)
    caller = caller_of(app.current_event)
    changed = schedules.update_schedule(
        schedule_id, changes.changes(), caller, api.schedule_dependencies(), plan_delivery
    )
    _record_schedule(AuditAction.SCHEDULE_CHANGED, changed)
    return _schedule_view(changed)


def plan_delivery(destination_ids: Sequence[str], path_template: str | None, caller: Caller) -> DeliveryPlan | None:
    """A PATCH's destinations checked as a create's (the destinations' modules imported then)."""
    from exports.finishing.destinations.service import delivery_plan

    return delivery_plan(destination_ids, path_template, caller, api.destination_dependencies())


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
    deps = api.schedule_dependencies()
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
    submission = schedules.run_now(schedule_id, caller_of(app.current_event), api.schedule_dependencies())
    return accepted_answer(accepted(submission).model_dump(mode="json"))


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
    user_id = caller_id(app.current_event)
    link = latest.owner_latest(schedule_id, user_id, api.schedule_dependencies())
    _record_download(link, user_id, {"via": "schedule_latest", "schedule_id": schedule_id})
    return _redirect(link.url)


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
    key, schedule = latest.mint_permalink(schedule_id, caller_id(app.current_event), api.schedule_dependencies())
    _record_schedule(AuditAction.SCHEDULE_CHANGED, schedule, change="permalink_minted")
    event = app.current_event
    path = PERMALINK_PATH.format(schedule_id=schedule_id)
    scheme = event.headers.get("x-forwarded-proto") or "https"
    url = f"{scheme}://{event.request_context.domain_name}{path}?{urlencode({'key': key})}"
    return json_response(201, Permalink(url=url, key=key).model_dump(mode="json"), {})


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
    schedule = latest.revoke_permalink(schedule_id, caller_id(app.current_event), api.schedule_dependencies())
    _record_schedule(AuditAction.SCHEDULE_CHANGED, schedule, change="permalink_revoked")
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
    link = latest.permalink_latest(schedule_id, key, api.schedule_dependencies())
    http = app.current_event.request_context.http
    # No user: the key's holder, known by the address and client it came from.
    _record_download(
        link,
        PERMALINK,
        {"via": "permalink", "schedule_id": schedule_id, "source_ip": http.source_ip, "user_agent": http.user_agent},
    )
    return _redirect(link.url)


def _record_schedule(action: AuditAction, schedule: Schedule, change: str | None = None) -> None:
    """Record a schedule change in the audit trail, if the deployment keeps one."""
    deps = api.dependencies().audit
    if deps is not None:
        record_schedule(action, schedule, caller_of(app.current_event), request_id(), deps, change)


def _record_download(link: latest.LatestLink, actor: str, via: dict[str, Any]) -> None:
    """A schedule's latest file handed out as a redirect: recorded before it is (docs/audit.md)."""
    deps = api.dependencies().audit
    if deps is not None:
        audit.record_link(link.task, actor, request_id(), link.expires_at, True, deps, via)
