"""What several route modules answer with: a JSON response, a task accepted (``202``), the
request's id, an export's deliveries (the exports' and the schedules' routes share them)."""

from dataclasses import replace
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from exports.accepting.requests import ExportRequest
from exports.accepting.submission import Submission
from exports.api import app as api
from exports.api.app import app, logger
from exports.api.http.openapi import (
    location,
    retry_after,
)
from exports.api.models import ExportAccepted
from exports.core.caller import Caller
from exports.core.config.api import API_VERSION_PREFIX
from exports.core.policies import Polling
from exports.core.spec import ExportSpec

# The answers of each route as the OpenAPI document states them (exports/api/http/openapi.py).
ACCEPTED = {
    202: {
        "description": "Accepted: the task (PENDING, or the identical active task when deduplicated).",
        "headers": {
            "Location": location("The task's status URL (as `status_url`)."),
            "Retry-After": retry_after("Seconds to wait before the first poll."),
        },
    }
}


def json_response(status: int, body: Any, headers: dict[str, str]) -> Response[Any]:
    """A JSON answer with ``status`` and ``headers``."""
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


def accepted(submission: Submission) -> ExportAccepted:
    """The body of a ``202`` for a submission (the task it created, or the identical active one)."""
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


def accepted_answer(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response[ExportAccepted]:
    """The ``202`` itself: where to poll, and when first."""
    return json_response(
        202,
        body,
        {"Location": body["status_url"], "Retry-After": str(Polling.MIN_DELAY_SEC), **(headers or {})},
    )


def request_id() -> str:
    """The gateway's id of this request: an audit record's event id (one per request)."""
    return str(app.current_event.request_context.request_id)


def with_delivery(spec: ExportSpec, request: ExportRequest, caller: Caller) -> ExportSpec:
    """``spec`` with where its file goes, when ``request`` names destinations: the caller's
    tenant's, usable and ACTIVE (else a 422 naming ``destinations.<i>``). The destinations'
    modules are imported then, not at every submit."""
    if not request.destinations:
        return spec
    from exports.finishing.destinations.service import delivery_plan

    plan = delivery_plan(request.destinations, request.path_template, caller, api.destination_dependencies())
    return replace(spec, delivery=plan)
