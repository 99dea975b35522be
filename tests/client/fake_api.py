"""A scripted exports API behind ``httpx.MockTransport``: no sockets, every request recorded."""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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

    def __init__(self, schedules: FakeSchedules | None = None) -> None:
        self._scripts: dict[tuple[str, str], list[httpx.Response | Exception]] = defaultdict(list)
        self.requests: list[httpx.Request] = []
        #: Answers the schedules routes a script does not (see :class:`FakeSchedules`).
        self.schedules = schedules

    def on(self, method: str, path: str, *answers: httpx.Response | Exception) -> FakeApi:
        """Answer ``method path`` with ``answers`` in turn (an exception is raised instead)."""
        self._scripts[(method, path)].extend(answers)
        return self

    def handle(self, request: httpx.Request) -> httpx.Response:
        """The MockTransport handler."""
        self.requests.append(request)
        script = self._scripts.get((request.method, request.url.path))
        if not script and self.schedules is not None:
            kept = self.schedules.handle(request)
            if kept is not None:
                return kept
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
        "default_locale": "en",
        "locales": ["en", "de", "ja", "zh-CN"],
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


# -- schedules ---------------------------------------------------------------------------------------

#: The window filters of the fake's types (the contract's demo `orders`: date_from/date_to).
WINDOWS: dict[str, tuple[str, str]] = {"orders": ("date_from", "date_to"), "sales_report": ("date_from", "date_to")}
RELATIVE = re.compile(r"previous_day|previous_week|previous_month|month_to_date|last_n_days:[1-9]\d*")
_SCHEDULE_FIELDS = {
    "name", "export_type", "format", "filters", "priority", "timeout_sec", "callback_url", "csv_bom",
    "csv_formula_guard", "cron", "every", "timezone", "start_at", "end_at", "recipients", "when_empty",
    "destinations", "path_template",
}  # fmt: skip
_PATCH_FIELDS = {
    "name", "cron", "every", "timezone", "filters", "recipients", "start_at", "end_at", "state", "when_empty",
    "watermark", "destinations", "path_template",
}  # fmt: skip
_SCHEDULE_PATH = re.compile(r"/v1/schedules/([^/]+)(/run)?")


def schedule_json(schedule_id: str = "sch_1", **changes: Any) -> dict[str, Any]:
    """A ScheduleView as the contract's API sends it (an ACTIVE weekly orders report)."""
    schedule = {
        "schedule_id": schedule_id,
        "name": "Weekly orders",
        "export_type": "orders",
        "format": "xlsx",
        "filters": {"date_from": "previous_week"},
        "priority": 5,
        "timeout_sec": 300,
        "callback_url": None,
        "csv_bom": False,
        "csv_formula_guard": True,
        "cron": "0 8 * * 1",
        "every": None,
        "timezone": "Europe/Berlin",
        "start_at": None,
        "end_at": None,
        "recipients": ["finance@acme.example"],
        "state": "ACTIVE",
        "paused_reason": None,
        "next_runs": [{"utc": "2025-04-07T06:00:00Z", "local": "2025-04-07T08:00:00+02:00"}],
        "last_run": None,
        "consecutive_failures": 0,
        "when_empty": "send",
        "watermark": None,
        "feed_run": None,
        "latest_task_id": None,
        "permalink": False,
        "created_at": CREATED.isoformat(),
        "updated_at": CREATED.isoformat(),
    }
    return {**schedule, **changes}


def mail_json(message_id: str = "msg_1", **changes: Any) -> dict[str, Any]:
    """One message of GET /local/mailbox."""
    message = {
        "id": message_id,
        "sent_at": CREATED.isoformat(),
        "from": "exports@local.test",
        "to": ["finance@acme.example"],
        "subject": "Weekly orders: 42 rows",
        "text": "Your export exp_1 is ready: http://files.test/exp_1.xlsx",
    }
    return {**message, **changes}


