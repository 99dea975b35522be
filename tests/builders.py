"""Builders for the events API Gateway and SQS send to our functions."""

import json
import uuid
from typing import Any


def http_event(
    method: str,
    path: str,
    body: Any = None,
    user: str | None = "alice",
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    raw_body: str | None = None,
    claims: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, with the JWT authorizer's claims for ``user``
    (``sub``, and ``claims`` besides)."""
    all_headers = {"content-type": "application/json", **(headers or {})}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": all_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.example.com",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "1.2.3.4", "userAgent": "t"},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if raw_body is not None:
        event["body"] = raw_body
    elif body is not None:
        event["body"] = json.dumps(body)
    if user is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": user, **(claims or {})}, "scopes": None}}
    return event


class FakeContext:
    """The Lambda context attributes Powertools reads."""

    function_name = "test-function"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id = "test-request"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 900_000
