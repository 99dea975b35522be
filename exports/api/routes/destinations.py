"""The destination routes: create, list, read, change, delete, confirm and verify a tenant's
delivery destinations (docs/destinations.md).

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

import hashlib
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from exports.accepting.idempotency import idempotency_key
from exports.api import app as api
from exports.api.answers import json_response, request_id
from exports.api.app import app, logger, tracer
from exports.api.http.envelope import caller_of, check_envelope, refuse_unknown_query
from exports.api.http.openapi import conflict, location, responses
from exports.audit.model import AuditAction
from exports.core.config.api import API_VERSION_PREFIX
from exports.core.config.limits import Limits
from exports.finishing.destinations import service as destinations
from exports.finishing.destinations.api_models import DestinationList, DestinationView, VerificationView
from exports.finishing.destinations.audit_records import record_destination
from exports.finishing.destinations.model import Destination
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest, HostKeyConfirmation

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
    return DestinationView.of(destination, api.destination_dependencies().principal_arn, public_key)


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
        created = destinations.create_destination(request, caller, api.destination_dependencies())
        logger.info("destination created", extra={"destination_id": created.destination.destination_id})
        _record_destination(AuditAction.DESTINATION_CREATED, created.destination)
        return _destination_view(created.destination, created.public_key).model_dump(mode="json")

    headers: dict[str, str] = {}
    if key is None:
        answer = create()
    else:
        # The body's secrets take part in the comparison only as their digest (exports.accepting.idempotency).
        body = {"destination": request.model_dump(mode="json"), "secrets": _secret_digest(request)}
        answer, replayed = api.idempotent_calls().replay_or_call(caller.user_id, key, body, create, scope="destination")
        headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return json_response(201, answer, {"Location": _destination_url(answer["destination_id"]), **headers})


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
    page = destinations.list_destinations(caller, api.destination_dependencies(), limit, next_token)
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
    return _destination_view(destinations.visible_destination(destination_id, caller, api.destination_dependencies()))


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
    changed = destinations.update_destination(destination_id, changes, caller, api.destination_dependencies())
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
    deleted = destinations.delete_destination(
        destination_id, caller_of(app.current_event), api.destination_dependencies()
    )
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
    confirmed = destinations.confirm_destination(destination_id, fingerprint, caller, api.destination_dependencies())
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
    verification = destinations.verify_destination(destination_id, caller, api.destination_dependencies())
    logger.info("destination verified", extra={"destination_id": destination_id, "ok": verification.ok})
    report = VerificationView.of(verification)
    detail = {"verification": report.model_dump(mode="json")}
    _record_destination(AuditAction.DESTINATION_VERIFIED, verification.destination, detail)
    return report


def _record_destination(action: AuditAction, destination: Destination, extra: dict[str, Any] | None = None) -> None:
    """Record a destination's change in the audit trail, if the deployment keeps one."""
    deps = api.dependencies().audit
    if deps is not None:
        record_destination(action, destination, caller_of(app.current_event), request_id(), deps, extra)
