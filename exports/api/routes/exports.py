"""The export routes: submit, read, cancel, retry, list and download a task (docs/openapi.json).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BeforeValidator

from exports.accepting.idempotency import idempotency_key
from exports.accepting.requests import ExportRequest
from exports.accepting.submission import caller_scope, submit_export
from exports.api import app as api
from exports.api import control, queries
from exports.api.answers import ACCEPTED, accepted, accepted_answer, json_response, request_id, with_delivery
from exports.api.app import app, logger, tracer
from exports.api.http.envelope import (
    caller_id,
    caller_of,
    check_envelope,
    refuse_unknown_query,
    upper_case,
)
from exports.api.http.openapi import (
    CACHE_CONTROL,
    conflict,
    location,
    responses,
    retry_after,
)
from exports.api.models import ExportAccepted, TaskList
from exports.audit import service as audit
from exports.core.config.api import API_VERSION_PREFIX
from exports.core.config.limits import Limits
from exports.core.download_links import download_link
from exports.core.ids import TASK_ID_SCHEMA_PATTERN
from exports.core.policies import Polling, poll_after_sec
from exports.core.status import TaskStatus
from exports.core.task_view import TaskView

# The answers of each route as the OpenAPI document states them (exports/api/http/openapi.py).
_SUBMIT_RESPONSES = responses(
    ACCEPTED,
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
    ACCEPTED,
    403,
    404,
    conflict({"TASK_NOT_RETRYABLE": "only a FAILED, TIMEOUT or CANCELLED task is submitted again."}),
    422,
    429,
)
_RETRY_DELIVERY_RESPONSES = responses(
    {
        202: {
            "description": "The task, its delivery to the destination PENDING again: a new round of attempts"
            " has started.",
            "headers": {
                "Location": location("The task's URL, to follow the delivery."),
                "Retry-After": retry_after("Seconds to wait before the first poll."),
            },
        }
    },
    403,
    (
        404,
        "No such task among the caller's in their tenant (TASK_NOT_FOUND), no delivery to that destination on it"
        " (DELIVERY_NOT_FOUND), or the destination is gone or no longer the caller's to use"
        " (DESTINATION_NOT_FOUND).",
    ),
    conflict(
        {
            "DELIVERY_IN_PROGRESS": "the delivery is still PENDING (its attempts, or an earlier retry's, go on).",
            "DELIVERY_ALREADY_DELIVERED": "the file is at the destination already.",
            "DELIVERY_NOT_RETRYABLE": "the export ended without a file (the delivery was SKIPPED).",
            "HOST_KEY_UNCONFIRMED": "the destination waits for its host key to be confirmed.",
        }
    ),
    (410, "The task's file has expired, or expires before a delivery could be tried again (code FILE_EXPIRED)."),
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
_LIST_QUERY = frozenset({"limit", "status", "next_token", "schedule_id"})


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
        spec = with_delivery(request.spec(), request, caller)
        return accepted(submit_export(spec, caller, api.dependencies())).model_dump(mode="json")

    if key is None:
        return accepted_answer(accept())
    scope = caller_scope(request.export_type, caller, api.dependencies())
    body = request.idempotency_body()
    answer, replayed = api.idempotent_calls().replay_or_call(caller.user_id, key, body, accept, scope=scope)
    return accepted_answer(answer, {"Idempotent-Replayed": "true"} if replayed else {})


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
    deps = api.dependencies()
    user_id = caller_id(app.current_event)
    details = queries.task_details(task_id, user_id, deps)
    task = details.task
    if details.download_expires_at is not None and deps.audit is not None:
        audit.record_link(task, user_id, request_id(), details.download_expires_at, False, deps.audit)
    if task.status in (TaskStatus.PENDING, TaskStatus.RUNNING):
        retry_after = poll_after_sec(task.created_at, deps.clock())
        headers = {"Retry-After": str(retry_after), "Cache-Control": "no-store"}
    elif any(not delivery.ended for delivery in task.deliveries):
        # Ended, but its file is still on its way to a destination: the next read may differ.
        headers = {"Cache-Control": "no-store"}
    else:
        headers = {"Cache-Control": f"private, max-age={Polling.TERMINAL_MAX_AGE_SEC}"}
    return json_response(200, TaskView.of(task, details.download_url, details.download_expires_at), headers)


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
    return TaskView.of(control.cancel_export(task_id, caller_id(app.current_event), api.dependencies()))


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
    submission = control.retry_export(task_id, caller_of(app.current_event), api.dependencies())
    return accepted_answer(accepted(submission).model_dump(mode="json"))


@app.post(
    f"{API_VERSION_PREFIX}/exports/<task_id>/deliveries/<destination_id>/retry",
    status_code=202,
    summary="Retry a failed delivery",
    description="Tries the COMPLETED task's FAILED delivery to one of its destinations again: the delivery is"
    " PENDING again at once and a new round of attempts (the same retries as the first) delivers the same file,"
    " replacing any earlier copy. Who may: whoever may retry the export, in its tenant, if they may still use"
    " the destination. Its end is told as the first's (`export.delivered` / `export.delivery_failed`).",
    tags=["exports"],
    responses=_RETRY_DELIVERY_RESPONSES,
)
@tracer.capture_method(capture_response=False)
def retry_delivery(task_id: str, destination_id: str) -> Response[TaskView]:
    """``202`` with the task, its delivery PENDING again; ``409``/``410`` when it cannot be."""
    from exports.api.redelivery import retry_delivery as retried

    logger.append_keys(task_id=task_id, destination_id=destination_id)
    caller = caller_of(app.current_event)
    task = retried(task_id, destination_id, caller, api.redelivery_dependencies())
    trail = api.dependencies().audit
    if trail is not None:
        [delivery] = [d for d in task.deliveries if d.destination_id == destination_id]
        audit.record_delivery_retry(task, delivery, request_id(), caller.user_id, trail)
    headers = {"Location": f"{API_VERSION_PREFIX}/exports/{task_id}", "Retry-After": str(Polling.MIN_DELAY_SEC)}
    return json_response(202, TaskView.of(task).model_dump(mode="json"), headers)


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
    next_token: Annotated[
        str | None,
        Query(
            pattern=TASK_ID_SCHEMA_PATTERN,
            description="The previous page's `next_token`: the id of its last task (the page lists the tasks"
            " created before it).",
        ),
    ] = None,
    schedule_id: Annotated[
        str | None, Query(max_length=64, description="Only the runs of this schedule of yours.")
    ] = None,
) -> TaskList:
    """The caller's tasks, newest first; ``422`` for a query parameter it does not know."""
    refuse_unknown_query(app.current_event, _LIST_QUERY)
    user_id = caller_id(app.current_event)
    page = queries.list_tasks(user_id, api.dependencies(), limit, status, next_token, schedule_id)
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
    deps = api.dependencies()
    user_id = caller_id(app.current_event)
    task = queries.owned_task(task_id, user_id, deps)
    url, expires_at = download_link(task, deps)
    if deps.audit is not None:
        audit.record_link(task, user_id, request_id(), expires_at, True, deps.audit)
    return Response(status_code=302, headers={"Location": url, "Cache-Control": "no-store"}, body="")
