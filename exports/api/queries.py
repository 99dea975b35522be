"""Reading tasks on behalf of their owner; other users' tasks do not exist for the caller."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from exports.accepting.dependencies import ApiDependencies
from exports.core.caller import Caller, CallerRefused
from exports.core.config.limits import Limits
from exports.core.download_links import download_link
from exports.core.errors import InvalidRequest, TaskNotFound, UnknownExportType
from exports.core.export_type import AnyExportType
from exports.core.ids import is_task_id
from exports.core.ports import TaskPage
from exports.core.status import TaskStatus
from exports.core.task import Task


@dataclass(frozen=True)
class TaskDetails:
    """The caller's task, with a download link and the link's expiry once it is COMPLETED."""

    task: Task
    download_url: str | None = None
    download_expires_at: datetime | None = None


def owned_task(task_id: str, user_id: str, deps: ApiDependencies) -> Task:
    """The caller's task; :class:`TaskNotFound` for unknown ids, other users' tasks and expired
    tasks alike."""
    task = deps.tasks.get(task_id) if is_task_id(task_id) else None
    # Past its retention a task is gone, even while DynamoDB's TTL has not deleted it yet.
    if task is None or task.user_id != user_id or task.expires_at <= deps.clock():
        raise TaskNotFound(task_id)
    return task


def task_details(task_id: str, user_id: str, deps: ApiDependencies) -> TaskDetails:
    """The caller's task, with a download link once it is COMPLETED."""
    task = owned_task(task_id, user_id, deps)
    if task.has_file:
        url, expires_at = download_link(task, deps)
        return TaskDetails(task, url, expires_at)
    return TaskDetails(task)


def list_tasks(
    user_id: str,
    deps: ApiDependencies,
    limit: int = Limits.LIST_PAGE_DEFAULT,
    status: TaskStatus | None = None,
    cursor: str | None = None,
    schedule_id: str | None = None,
) -> TaskPage:
    """A page of the caller's tasks (only the runs of ``schedule_id`` when given: the caller's
    own, so another user's schedule lists nothing), newest first, without tasks past their
    retention."""
    page = deps.tasks.list_for_user(user_id, limit, status, cursor, schedule_id)
    now = deps.clock()
    return TaskPage(tasks=[task for task in page.tasks if task.expires_at > now], cursor=page.cursor)


def export_types(caller: Caller, deps: ApiDependencies) -> list[AnyExportType]:
    """What ``caller`` can export (the types whose access rule they pass)."""
    return deps.registry.for_caller(caller)


def caller_bindings(caller: Caller, deps: ApiDependencies) -> dict[str, Any]:
    """What the types ``caller`` may use bind from the token, by name."""
    return bindings_of(caller, deps.registry.for_caller(caller))


def bindings_of(caller: Caller, types: list[AnyExportType]) -> dict[str, Any]:
    """What ``types`` bind from ``caller``'s token, by name (a type that refuses the token,
    lacking a claim it needs, binds nothing)."""
    bound: dict[str, Any] = {}
    for export_type in types:
        try:
            bound.update(export_type.bind_caller(caller))
        except CallerRefused:
            continue
    return bound


def documented_export_types(deps: ApiDependencies) -> list[AnyExportType]:
    """The types the OpenAPI document describes: those every caller may use (it is served
    without a token, so a type restricted to some callers is not named in it)."""
    return deps.registry.open_to_everyone()


def export_type(name: str, caller: Caller, deps: ApiDependencies) -> AnyExportType:
    """One type ``caller`` can export; :class:`UnknownExportType` for any other name, whether no
    type or a type refused to the caller has it."""
    try:
        return deps.registry.get(name, caller)
    except InvalidRequest as error:
        raise UnknownExportType(error.message) from None