class FakeSchedules:
    """The contract's schedules routes kept in memory, each token seeing only its own schedules
    (another's is a plain 404, as the service answers), plus local mode's mailbox.

    It checks what a client relies on: extra fields, exactly one of ``cron``/``every``, five
    cron fields, IANA zones, relative windows on the type's window only, recipients' domains
    (``ALLOWED_DOMAIN``), the per-user cap (429) and ``Idempotency-Key``. It does not evaluate
    cron: a cron schedule's next runs are :data:`CRON_RUNS`; ``every`` counts from ``now``. A
    ``last_n_days`` window longer than ``MAX_WINDOW_DAYS`` is refused as a type's range would be.
    """

    ALLOWED_DOMAIN = "acme.example"
    MAX_PER_USER = 3
    MAX_WINDOW_DAYS = 366
    CRON_RUNS: ClassVar[tuple[dict[str, str], ...]] = (
        {"utc": "2025-04-07T06:00:00Z", "local": "2025-04-07T08:00:00+02:00"},
    )

    def __init__(self, now: datetime = CREATED) -> None:
        self.now = now
        self.schedules: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, str] = {}
        #: The tasks the schedules started, oldest first, and whose they are (they outlive a
        #: deleted schedule, as the service's tasks do).
        self.tasks: list[dict[str, Any]] = []
        self.task_owners: dict[str, str] = {}
        self.mail: list[dict[str, Any]] = []
        self._keys: dict[tuple[str, str], str] = {}
        self._count = 0

    def handle(self, request: httpx.Request) -> httpx.Response | None:
        """The answer to a schedules, runs or mailbox request; None for any other route."""
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        path, method = request.url.path, request.method
        if path == "/local/mailbox" and method == "GET":
            return json_response(200, {"items": list(reversed(self.mail))})
        if path == "/v1/exports" and method == "GET":
            return self._runs(token, request.url.params.get("schedule_id"))
        if path == "/v1/schedules":
            if method == "POST":
                return self._create(token, request)
            if method == "GET":
                return self._list(token, request)
        run = self._run_task(token, path) if method == "GET" else None
        if run is not None:
            return json_response(200, run)
        matched = _SCHEDULE_PATH.fullmatch(path)
        return self._one(token, method, matched.group(1), bool(matched.group(2)), request) if matched else None

    def _one(self, token: str, method: str, schedule_id: str, run: bool, request: httpx.Request) -> httpx.Response:
        if self.owners.get(schedule_id) != token:
            return error_response(404, "SCHEDULE_NOT_FOUND", f"schedule {schedule_id} not found")
        if run and method == "POST":
            return self._run(schedule_id)
        if method == "GET" and not run:
            return json_response(200, self.schedules[schedule_id])
        if method == "PATCH" and not run:
            return self._update(schedule_id, json.loads(request.content or b"{}"))
        if method == "DELETE" and not run:
            del self.schedules[schedule_id], self.owners[schedule_id]
            return httpx.Response(204)
        return error_response(405, "METHOD_NOT_ALLOWED", f"{method} {request.url.path}")

    def _create(self, token: str, request: httpx.Request) -> httpx.Response:
        key = request.headers.get("Idempotency-Key")
        if key and (token, key) in self._keys:
            return json_response(201, self.schedules[self._keys[(token, key)]])
        body = json.loads(request.content)
        problem = self._invalid(body, _SCHEDULE_FIELDS, create=True)
        if problem:
            return problem
        if sum(owner == token for owner in self.owners.values()) >= self.MAX_PER_USER:
            return error_response(429, "SCHEDULE_LIMIT_REACHED", f"at most {self.MAX_PER_USER} schedules per user")
        self._count += 1
        schedule_id = f"sch_{self._count:04d}"
        stamp = (self.now + timedelta(seconds=self._count)).isoformat()
        schedule = schedule_json(
            schedule_id,
            **{"name": None, "format": "csv", "recipients": [], "timezone": "Etc/UTC"},
            **{"cron": None, "every": None, "created_at": stamp, "updated_at": stamp},
        )
        schedule.update(body)
        schedule["next_runs"] = self._next_runs(schedule)
        self.schedules[schedule_id], self.owners[schedule_id] = schedule, token
        if key:
            self._keys[(token, key)] = schedule_id
        return json_response(201, schedule, {"Location": f"/v1/schedules/{schedule_id}"})

    def _update(self, schedule_id: str, body: dict[str, Any]) -> httpx.Response:
        schedule = {**self.schedules[schedule_id], **body}
        problem = self._invalid(schedule, _SCHEDULE_FIELDS | {"state"}, create=False, given=set(body))
        if problem:
            return problem
        # As the service: no destinations, no template; a template of null is the default.
        if not schedule.get("destinations"):
            schedule["destinations"], schedule["path_template"] = [], None
        elif schedule.get("path_template") is None:
            schedule["path_template"] = "{file}"
        if body.get("state") == "PAUSED":
            schedule["paused_reason"] = {"code": "PAUSED_BY_USER", "message": "paused by its owner"}
        elif body.get("state") == "ACTIVE":
            schedule["paused_reason"], schedule["consecutive_failures"] = None, 0
        schedule["next_runs"] = self._next_runs(schedule)
        schedule["updated_at"] = (self.now + timedelta(hours=1)).isoformat()
        self.schedules[schedule_id] = schedule
        return json_response(200, schedule)

    def _invalid(
        self, body: dict[str, Any], allowed: set[str], *, create: bool, given: set[str] | None = None
    ) -> httpx.Response | None:
        extra = sorted(set(given if given is not None else body) - (allowed if create else _PATCH_FIELDS))
        if extra:
            return error_response(422, "VALIDATION_ERROR", f"{extra[0]}: extra fields not permitted", field=extra[0])
        if (body.get("cron") is None) == (body.get("every") is None):
            return error_response(422, "VALIDATION_ERROR", "give exactly one of cron and every", field="cron")
        if body.get("cron") is not None and len(str(body["cron"]).split()) != 5:
            return error_response(422, "INVALID_CRON", "a cron expression has 5 fields", field="cron")
        try:
            ZoneInfo(str(body.get("timezone") or "Etc/UTC"))
        except (ZoneInfoNotFoundError, ValueError):
            return error_response(422, "UNKNOWN_TIMEZONE", "not an IANA zone name", field="timezone")
        window = WINDOWS.get(str(body.get("export_type")), ())
        for name, value in (body.get("filters") or {}).items():
            if isinstance(value, str) and RELATIVE.fullmatch(value) and name not in window:
                return error_response(422, "VALIDATION_ERROR", "a relative window here", field=f"filters.{name}")
            # As a type's longest range: the window resolves to more days than it allows.
            if isinstance(value, str) and value.startswith("last_n_days:") and int(value[12:]) > self.MAX_WINDOW_DAYS:
                message = f"at most {self.MAX_WINDOW_DAYS} days"
                return error_response(422, "VALIDATION_ERROR", message, field=f"filters.{name}")
        for index, address in enumerate(body.get("recipients") or []):
            if not str(address).endswith(f"@{self.ALLOWED_DOMAIN}"):
                return error_response(
                    422, "RECIPIENT_NOT_ALLOWED", f"{address} is not allowed", field=f"recipients[{index}]"
                )
        return None

    def _next_runs(self, schedule: dict[str, Any]) -> list[dict[str, str]]:
        if schedule["state"] != "ACTIVE":
            return []
        if schedule.get("cron"):
            return list(self.CRON_RUNS)
        ((unit, count),) = ((unit, count) for unit, count in schedule["every"].items() if count is not None)
        step = timedelta(**{unit: count})
        zone = ZoneInfo(schedule["timezone"])
        moments = [self.now + step * n for n in range(1, 6)]
        return [
            {"utc": moment.isoformat().replace("+00:00", "Z"), "local": moment.astimezone(zone).isoformat()}
            for moment in moments
        ]

    def _list(self, token: str, request: httpx.Request) -> httpx.Response:
        own = [schedule for schedule_id, schedule in self.schedules.items() if self.owners[schedule_id] == token]
        own.sort(key=lambda schedule: schedule["created_at"], reverse=True)
        limit = int(request.url.params.get("limit", "20"))
        start = int(request.url.params.get("next_token", "0"))
        next_token = str(start + limit) if start + limit < len(own) else None
        return json_response(200, {"items": own[start : start + limit], "next_token": next_token})

    def _run(self, schedule_id: str) -> httpx.Response:
        schedule = self.schedules[schedule_id]
        task_id = f"exp_{schedule_id}_{sum(task['schedule_id'] == schedule_id for task in self.tasks) + 1}"
        self.tasks.append(
            task_json(
                task_id,
                "PENDING",
                export_type=schedule["export_type"],
                format=schedule["format"],
                filters={"date_from": "2025-03-24", "date_to": "2025-03-30"},
                schedule_id=schedule_id,
                scheduled_for=self.now.isoformat(),
            )
        )
        self.task_owners[task_id] = self.owners[schedule_id]
        return json_response(202, {**ACCEPTED, "task_id": task_id, "status_url": f"/v1/exports/{task_id}"})

    def _run_task(self, token: str, path: str) -> dict[str, Any] | None:
        """``GET /v1/exports/{id}`` of one of the token's runs."""
        task_id = path.removeprefix("/v1/exports/")
        if not path.startswith("/v1/exports/") or self.task_owners.get(task_id) != token:
            return None
        return next(task for task in self.tasks if task["task_id"] == task_id)

    def _runs(self, token: str, schedule_id: str | None) -> httpx.Response:
        """The token's tasks (here: its schedules' runs), or one schedule's; newest first. As the
        service, another user's schedule has no runs that user may see."""
        own = [task for task in self.tasks if self.task_owners[task["task_id"]] == token]
        chosen = [task for task in own if schedule_id is None or task["schedule_id"] == schedule_id]
        return json_response(200, {"items": chosen[::-1], "next_token": None})


