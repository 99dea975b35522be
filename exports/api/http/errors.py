"""Every error answer of the API comes from here: ``{"error": {"code", "message", "field"?, "errors"?}}``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict
from functools import cache
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from exports.api.http.envelope import (
    MalformedBody,
    PayloadTooLarge,
    Unauthorized,
    UnsupportedMediaType,
    check_envelope,
    raw_body,
    strict_json,
)
from exports.core.caller import CallerRefused
from exports.core.config.limits import Admission
from exports.core.errors import (
    CapacityEstimate,
    ConditionFailed,
    ExportsError,
    InvalidRequest,
    Overloaded,
    RetryableError,
    ServiceUnavailable,
    TaskNotCancellable,
    TaskNotFound,
    TaskNotReady,
    TaskNotRetryable,
    UnknownExportType,
)

logger = logging.getLogger(__name__)


@cache
def _statuses() -> dict[type[ExportsError], HTTPStatus]:
    """The status of each error type. Built at the first error: the audit trail's, the push
    channel's, the schedules' and the destinations' errors are imported with their features, not at
    the API function's cold start (issue 50)."""
    from exports.api.redelivery import DeliveryNotFound, DeliveryNotRetryable, FileExpired
    from exports.audit.ports import AuditNotKept, NotAuditAdmin
    from exports.finishing.destinations.ports import DestinationLimitReached, DestinationNotFound, SecretMissing
    from exports.finishing.destinations.service import HostKeyNotConfirmed, HostKeyRefused, NotDestinationManager
    from exports.push.model import PushNotAvailable
    from exports.schedules.ports import FeedBusy, NoLatestFile, ScheduleConflict, ScheduleLimitReached, ScheduleNotFound

    return {
        Unauthorized: HTTPStatus.UNAUTHORIZED,
        PayloadTooLarge: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        UnsupportedMediaType: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
        MalformedBody: HTTPStatus.BAD_REQUEST,
        InvalidRequest: HTTPStatus.UNPROCESSABLE_ENTITY,
        CallerRefused: HTTPStatus.FORBIDDEN,
        NotAuditAdmin: HTTPStatus.FORBIDDEN,
        AuditNotKept: HTTPStatus.NOT_FOUND,
        TaskNotFound: HTTPStatus.NOT_FOUND,
        UnknownExportType: HTTPStatus.NOT_FOUND,
        PushNotAvailable: HTTPStatus.NOT_FOUND,
        ScheduleNotFound: HTTPStatus.NOT_FOUND,
        NoLatestFile: HTTPStatus.NOT_FOUND,
        FeedBusy: HTTPStatus.CONFLICT,
        ScheduleConflict: HTTPStatus.CONFLICT,
        ScheduleLimitReached: HTTPStatus.TOO_MANY_REQUESTS,
        DestinationNotFound: HTTPStatus.NOT_FOUND,
        DeliveryNotFound: HTTPStatus.NOT_FOUND,
        DeliveryNotRetryable: HTTPStatus.CONFLICT,
        FileExpired: HTTPStatus.GONE,
        NotDestinationManager: HTTPStatus.FORBIDDEN,
        DestinationLimitReached: HTTPStatus.TOO_MANY_REQUESTS,
        HostKeyNotConfirmed: HTTPStatus.CONFLICT,
        HostKeyRefused: HTTPStatus.CONFLICT,
        SecretMissing: HTTPStatus.CONFLICT,
        TaskNotReady: HTTPStatus.CONFLICT,
        TaskNotCancellable: HTTPStatus.CONFLICT,
        TaskNotRetryable: HTTPStatus.CONFLICT,
        ConditionFailed: HTTPStatus.CONFLICT,
        Overloaded: HTTPStatus.TOO_MANY_REQUESTS,
        # ServiceUnavailable included: a throttled or unreachable dependency is worth a retry, not a 500.
        RetryableError: HTTPStatus.SERVICE_UNAVAILABLE,
    }


MALFORMED_JSON = MalformedBody.code
# Every field-level mistake, in the body's fields, its filters or the query string, has this code.
VALIDATION_ERROR = InvalidRequest.code
RETRY_AFTER_UNAVAILABLE_SEC = 5


def error_response(
    status: HTTPStatus,
    code: str,
    message: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    problems: Sequence[tuple[str | None, str]] = (),
    estimate: CapacityEstimate | None = None,
) -> Response[str]:
    """A JSON error answer; ``problems`` (every invalid field, when there are several) become
    its ``errors`` list, and a capacity refusal's ``estimate`` its ``estimate``."""
    detail: dict[str, Any] = {"code": code, "message": message}
    if field:
        detail["field"] = field
    if estimate is not None:
        detail["estimate"] = asdict(estimate)
    if problems:
        detail["errors"] = [
            {"field": where, "message": text} if where else {"message": text} for where, text in problems
        ]
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps({"error": detail}, ensure_ascii=False),
        headers=headers,
    )


