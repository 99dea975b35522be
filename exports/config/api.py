"""The HTTP API's paths and its CORS rules."""

from __future__ import annotations

from typing import Final

API_VERSION_PREFIX: Final = "/v1"
OPENAPI_PATH: Final = "/openapi.json"
DOCS_PATH: Final = "/docs"
# The API's own documentation, served to GET without a token (on AWS and in local mode).
PUBLIC_PATHS: Final = (OPENAPI_PATH, DOCS_PATH)


class Cors:
    """The HTTP API's CORS rules when ``cors_allowed_origins`` is set: every request header the
    API reads may be sent cross-origin (the token, the JSON body's type, ``Idempotency-Key``;
    header names are case-insensitive), and the response headers a client reads beyond the
    CORS-safelisted ones may be read."""

    ALLOW_METHODS: Final = ("GET", "POST", "OPTIONS")
    ALLOW_HEADERS: Final = ("authorization", "content-type", "idempotency-key")
    EXPOSE_HEADERS: Final = ("location", "retry-after")
    MAX_AGE_SEC: Final = 3600
