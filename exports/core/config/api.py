"""The HTTP API's paths and its CORS rules."""

from __future__ import annotations

import re
from typing import Final

API_VERSION_PREFIX: Final = "/v1"
OPENAPI_PATH: Final = "/openapi.json"
DOCS_PATH: Final = "/docs"
# A schedule's latest file through its secret permalink (``?key=``; the key stays out of the
# access log, which records the path): for tools that cannot send a token.
PERMALINK_PATH: Final = API_VERSION_PREFIX + "/permalinks/{schedule_id}"
# Served to GET without a token (on AWS and in local mode): the API's own documentation, and the
# permalinks (their key is their credential).
PUBLIC_PATHS: Final = (OPENAPI_PATH, DOCS_PATH, PERMALINK_PATH)


def is_public(path: str) -> bool:
    """Whether GET on ``path`` is served without a token (a ``{name}`` matches one segment)."""
    return any(re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(public)), path) for public in PUBLIC_PATHS)


class Cors:
    """The HTTP API's CORS rules when ``cors_allowed_origins`` is set: every request header the
    API reads may be sent cross-origin (the token, the JSON body's type, ``Idempotency-Key``;
    header names are case-insensitive), and the response headers a client reads beyond the
    CORS-safelisted ones may be read."""

    ALLOW_METHODS: Final = ("GET", "POST", "OPTIONS")
    ALLOW_HEADERS: Final = ("authorization", "content-type", "idempotency-key")
    EXPOSE_HEADERS: Final = ("location", "retry-after")
    MAX_AGE_SEC: Final = 3600
