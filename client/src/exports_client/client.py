"""``ExportsClient``: the exports API over HTTP, with typed results and typed errors."""

from __future__ import annotations

import builtins
import hashlib
import hmac
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as _PydanticValidationError

from exports_client.errors import (
    APIError,
    IntegrityError,
    NetworkError,
    NotFoundError,
    RateLimitedError,
    UnexpectedResponseError,
    WaitTimeoutError,
    error_from_response,
    retry_after_seconds,
)
from exports_client.models import (
    AuditPage,
    CallerView,
    DestinationList,
    DestinationView,
    Every,
    ExportAccepted,
    ExportFormat,
    ExportTypeList,
    ExportTypeView,
    Mailbox,
    MailMessage,
    Permalink,
    ScheduleList,
    ScheduleState,
    ScheduleView,
    StreamTicketView,
    TaskList,
    TaskStatus,
    TaskView,
    UsageList,
    VerificationView,
)
from exports_client.polling import busy_delay, capacity_delay, poll_delay
from exports_client.push import PushUnavailable, follow
from exports_client.webhooks import verify_webhook

DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=5.0)
DEFAULT_WAIT_SEC: Final = 300.0
#: How long :meth:`ExportsClient.submit` waits out ``429`` refusals by default, in all.
DEFAULT_CAPACITY_WAIT_SEC: Final = 600.0
#: Told before each wait for capacity: the refusal, and the seconds about to be waited.
OnRefused = Callable[[RateLimitedError, float], None]
USER_AGENT: Final = f"exports-client/{version('exports-client')}"
_CHUNK_BYTES: Final = 64 * 1024
# GET /v1/audit reads at most this many days per request, and this many records per page.
AUDIT_DAYS_PER_REQUEST: Final = 31
AUDIT_PAGE_MAX: Final = 1000
_Model = TypeVar("_Model", bound=BaseModel)


class _Unset:
    """The default of :meth:`ExportsClient.update_schedule`'s fields: leave it as it is (``None``
    is a value there: no end, no name)."""

    def __repr__(self) -> str:
        return "UNSET"


#: A field :meth:`ExportsClient.update_schedule` is not asked to change.
UNSET: Final = _Unset()
#: ``every``: ``{"minutes": 30}``, ``{"hours": 2}`` or ``{"days": 1}`` (or an :class:`Every`).
Interval = Every | Mapping[str, int]


