"""A scripted exports API behind ``httpx.MockTransport``: no sockets, every request recorded."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

BASE_URL = "http://api.test"
TOKEN = "t0ken"
CREATED = datetime(2025, 4, 1, 12, 0, tzinfo=UTC)


def task_json(task_id: str = "exp_1", status: str = "RUNNING", **changes: Any) -> dict[str, Any]:
    """A TaskView as the API sends it."""
    task = {
        "task_id": task_id,
        "export_type": "orders",
        "format": "csv",
        "filters": {"date_from": "2025-03-01", "date_to": "2025-03-31"},
        "priority": 5,
        "status": status,
        "progress": 0,
        "rows_written": 0,
        "attempt": 1,
        "retry_count": 0,
        "max_retries": 3,
        "created_at": CREATED.isoformat(),
        "expires_at": (CREATED + timedelta(days=1)).isoformat(),
        "deadline": (CREATED + timedelta(minutes=5)).isoformat(),
    }
    return {**task, **changes}


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    """A JSON answer."""
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )


def error_response(status: int, code: str, message: str = "nope", **extra: Any) -> httpx.Response:
    """An error answer in the service's shape; ``headers=`` adds headers, other keywords go into the error."""
    headers = extra.pop("headers", None)
    return json_response(status, {"error": {"code": code, "message": message, **extra}}, headers)


class FakeApi:
    """Answers requests by method and path from scripts; the last answer of a script repeats."""

    def __init__(self) -> None:
        self._scripts: dict[tuple[str, str], list[httpx.Response | Exception]] = defaultdict(list)
        self.requests: list[httpx.Request] = []

    def on(self, method: str, path: str, *answers: httpx.Response | Exception) -> FakeApi:
        """Answer ``method path`` with ``answers`` in turn (an exception is raised instead)."""
        self._scripts[(method, path)].extend(answers)
        return self

    def handle(self, request: httpx.Request) -> httpx.Response:
        """The MockTransport handler."""
        self.requests.append(request)
        script = self._scripts.get((request.method, request.url.path))
        if not script:
            return error_response(404, "NOT_FOUND", f"no script for {request.method} {request.url.path}")
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def transport(self) -> httpx.MockTransport:
        """The transport to give ExportsClient or exportctl."""
        return httpx.MockTransport(self.handle)

    def paths(self) -> list[str]:
        """``METHOD path`` of every request so far."""
        return [f"{request.method} {request.url.path}" for request in self.requests]