def _quota_errors() -> tuple[type[ExportsError], ...]:
    """The schedules' and destinations' quota errors, imported with the status table (an error is
    being answered)."""
    from exports.finishing.destinations.ports import DestinationLimitReached
    from exports.schedules.ports import ScheduleLimitReached

    return ScheduleLimitReached, DestinationLimitReached


def _status_of(error: ExportsError) -> HTTPStatus:
    statuses = _statuses()
    for error_type in type(error).__mro__:
        if error_type in statuses:
            return statuses[error_type]
    return HTTPStatus.INTERNAL_SERVER_ERROR


def allowed_methods(app: APIGatewayHttpResolver, path: str) -> list[str]:
    """The methods the routes of ``path`` answer (empty: no route has that path), sorted. CORS
    preflights (OPTIONS, answered on every path) say nothing about a path: they are left out."""
    routes = app._static_routes + app._dynamic_routes  # Powertools keeps no public list of them
    return sorted(
        {route.method.upper() for route in routes if route.rule.match(path) and route.method.upper() != "OPTIONS"}
    )


def register_error_handlers(app: APIGatewayHttpResolver) -> None:
    """Map every error to its status code and the one error shape."""

    def _service_error(error: ExportsError) -> Response[str]:
        if isinstance(error, MalformedBody):
            # Raised by the body's parser: a huge or non-JSON body is that first.
            try:
                check_envelope(app.current_event)
            except ExportsError as envelope_error:
                error = envelope_error
        status = _status_of(error)
        if status is HTTPStatus.INTERNAL_SERVER_ERROR:
            # The message names the failed operation and the AWS error code (nothing from the request).
            logger.error("service error", extra={"error_code": error.code, "detail": error.message})
            return error_response(status, "INTERNAL_ERROR", "internal error")
        if isinstance(error, RetryableError) and not isinstance(error, ServiceUnavailable):
            # Its message names the dependency and its error code: keep that in the log.
            logger.warning("transient fault", extra={"error_code": error.code, "detail": error.message})
            error = ServiceUnavailable("the export service is busy; try again shortly")
        headers = None
        if isinstance(error, Overloaded):
            headers = {"Retry-After": str(error.retry_after)}
        elif isinstance(error, _quota_errors()):
            # Only a deletion frees a place: the header every 429 has, with the quota's wait.
            headers = {"Retry-After": str(Admission.RETRY_AFTER_QUOTA_SEC)}
        elif status is HTTPStatus.SERVICE_UNAVAILABLE:
            headers = {"Retry-After": str(RETRY_AFTER_UNAVAILABLE_SEC)}
        return error_response(
            status,
            error.code,
            error.message,
            getattr(error, "field", None),
            headers,
            getattr(error, "problems", ()),
            getattr(error, "estimate", None),
        )

    def _invalid_request(error: RequestValidationError) -> Response[str]:
        from exports.accepting.validation import field_path

        # The envelope decides first: a huge or non-JSON body is that, whatever else is wrong.
        try:
            check_envelope(app.current_event)
        except ExportsError as envelope_error:
            return _service_error(envelope_error)
        details = list(error.errors())
        if details[0]["type"] == "json_invalid":
            return error_response(HTTPStatus.BAD_REQUEST, MALFORMED_JSON, "the body is not valid JSON")
        problems = [
            (
                field_path([part for part in detail["loc"] if part not in ("body", "query", "path")]),
                str(detail.get("msg", "invalid value")).removeprefix("Value error, "),
            )
            for detail in details
        ]
        field, message = problems[0]
        return error_response(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            VALIDATION_ERROR,
            f"{field}: {message}" if field else message,
            field,
            problems=problems if len(problems) > 1 else (),
        )

    def _unsupported(_error: RequestUnsupportedContentType) -> Response[str]:
        return error_response(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, UnsupportedMediaType.code, "send application/json")

    @app.not_found
    def _no_route(_error: NotFoundError) -> Response[str]:
        allowed = allowed_methods(app, app.current_event.path)
        if allowed:
            return error_response(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                f"{app.current_event.http_method.upper()} is not allowed here; use {', '.join(allowed)}",
                headers={"Allow": ", ".join(allowed)},
            )
        return error_response(HTTPStatus.NOT_FOUND, "NOT_FOUND", "no such resource")

    def _unexpected(error: Exception) -> Response[str]:  # the edge: log it, reveal nothing
        if isinstance(error, (ValueError, RecursionError)) and app.current_event.body:
            # Raised while the body was parsed (before any route ran): bad input, not a fault.
            try:
                check_envelope(app.current_event)
            except ExportsError as envelope_error:
                return _service_error(envelope_error)
            try:
                strict_json(raw_body(app.current_event))
            except MalformedBody as problem:
                return _service_error(problem)
        logger.exception("unhandled error", extra={"error_type": type(error).__name__})
        return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "internal error")

    # Registered by call, not as decorators: Powertools' decorator is untyped, and would leave
    # these handlers (which call each other) untyped too.
    app.exception_handler(ExportsError)(_service_error)
    app.exception_handler(RequestValidationError)(_invalid_request)
    app.exception_handler(RequestUnsupportedContentType)(_unsupported)
    app.exception_handler(Exception)(_unexpected)
