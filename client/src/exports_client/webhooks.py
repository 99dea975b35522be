"""Verifying the callbacks the service sends, as Standard Webhooks specifies.

The service signs ``{webhook-id}.{webhook-timestamp}.{body}`` with HMAC-SHA256 under the secret
(``whsec_`` + base64 key) and sends ``webhook-signature: v1,<base64 signature>``; several
space-separated signatures may be sent while a secret is being rotated.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any, Final

from exports_client.errors import WebhookVerificationError
from exports_client.models import WebhookEvent

DEFAULT_TOLERANCE_SEC: Final = 300
SECRET_PREFIX: Final = "whsec_"


def _key(secret: str) -> bytes:
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError("the webhook secret is not whsec_ followed by base64") from error
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def _signatures(header: str) -> list[bytes]:
    """The decoded ``v1`` signatures of a ``webhook-signature`` header; other versions are skipped."""
    decoded = []
    for entry in header.split():
        version, _, value = entry.partition(",")
        if version != "v1":
            continue
        try:
            decoded.append(base64.b64decode(value, validate=True))
        except binascii.Error:
            continue
    return decoded


def parse_event(payload: Any) -> WebhookEvent:
    """A verified payload (:func:`verify_webhook`'s result) as a typed :class:`WebhookEvent`."""
    return WebhookEvent.model_validate(payload)


def verify_webhook(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE_SEC,
    *,
    now: float | None = None,
) -> Any:
    """Check a received webhook and return its JSON payload: ``{"type", "timestamp", "data"}``
    (see :class:`~exports_client.models.WebhookEvent`; :func:`parse_event` types it).

    ``body`` must be the raw body exactly as received (not re-serialised JSON); ``headers`` may
    use any case. Raises :class:`WebhookVerificationError` when a signature header is missing or
    malformed, the timestamp is more than ``tolerance`` seconds away from ``now`` (default: the
    current time) or no ``v1`` signature matches. Signatures are compared in constant time.
    Raises ``ValueError`` when ``secret`` itself is not a valid ``whsec_`` secret.
    """
    key = _key(secret)
    lowered = {name.lower(): value for name, value in headers.items()}
    message_id = lowered.get("webhook-id")
    timestamp = lowered.get("webhook-timestamp")
    signature_header = lowered.get("webhook-signature")
    if not (message_id and timestamp and signature_header):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    if not timestamp.isdigit():
        raise WebhookVerificationError("webhook-timestamp is not a Unix time in seconds")
    current = time.time() if now is None else now
    if int(timestamp) < current - tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old")
    if int(timestamp) > current + tolerance:
        raise WebhookVerificationError("webhook-timestamp is too new")

    payload = body.encode("utf-8") if isinstance(body, str) else body
    expected = hmac.new(key, f"{message_id}.{timestamp}.".encode() + payload, hashlib.sha256).digest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in _signatures(signature_header)):
        raise WebhookVerificationError("no matching signature")
    try:
        return json.loads(payload)
    except ValueError as error:
        raise WebhookVerificationError("the signed body is not JSON") from error