class ExportsClient:
    """A client of one exports deployment, acting as the owner of ``token``.

    ``transport`` replaces the network (e.g. ``httpx.MockTransport`` in tests); ``sleep`` and
    ``clock`` replace :func:`time.sleep` and :func:`time.monotonic` for :meth:`wait` (and
    :meth:`submit`'s waits for capacity, whose jitter ``random`` draws).
    Use it as a context manager, or call :meth:`close`, to release its connections.
    """

    #: Webhook receivers need no client: this is :func:`exports_client.verify_webhook`.
    verify_webhook = staticmethod(verify_webhook)

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        random: Callable[[], float] = random.random,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._sleep = sleep
        self._clock = clock
        self._random = random
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )

    def __enter__(self) -> ExportsClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections."""
        self._http.close()

    # -- the API -------------------------------------------------------------------------------

    def submit(
        self,
        export_type: str,
        filters: Mapping[str, Any] | None = None,
        *,
        format: ExportFormat | str | None = None,
        priority: int | None = None,
        timeout_sec: int | None = None,
        callback_url: str | None = None,
        csv_bom: bool | None = None,
        csv_formula_guard: bool | None = None,
        timezone: str | None = None,
        wait_for_capacity: float | None = DEFAULT_CAPACITY_WAIT_SEC,
        on_refused: OnRefused | None = None,
        locale: str | None = None,
        csv_dialect: Mapping[str, str] | None = None,
        destinations: Sequence[str] | None = None,
        path_template: str | None = None,
    ) -> ExportAccepted:
        """Submit an export; returns with the new task's id (``202``) once the service accepts it.

        Options left as ``None`` take the service's defaults; the service validates everything
        (:class:`InvalidRequestError` names the ``field``). ``timezone``: an IANA name such as
        ``"Europe/Berlin"``, the zone the file's date-times are written in (default UTC).

        A ``429`` (the exports queued ahead would make this one miss its ``timeout_sec``, too many
        of your exports are active, or the gateway throttles) is waited out: the client sleeps the
        ``Retry-After`` plus up to half again at random and submits again, for at most
        ``wait_for_capacity`` seconds in all (``None`` or ``0``: the :class:`RateLimitedError` is
        raised at once). ``on_refused(error, seconds)`` is told before each wait.

        ``locale`` (``"zh-CN"``, ``"de"``): the language of the headers; ``csv_dialect``: the CSV's
        ``delimiter``, ``line_ending``, ``decimal_separator``, ``encoding`` and ``unencodable``
        (``{"delimiter": ";", "decimal_separator": ","}`` for a German Excel). ``destinations``:
        your tenant's destination ids the COMPLETED file is delivered to, under ``path_template``
        (``"{type}/{date}/{file}"``; docs/destinations.md); the task's ``deliveries`` show how it went.
        """
        options = {
            "format": format,
            "priority": priority,
            "timeout_sec": timeout_sec,
            "callback_url": callback_url,
            "csv_bom": csv_bom,
            "csv_formula_guard": csv_formula_guard,
            "timezone": timezone,
            "locale": locale,
            "csv_dialect": dict(csv_dialect) if csv_dialect is not None else None,
            "destinations": builtins.list(destinations) if destinations is not None else None,
            "path_template": path_template,
        }
        body = {
            "export_type": export_type,
            "filters": dict(filters or {}),
            **{name: value for name, value in options.items() if value is not None},
        }
        return self._parse(
            ExportAccepted,
            self._waiting_for_capacity(
                lambda: self._request("POST", "/v1/exports", json=body), wait_for_capacity, on_refused
            ),
        )

    def get(self, task_id: str) -> TaskView:
        """The task; once COMPLETED it carries a fresh ``download_url``."""
        return self._parse(TaskView, self._request("GET", _task_path(task_id)))

    def list(
        self,
        status: TaskStatus | str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
        schedule_id: str | None = None,
    ) -> TaskList:
        """One page of your tasks, newest first; pass its ``next_token`` for the next page.
        ``schedule_id``: only the runs of that schedule of yours."""
        params = {"status": status, "limit": limit, "next_token": next_token, "schedule_id": schedule_id}
        response = self._request("GET", "/v1/exports", params={k: v for k, v in params.items() if v is not None})
        return self._parse(TaskList, response)

    def iter_tasks(
        self, status: TaskStatus | str | None = None, page_size: int | None = None, schedule_id: str | None = None
    ) -> Iterator[TaskView]:
        """All your tasks (or one schedule's runs), newest first, fetching pages as the iteration goes."""
        next_token: str | None = None
        while True:
            page = self.list(status=status, limit=page_size, next_token=next_token, schedule_id=schedule_id)
            yield from page.items
            if not page.next_token:
                return
            next_token = page.next_token

    def me(self) -> CallerView:
        """Who your token says you are, and what the export types bind from it (``bound``, e.g.
        ``{"tenant_id": "acme"}``: every export you make is made with these values)."""
        return self._parse(CallerView, self._request("GET", "/v1/me"))

    def export_types(self) -> builtins.list[ExportTypeView]:
        """What this deployment can export for you: formats and the JSON Schema of each type's
        filters (types whose access rule you do not pass are not listed)."""
        return self._parse(ExportTypeList, self._request("GET", "/v1/export-types")).items

    def export_type(self, name: str) -> ExportTypeView:
        """One export type; :class:`NotFoundError` (``UNKNOWN_EXPORT_TYPE``) for a name that is no
        type you may use."""
        return self._parse(ExportTypeView, self._request("GET", f"/v1/export-types/{quote(name, safe='')}"))

    def cancel(self, task_id: str) -> TaskView:
        """Cancel a task that has not ended; :class:`ConflictError` (``TASK_NOT_CANCELLABLE``) if it has."""
        return self._parse(TaskView, self._request("POST", f"{_task_path(task_id)}/cancel"))

    def retry(
        self,
        task_id: str,
        wait_for_capacity: float | None = DEFAULT_CAPACITY_WAIT_SEC,
        on_refused: OnRefused | None = None,
    ) -> ExportAccepted:
        """Submit a new task with the parameters of a FAILED, TIMEOUT or CANCELLED one; a ``429``
        is waited out as :meth:`submit` does.

        :class:`ConflictError` (``TASK_NOT_RETRYABLE``) for tasks in other states.
        """
        response = self._waiting_for_capacity(
            lambda: self._request("POST", f"{_task_path(task_id)}/retry"), wait_for_capacity, on_refused
        )
        return self._parse(ExportAccepted, response)

    def retry_delivery(self, task_id: str, destination_id: str) -> TaskView:
        """Try a COMPLETED task's FAILED delivery to ``destination_id`` again (``202``: the task,
        that delivery PENDING again in a new round of attempts; follow it with :meth:`get`).
        :class:`ConflictError` while it is pending (``DELIVERY_IN_PROGRESS``) or once delivered
        (``DELIVERY_ALREADY_DELIVERED``); :class:`GoneError` (``FILE_EXPIRED``) once the file has
        expired."""
        path = f"{_task_path(task_id)}/deliveries/{quote(destination_id, safe='')}/retry"
        return self._parse(TaskView, self._request("POST", path))

    def wait(
        self,
        task_id: str,
        timeout: float = DEFAULT_WAIT_SEC,
        on_update: Callable[[TaskView], None] | None = None,
        max_interval: float | None = None,
        push: bool = True,
    ) -> TaskView:
        """Wait until the task ends and return it, whatever its final status.

        Where the service offers its push channel (and ``push``), the task is followed over a
        WebSocket: one ticket request, then no request until it ends (a dropped connection is
        opened again with a new ticket). Otherwise, or when the channel fails, it is polled:

        Polls are spaced 1, 2, 4, ... up to 30 seconds apart, or longer when the service sends
        ``Retry-After``; answers 429 and 503 are waited out the same way. With ``max_interval``
        (e.g. while a progress bar is shown) no pause between polls of a pending or running task
        is longer than that, whatever its ``Retry-After`` (the ``Retry-After`` of 429 and 503 is
        still honoured in full). ``on_update`` sees every state polled. Raises
        :class:`WaitTimeoutError` once ``timeout`` seconds have passed.
        """
        deadline = self._clock() + timeout
        task: TaskView | None = None
        if push:
            try:
                task = follow(task_id, self._push_ticket, deadline, self._clock, on_update)
            except PushUnavailable:
                task = None
            else:
                if task is not None and task.is_terminal:
                    return task
                if task is None:
                    # Nothing arrived in time (a short timeout can end before the subscription's
                    # first state): one GET, so the error still carries the task's state.
                    task = self._parse(TaskView, self._request("GET", _task_path(task_id)))
                raise WaitTimeoutError(f"export task {task_id} did not end within {timeout:g} s", task_id, task)
        attempt = 0
        while True:
            try:
                response = self._request("GET", _task_path(task_id))
            except APIError as error:
                if not error.retryable:
                    raise
                delay = busy_delay(attempt, error.retry_after, max_interval)
            else:
                task = self._parse(TaskView, response)
                if on_update is not None:
                    on_update(task)
                if task.is_terminal:
                    return task
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                delay = poll_delay(attempt, retry_after, max_interval)
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise WaitTimeoutError(f"export task {task_id} did not end within {timeout:g} s", task_id, task)
            self._sleep(min(delay, remaining))
            attempt += 1

    # -- schedules -----------------------------------------------------------------------------

    def create_schedule(
        self,
        export_type: str,
        filters: Mapping[str, Any] | None = None,
        *,
        cron: str | None = None,
        every: Interval | None = None,
        timezone: str | None = None,
        name: str | None = None,
        start_at: datetime | str | None = None,
        end_at: datetime | str | None = None,
        recipients: Sequence[str] | None = None,
        format: ExportFormat | str | None = None,
        priority: int | None = None,
        timeout_sec: int | None = None,
        callback_url: str | None = None,
        csv_bom: bool | None = None,
        csv_formula_guard: bool | None = None,
        when_empty: str | None = None,
        locale: str | None = None,
        csv_dialect: Mapping[str, str] | None = None,
        destinations: Sequence[str] | None = None,
        path_template: str | None = None,
        idempotency_key: str | None = None,
    ) -> ScheduleView:
        """Create a schedule (``201``): the export runs at each firing of ``cron`` (5 fields) or
        ``every`` (one of minutes, hours, days), in ``timezone`` (IANA; the service's default is
        ``Etc/UTC``). The type's window filters may take a relative value (``previous_week``,
        ``last_n_days:7``...), resolved at each firing; a type with a change column takes
        ``since_last_run`` (a feed). ``when_empty="skip"``: a run of 0 rows keeps no file and
        mails no one. ``idempotency_key`` makes a repeated call
        answer with the schedule the first one created. Options left ``None`` take the service's
        defaults; the service validates everything (:class:`InvalidRequestError` names the
        ``field``, :class:`RateLimitedError` ``SCHEDULE_LIMIT_REACHED`` at the per-user cap).
        """
        options: dict[str, Any] = {
            "name": name,
            "format": format,
            "cron": cron,
            "every": _interval(every),
            "timezone": timezone,
            "start_at": _moment(start_at),
            "end_at": _moment(end_at),
            "recipients": builtins.list(recipients) if recipients is not None else None,
            "priority": priority,
            "timeout_sec": timeout_sec,
            "callback_url": callback_url,
            "csv_bom": csv_bom,
            "csv_formula_guard": csv_formula_guard,
            "when_empty": when_empty,
            "locale": locale,
            "csv_dialect": dict(csv_dialect) if csv_dialect is not None else None,
            "destinations": builtins.list(destinations) if destinations is not None else None,
            "path_template": path_template,
        }
        body = {
            "export_type": export_type,
            "filters": dict(filters or {}),
            **{key: value for key, value in options.items() if value is not None},
        }
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._parse(ScheduleView, self._request("POST", "/v1/schedules", json=body, headers=headers))

    def list_schedules(self, limit: int | None = None, next_token: str | None = None) -> ScheduleList:
        """One page of your schedules, newest first; pass its ``next_token`` for the next page."""
        params = {"limit": limit, "next_token": next_token}
        response = self._request("GET", "/v1/schedules", params={k: v for k, v in params.items() if v is not None})
        return self._parse(ScheduleList, response)

    def iter_schedules(self, page_size: int | None = None) -> Iterator[ScheduleView]:
        """All your schedules, newest first, fetching pages as the iteration goes."""
        next_token: str | None = None
        while True:
            page = self.list_schedules(limit=page_size, next_token=next_token)
            yield from page.items
            if not page.next_token:
                return
            next_token = page.next_token

    def get_schedule(self, schedule_id: str) -> ScheduleView:
        """One of your schedules; :class:`NotFoundError` (``SCHEDULE_NOT_FOUND``) for any other."""
        return self._parse(ScheduleView, self._request("GET", _schedule_path(schedule_id)))

    def update_schedule(
        self,
        schedule_id: str,
        *,
        name: str | _Unset | None = UNSET,
        cron: str | _Unset | None = UNSET,
        every: Interval | _Unset | None = UNSET,
        timezone: str | _Unset = UNSET,
        filters: Mapping[str, Any] | _Unset = UNSET,
        recipients: Sequence[str] | _Unset = UNSET,
        start_at: datetime | str | _Unset | None = UNSET,
        end_at: datetime | str | _Unset | None = UNSET,
        state: ScheduleState | str | _Unset = UNSET,
        when_empty: str | _Unset = UNSET,
        locale: str | _Unset | None = UNSET,
        csv_dialect: Mapping[str, str] | _Unset = UNSET,
        watermark: datetime | str | _Unset | None = UNSET,
        destinations: Sequence[str] | _Unset | None = UNSET,
        path_template: str | _Unset | None = UNSET,
    ) -> ScheduleView:
        """Change what is given (``PATCH``; ``None`` sends ``null``, e.g. ``end_at=None``: no end);
        validated like a create. ``state="PAUSED"`` pauses, ``"ACTIVE"`` resumes. ``watermark``
        moves a feed's next start (``None``: back to its beginning); ``locale=None`` goes back to
        the type's default; ``csv_dialect`` replaces the whole dialect. ``destinations`` replaces
        where each run's file goes (``[]`` or ``None``: nowhere; checked as on a create);
        ``path_template`` where under them (``None``: back to ``{file}``)."""
        changes: dict[str, Any] = {
            "name": name,
            "cron": cron,
            "every": every if isinstance(every, _Unset) else _interval(every),
            "timezone": timezone,
            "filters": filters if isinstance(filters, _Unset) else dict(filters),
            "recipients": recipients if isinstance(recipients, _Unset) else builtins.list(recipients),
            "start_at": start_at if isinstance(start_at, _Unset) else _moment(start_at),
            "end_at": end_at if isinstance(end_at, _Unset) else _moment(end_at),
            "state": state,
            "when_empty": when_empty,
            "locale": locale,
            "csv_dialect": csv_dialect if isinstance(csv_dialect, _Unset) else dict(csv_dialect),
            "watermark": watermark if isinstance(watermark, _Unset) else _moment(watermark),
            "destinations": destinations if isinstance(destinations, _Unset | None) else builtins.list(destinations),
            "path_template": path_template,
        }
        body = {key: value for key, value in changes.items() if not isinstance(value, _Unset)}
        return self._parse(ScheduleView, self._request("PATCH", _schedule_path(schedule_id), json=body))

    def pause_schedule(self, schedule_id: str) -> ScheduleView:
        """Stop the firings (``PAUSED_BY_USER``) until :meth:`resume_schedule`."""
        return self.update_schedule(schedule_id, state=ScheduleState.PAUSED)

    def resume_schedule(self, schedule_id: str) -> ScheduleView:
        """Fire again; clears the pause's reason and the count of consecutive failures."""
        return self.update_schedule(schedule_id, state=ScheduleState.ACTIVE)

    def delete_schedule(self, schedule_id: str) -> None:
        """Delete the schedule (``204``); its past runs stay tasks of yours."""
        self._request("DELETE", _schedule_path(schedule_id))

    def create_destination(
        self,
        name: str,
        target: Mapping[str, Any],
        *,
        encryption: Mapping[str, Any] | None = None,
        use: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> DestinationView:
        """Create a delivery destination of your tenant (``201``; docs/destinations.md):
        ``target`` is ``{"kind": "s3", "bucket", "region", "role_arn", ...}`` or ``{"kind": "sftp",
        "host", "username", "path", ...}``; ``encryption`` ``{"kind": "pgp", "pgp_public_key"}`` or
        ``{"kind": "zip", "zip_password"}``; ``use``: who of the tenant may name it. The answer
        shows an SFTP key destination's ``public_key`` this once, an S3 one's trust policy."""
        body: dict[str, Any] = {"name": name, "target": dict(target)}
        if encryption is not None:
            body["encryption"] = dict(encryption)
        if use is not None:
            body["use"] = dict(use)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._parse(DestinationView, self._request("POST", "/v1/destinations", json=body, headers=headers))

    def list_destinations(self, limit: int | None = None, next_token: str | None = None) -> DestinationList:
        """One page of your tenant's destinations you may use, newest first."""
        params = {"limit": limit, "next_token": next_token}
        response = self._request("GET", "/v1/destinations", params={k: v for k, v in params.items() if v is not None})
        return self._parse(DestinationList, response)

    def get_destination(self, destination_id: str) -> DestinationView:
        """One destination; :class:`NotFoundError` for another tenant's."""
        return self._parse(DestinationView, self._request("GET", _destination_path(destination_id)))

    def update_destination(self, destination_id: str, **changes: Any) -> DestinationView:
        """Change the fields given (``name``, ``use``, ``encryption``, ``prefix``, ``path``,
        ``password``, ``host_key_fingerprint``; the service validates them)."""
        return self._parse(
            DestinationView, self._request("PATCH", _destination_path(destination_id), json=dict(changes))
        )

    def delete_destination(self, destination_id: str) -> None:
        """Delete the destination and its secret (``204``)."""
        self._request("DELETE", _destination_path(destination_id))

    def confirm_destination(self, destination_id: str, host_key_fingerprint: str) -> DestinationView:
        """Pin the host key the service fetched, by the fingerprint it showed."""
        body = {"host_key_fingerprint": host_key_fingerprint}
        return self._parse(
            DestinationView, self._request("POST", f"{_destination_path(destination_id)}/confirm", json=body)
        )

    def verify_destination(self, destination_id: str) -> VerificationView:
        """Write and remove a probe file: ``ok``, or the failed step and what to do."""
        return self._parse(VerificationView, self._request("POST", f"{_destination_path(destination_id)}/verify"))

    def run_schedule(self, schedule_id: str) -> ExportAccepted:
        """Run the schedule's export now, as a new task (``202``), whatever its state."""
        return self._parse(ExportAccepted, self._request("POST", f"{_schedule_path(schedule_id)}/run"))

    def download_latest(self, schedule_id: str, path: str | Path = ".") -> Path:
        """Save the file of the schedule's newest COMPLETED run (as :meth:`download`);
        :class:`NotFoundError` (``NO_LATEST_FILE``) when it has none."""
        task_id = self.get_schedule(schedule_id).latest_task_id
        if task_id is None:
            raise NotFoundError(404, "NO_LATEST_FILE", f"schedule {schedule_id} has no completed run with a file yet")
        return self.download(task_id, path)

    def create_permalink(self, schedule_id: str) -> Permalink:
        """Turn on (or rotate) the schedule's secret permalink: a URL that gives its latest file
        without a token. Shown once; anyone who has it gets the file."""
        return self._parse(Permalink, self._request("POST", f"{_schedule_path(schedule_id)}/permalink"))

    def revoke_permalink(self, schedule_id: str) -> None:
        """Revoke the permalink: its key stops working at once."""
        self._request("DELETE", f"{_schedule_path(schedule_id)}/permalink")

    def schedule_runs(self, schedule_id: str, page_size: int | None = None) -> Iterator[TaskView]:
        """The tasks the schedule started, newest first (``GET /v1/exports?schedule_id=``)."""
        return self.iter_tasks(page_size=page_size, schedule_id=schedule_id)

    def mailbox(self) -> builtins.list[MailMessage]:
        """Local mode only: the mail its embedded SES received, newest first; a deployment on AWS
        has no such route (:class:`NotFoundError`)."""
        return self._parse(Mailbox, self._request("GET", "/local/mailbox")).items

    def list_audit(
        self,
        day_from: date,
        day_to: date,
        *,
        action: str | None = None,
        actor: str | None = None,
        subject: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> AuditPage:
        """One page of your tenant's audit records of the days ``day_from`` to ``day_to`` (at
        most 31); for the deployment's audit admins only (:class:`AuthError` otherwise)."""
        params = {
            "from": day_from.isoformat(),
            "to": day_to.isoformat(),
            "action": action,
            "actor": actor,
            "subject": subject,
            "limit": limit,
            "next_token": next_token,
        }
        response = self._request("GET", "/v1/audit", params={k: v for k, v in params.items() if v is not None})
        return self._parse(AuditPage, response)

    def iter_audit(self, day_from: date, day_to: date, **filters: str | None) -> Iterator[dict[str, Any]]:
        """Every audit record of your tenant from ``day_from`` to ``day_to`` (any number of days,
        31 per request), by day then number, fetching pages as the iteration goes."""
        start = day_from
        while start <= day_to:
            end = min(day_to, start + timedelta(days=AUDIT_DAYS_PER_REQUEST - 1))
            next_token: str | None = None
            while True:
                page = self.list_audit(start, end, limit=AUDIT_PAGE_MAX, next_token=next_token, **filters)
                yield from page.items
                if not page.next_token:
                    break
                next_token = page.next_token
            start = end + timedelta(days=1)

    def audit_usage(self, day_from: date, day_to: date) -> UsageList:
        """Your tenant's usage per day (at most 31 days); for audit admins only."""
        params = {"from": day_from.isoformat(), "to": day_to.isoformat()}
        return self._parse(UsageList, self._request("GET", "/v1/audit/usage", params=params))

    def stream_ticket(self) -> StreamTicketView:
        """A single-use ticket (valid ``expires_in`` seconds) for the push channel at ``url``
        (docs/push.md); :class:`NotFoundError` where the service offers none."""
        return self._parse(StreamTicketView, self._request("POST", "/v1/stream-tickets"))

    def _push_ticket(self) -> tuple[str, str] | None:
        """``(url, ticket)`` for :meth:`wait`; None when the service has no push channel."""
        try:
            given = self.stream_ticket()
        except APIError as error:
            if error.status == 404:
                return None
            raise PushUnavailable(str(error)) from error
        except (NetworkError, UnexpectedResponseError) as error:
            raise PushUnavailable(str(error)) from error
        return given.url, given.ticket

    def download(self, task_id: str, path: str | Path = ".") -> Path:
        """Save a COMPLETED task's file and return where it went.

        ``path`` is the file to write, or a directory to put the file in under the name the
        service gave it: one that exists, or any path ending in ``/`` (created if needed). The
        file is streamed to ``<name>.part`` next to the target, checked against the sha256 the
        service reported and only then moved into place; on a mismatch (:class:`IntegrityError`)
        or any error the partial file is deleted and an existing target is left as it was.
        :class:`ConflictError` (``TASK_NOT_READY``) unless the task is COMPLETED.
        """
        task = self.get(task_id)
        location = self._download_location(task_id)
        if not task.sha256:
            raise UnexpectedResponseError(f"export task {task_id} has no sha256 to check the file against")
        target = Path(path)
        if str(path).endswith(("/", os.sep)) or target.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            # Only the name: a file name must never move the file elsewhere.
            target = target / Path(task.file_name or f"{task_id}.{task.format.value}").name
        partial = target.with_name(f"{target.name}.part")
        try:
            digest = self._stream_to(location, partial)
            if not hmac.compare_digest(digest, task.sha256.lower()):
                raise IntegrityError(
                    f"the downloaded file's sha256 is {digest}, the service reported {task.sha256}",
                    expected=task.sha256,
                    actual=digest,
                )
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return target

    # -- HTTP ----------------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        url = f"{self.base_url}{path}"
        try:
            response = self._http.request(
                method,
                url,
                json=json,
                params=params,
                headers={**(headers or {}), "Authorization": f"Bearer {self._token}"},
            )
        except httpx.TransportError as error:
            raise NetworkError(_describe(error, url), url) from error
        if response.is_error:
            raise error_from_response(response)
        return response

    def _waiting_for_capacity(
        self, send: Callable[[], httpx.Response], most: float | None, on_refused: OnRefused | None
    ) -> httpx.Response:
        """``send()``, again after each ``429`` while the waits add up to at most ``most`` seconds
        (a refused submit created nothing, so sending it again is safe)."""
        waited, attempt = 0.0, 0
        while True:
            try:
                return send()
            except RateLimitedError as refused:
                delay = capacity_delay(attempt, refused.retry_after, self._random())
                if not most or waited + delay > most:
                    raise
                if on_refused is not None:
                    on_refused(refused, delay)
                self._sleep(delay)
                waited, attempt = waited + delay, attempt + 1

    def _download_location(self, task_id: str) -> str:
        response = self._request("GET", f"{_task_path(task_id)}/download")
        location = response.headers.get("Location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise UnexpectedResponseError(
                f"expected a redirect to the file, got {response.status_code}", response.status_code
            )
        return str(httpx.URL(self.base_url).join(location))

    def _stream_to(self, url: str, partial: Path) -> str:
        """Write the file at the presigned ``url`` to ``partial``; returns its sha256 (hex).

        The link is its own credential: the bearer token is not sent to the file store."""
        digest = hashlib.sha256()
        try:
            with self._http.stream("GET", url, headers={"Accept": "*/*"}) as response:
                if response.is_error:
                    raise UnexpectedResponseError(
                        f"the file store answered {response.status_code} {response.reason_phrase}",
                        response.status_code,
                    )
                with partial.open("wb") as out:
                    for chunk in response.iter_bytes(_CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
        except httpx.TransportError as error:
            raise NetworkError(_describe(error, url), url) from error
        return digest.hexdigest()

    @staticmethod
    def _parse(model: type[_Model], response: httpx.Response) -> _Model:
        try:
            return model.model_validate_json(response.content)
        except _PydanticValidationError as error:
            raise UnexpectedResponseError(
                f"the answer to {response.request.method} {response.request.url.path} is not a {model.__name__}: "
                f"{error.errors()[0]['msg']}",
                response.status_code,
            ) from error


def _task_path(task_id: str) -> str:
    return f"/v1/exports/{quote(task_id, safe='')}"


def _destination_path(destination_id: str) -> str:
    return f"/v1/destinations/{quote(destination_id, safe='')}"


def _schedule_path(schedule_id: str) -> str:
    return f"/v1/schedules/{quote(schedule_id, safe='')}"


def _interval(every: Interval | None) -> dict[str, int] | None:
    """``every`` as the API's object (only the unit given)."""
    if every is None:
        return None
    if isinstance(every, Every):
        return every.model_dump(exclude_none=True)
    return dict(every)


def _moment(value: datetime | str | None) -> str | None:
    """A date-time as the API reads it (ISO 8601); a string is sent as it is."""
    return value.isoformat() if isinstance(value, datetime) else value


def _describe(error: httpx.TransportError, url: str) -> str:
    what = "timed out" if isinstance(error, httpx.TimeoutException) else "failed"
    reason = str(error) or type(error).__name__
    return f"the request to {url} {what}: {reason}"