# -- over real HTTP ------------------------------------------------------------------------------------

_CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".map": "application/json"}


@contextmanager
def serving(api: FakeApi, console: Path | None = None) -> Iterator[str]:
    """``api`` on a real HTTP server on 127.0.0.1 (a free port), and ``console``'s files at
    /console/ as local mode serves them; yields the base URL. For a browser driving the page."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            path = self.path.split("?", 1)[0]
            if console is not None and path.startswith("/console/"):
                name = path.removeprefix("/console/") or "index.html"
                file = (console / name).resolve()
                if file.parent != console.resolve() or not file.is_file():
                    self._send(httpx.Response(404))
                    return
                content_type = _CONTENT_TYPES.get(file.suffix, "application/octet-stream")
                self._send(httpx.Response(200, content=file.read_bytes(), headers={"Content-Type": content_type}))
                return
            length = int(self.headers.get("Content-Length") or 0)
            request = httpx.Request(
                self.command,
                f"http://{self.headers.get('Host', '127.0.0.1')}{self.path}",
                headers=dict(self.headers.items()),
                content=self.rfile.read(length) if length else b"",
            )
            self._send(api.handle(request))

        def _send(self, response: httpx.Response) -> None:
            body = response.read()
            self.send_response(response.status_code)
            for name, value in response.headers.items():
                if name.lower() not in {"content-length", "transfer-encoding"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the requests are in ``api.requests``."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
