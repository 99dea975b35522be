"""Checks on the request as a whole (size, media type) and on who is calling."""

from __future__ import annotations

import base64
import binascii
import json

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from exports.config import Limits
from exports.domain.errors import ExportsError


class Unauthorized(ExportsError):
    """No valid credentials."""

    code = "UNAUTHORIZED"


class PayloadTooLarge(ExportsError):
    """The body is over the limit."""

    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(ExportsError):
    """The body is not JSON."""

    code = "UNSUPPORTED_MEDIA_TYPE"


def _raw_body(event: APIGatewayProxyEventV2) -> bytes:
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body)
        except (binascii.Error, ValueError):
            return body.encode()
    return body.encode()


def check_envelope(event: APIGatewayProxyEventV2) -> None:
    """Refuse bodies over the size limit (413) and bodies that are not JSON (415)."""
    body = _raw_body(event)
    if len(body) > Limits.MAX_BODY_BYTES:
        raise PayloadTooLarge(f"the body is larger than {Limits.MAX_BODY_BYTES} bytes")
    media_type = (event.headers.get("content-type") or "").split(";")[0].strip().lower()
    if body and media_type != "application/json" and not media_type.endswith("+json"):
        raise UnsupportedMediaType("send the body as application/json")


def unparsable_body(event: APIGatewayProxyEventV2) -> str | None:
    """Why the body cannot be read as JSON at all, or None. Catches what the JSON parser raises
    besides a syntax error: text that is not UTF-8, numbers past Python's digit limit, nesting
    past the recursion limit."""
    try:
        json.loads(_raw_body(event))
    except RecursionError:
        return "the body is nested too deeply"
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    except ValueError:
        return "the body is not valid JSON"
    return None


def caller_id(event: APIGatewayProxyEventV2) -> str:
    """The user's id from the JWT authorizer's ``sub`` claim; never from the request itself."""
    claims = event.request_context.authorizer.jwt_claim or {}
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized("a valid bearer token is required")
    return subject
