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
# The 202 answer of a submit.
ACCEPTED = {
    "task_id": "exp_1",
    "status": "PENDING",
    "created_at": "2025-04-01T12:00:00Z",
    "estimated_completion_sec": 3,
    "status_url": "/v1/exports/exp_1",
}


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


_STATUSES = ["pending", "paid", "shipped", "delivered", "cancelled", "refunded"]
_DATE = {"type": "string", "format": "date"}


def export_type_json(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An ExportTypeView as the API sends it, with the filters schema the service derives from a
    declaration (``additionalProperties: false``, ``required``)."""
    return {
        "name": name,
        "description": f"{name} for tests",
        "formats": ["csv", "csv.gz", "xlsx"],
        "filters_schema": {
            "type": "object",
            "title": f"{name}Filters",
            "additionalProperties": False,
            "properties": properties,
            "required": required,
        },
    }


#: The types `make run` serves (as GET /v1/export-types shows exports.toml's), and one with the
#: other kinds of parameters (integer, decimal, date-time, boolean) a declaration can have.
EXPORT_TYPES: list[dict[str, Any]] = [
    export_type_json(
        "orders",
        {
            "date_from": {**_DATE, "description": "First order date included (YYYY-MM-DD)."},
            "date_to": {**_DATE, "description": "Last order date included (YYYY-MM-DD)."},
            "status": {"type": "string", "enum": _STATUSES, "default": None},
            "columns": {
                "type": "array",
                "items": {"type": "string", "enum": ["order_id", "order_date", "amount", "note"]},
                "minItems": 1,
                "maxItems": 4,
                "uniqueItems": True,
                "default": None,
            },
        },
        ["date_from", "date_to"],
    ),
    export_type_json(
        "customers",
        {
            "signed_up_from": _DATE,
            "signed_up_to": _DATE,
            "countries": {
                "type": "array",
                "items": {"type": "string", "pattern": "^(?:[A-Z]{2})$", "maxLength": 200},
                "minItems": 1,
                "maxItems": 50,
                "uniqueItems": True,
                "default": None,
            },
        },
        ["signed_up_from", "signed_up_to"],
    ),
    export_type_json(
        "sales_report",
        {
            "date_from": _DATE,
            "date_to": _DATE,
            "currency": {
                "type": "string",
                "pattern": "^(?:[A-Z]{3})$",
                "maxLength": 200,
                "description": "ISO 4217 code",
            },
        },
        ["date_from", "date_to", "currency"],
    ),
    export_type_json(
        "orders_dynamodb",
        {
            "date_from": _DATE,
            "date_to": _DATE,
            "status": {
                "type": "array",
                "items": {"type": "string", "enum": _STATUSES},
                "minItems": 1,
                "maxItems": 100,
                "uniqueItems": True,
                "default": None,
            },
        },
        ["date_from", "date_to"],
    ),
    export_type_json(
        "invoices",
        {
            "issued_after": {"type": "string", "format": "date-time"},
            "min_total": {"type": ["number", "string"], "format": "decimal", "x-minimum": "0"},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 1000}, {"type": "null"}]},
            "paid": {"type": "boolean"},
            "days": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 31}, "maxItems": 5},
        },
        ["issued_after"],
    ),
]


def serving_types(api: FakeApi) -> FakeApi:
    """``api`` answering GET /v1/export-types with :data:`EXPORT_TYPES`."""
    return api.on("GET", "/v1/export-types", json_response(200, {"items": EXPORT_TYPES}))


class FakeTime:
    """A clock that only moves when the code under test sleeps; every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now
