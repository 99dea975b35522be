"""Signing per the Standard Webhooks specification.

``webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` with the key that
follows ``whsec_`` in the secret. A handful of stdlib lines: the reference package pulls in an
HTTP client and more, which the callback function does not need.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` + 24 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def _key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``v1,<signature>`` value for one message."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }
