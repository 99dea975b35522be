"""``Idempotency-Key`` on submit: the same key and body within 24 h replay the first answer
(the records: :mod:`exports.accepting.dynamodb_idempotency`)."""

from __future__ import annotations

import re

from exports.core.config.limits import Admission
from exports.core.errors import InvalidRequest

HEADER = "idempotency-key"
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")


def idempotency_key(headers: dict[str, str]) -> str | None:
    """The request's key, or None; :class:`InvalidRequest` if it is malformed."""
    key = headers.get(HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= Admission.IDEMPOTENCY_KEY_MAX_LENGTH or not _VISIBLE_ASCII.fullmatch(key):
        raise InvalidRequest(
            f"Idempotency-Key must be 1 to {Admission.IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters",
            field="Idempotency-Key",
        )
    return key
