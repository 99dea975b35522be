"""Checks on the request as a whole (size, media type) and on who is calling."""

from __future__ import annotations

import base64
import binascii
import json
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from exports.core.caller import Caller
from exports.core.config.limits import Limits
from exports.core.errors import ExportsError, InvalidRequest


class Unauthorized(ExportsError):
    """No valid credentials."""

    code = "UNAUTHORIZED"


class PayloadTooLarge(ExportsError):
    """The body is over the limit."""

    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(ExportsError):
    """The body is not JSON."""

    code = "UNSUPPORTED_MEDIA_TYPE"


class MalformedBody(ExportsError):
    """The body cannot be read as one JSON document: not UTF-8, not JSON, or a key twice."""

    code = "MALFORMED_JSON"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.field = field


class DuplicateKey(ValueError):
    """An object in the body has the same key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key} appears twice")
        self.key = key


# UTF-16 and UTF-32 byte-order marks: the JSON parser would decode such a body silently.
_FOREIGN_BOMS = (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00", b"\xfe\xff", b"\xff\xfe")


def raw_body(event: APIGatewayProxyEventV2) -> bytes:
    """The body's bytes, base64-decoded when the gateway encoded it."""
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body)
        except (binascii.Error, ValueError):
            return body.encode()
    return body.encode()


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or ``application/<anything>+json``, in any case, parameters ignored."""
    media_type = (content_type or "").split(";")[0].strip().lower()
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or (subtype.endswith("+json") and len(subtype) > 5))


def normalised_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event with a JSON ``Content-Type`` spelled ``application/json`` (the request validator
    compares it case-sensitively and knows no ``+json`` types); anything else unchanged."""
    headers = event.get("headers") or {}
    name = next((key for key in headers if key.lower() == "content-type"), None)
    if name is None or not is_json_media_type(headers[name]) or headers[name] == "application/json":
        return event
    rest = {key: value for key, value in headers.items() if key != name}
    return {**event, "headers": {**rest, "content-type": "application/json"}}


def check_envelope(event: APIGatewayProxyEventV2) -> None:
    """Refuse bodies over the size limit (413) and bodies that are not JSON (415)."""
    body = raw_body(event)
    if len(body) > Limits.MAX_BODY_BYTES:
        raise PayloadTooLarge(f"the body is larger than {Limits.MAX_BODY_BYTES} bytes")
    if body and not is_json_media_type(event.headers.get("content-type")):
        raise UnsupportedMediaType("send the body as application/json")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(key)
        result[key] = value
    return result


def _integer(digits: str) -> int | Decimal:
    """A JSON integer; one with more digits than Python reads as an ``int`` (its
    ``sys.get_int_max_str_digits`` guard against quadratic conversions, 4,300 by default) as its
    ``Decimal``, read in linear time: the body is valid JSON, so the field that holds it is the
    one to refuse it (no integer field takes a Decimal, decimal fields bound their digits)."""
    try:
        return int(digits)
    except ValueError:
        return Decimal(digits)


def _fraction(text: str) -> float | int | Decimal:
    """A JSON number written with a fraction or an exponent: a whole one (``5.0``, ``1e3``) as
    the integer it is, since JSON Schema counts it one (the document's ``"type": "integer"``
    takes it, so an integer field must too); any other a float, as ``json`` reads it."""
    value = float(text)
    if not value.is_integer():
        return value  # a fraction, or beyond a double (inf): the field decides
    exact = Decimal(text)
    return _integer(str(int(exact))) if exact == exact.to_integral_value() else value


def strict_json(text: str | bytes) -> Any:
    """Parse one JSON document strictly: UTF-8 only (a UTF-16 or UTF-32 body, BOM or not, is
    refused instead of decoded), no key twice in an object. Raises :class:`MalformedBody`."""
    raw = text.encode() if isinstance(text, str) else text
    if raw.startswith(_FOREIGN_BOMS):
        raise MalformedBody("the body must be UTF-8 (it starts with a UTF-16 or UTF-32 byte-order mark)")
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedBody("the body is not UTF-8") from None
    try:
        return json.loads(decoded, object_pairs_hook=_unique_keys, parse_int=_integer, parse_float=_fraction)
    except DuplicateKey as duplicate:
        raise MalformedBody(str(duplicate), field=duplicate.key) from None
    except RecursionError:
        raise MalformedBody("the body is nested too deeply") from None
    except ValueError:
        raise MalformedBody("the body is not valid JSON") from None


def refuse_unknown_query(event: APIGatewayProxyEventV2, known: frozenset[str]) -> None:
    """:class:`InvalidRequest` naming the first query parameter that is not one of ``known``:
    a misspelt filter (``stauts=FAILED``) must not be silently ignored."""
    for name in event.query_string_parameters or {}:
        if name not in known:
            raise InvalidRequest(f"unknown query parameter {name!r}", field=name or "query")


def upper_case(value: Any) -> Any:
    """A query value such as ``status=completed`` read in any case; anything else unchanged."""
    return value.upper() if isinstance(value, str) else value


def caller_id(event: APIGatewayProxyEventV2) -> str:
    """The user's id from the JWT authorizer's ``sub`` claim; never from the request itself."""
    return caller_of(event).user_id


def caller_of(event: APIGatewayProxyEventV2) -> Caller:
    """The verified caller: the JWT authorizer's ``sub``, claims and scopes; never anything
    from the request itself."""
    authorizer = event.request_context.authorizer
    claims = authorizer.jwt_claim or {}
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized("a valid bearer token is required")
    scopes = authorizer.jwt_scopes
    return Caller(subject, dict(claims), tuple(scopes) if scopes is not None else None)
