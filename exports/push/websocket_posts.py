"""Messages to WebSocket connections through API Gateway's management API."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from exports.core.aws.errors import AwsError, translated
from exports.push.model import ConnectionGone

_GONE = "GoneException"


class ApiGatewayPoster:
    """:class:`exports.push.ports.Poster` on an ``apigatewaymanagementapi`` client (whose
    endpoint is the WebSocket API stage's https URL)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def post(self, connection_id: str, message: Mapping[str, Any]) -> None:
        """Send ``message`` as JSON; :class:`ConnectionGone` when the connection is gone."""
        try:
            with translated("post to connection"):
                self._client.post_to_connection(ConnectionId=connection_id, Data=json.dumps(message).encode())
        except AwsError as error:
            if error.aws_code == _GONE:
                raise ConnectionGone(connection_id) from error
            raise
