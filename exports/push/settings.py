"""The settings of the two push-channel functions (the WebSocket routes, the stream consumer)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from exports.config import Env, Results
from exports.settings import RegistrySettings


class PushSettings(RegistrySettings):
    """The connections table, the results bucket (completed events carry a download link), the
    WebSocket API's management endpoint, and the JWT issuer and audience ``bearer.`` is checked
    against. The registry's settings too: tenancy-bound values are bound as at submit."""

    REQUIRED: ClassVar[Mapping[str, str]] = {
        **RegistrySettings.REQUIRED,
        "connections_table": Env.CONNECTIONS_TABLE,
        "results_bucket": Env.RESULTS_BUCKET,
    }
    OPTIONAL: ClassVar[Mapping[str, str]] = {
        **RegistrySettings.OPTIONAL,
        "websocket_endpoint": Env.WEBSOCKET_ENDPOINT,
        "jwt_issuer": Env.JWT_ISSUER,
        "jwt_audience": Env.JWT_AUDIENCE,
        "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
    }

    connections_table: str
    results_bucket: str
    # Read by boto3 itself (the management API client's endpoint); here so the function gets it.
    websocket_endpoint: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    download_url_ttl_sec: int = Field(default=Results.DOWNLOAD_URL_TTL_SEC, ge=60, le=3600)
