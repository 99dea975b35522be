"""Signing a download link: what it reads (the API's reads, the callback's payload, the push channel)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from exports.core.errors import TaskNotReady
from exports.core.ports import ResultStore
from exports.core.task import Task


class DownloadLinkSettings(Protocol):
    """The setting a download link reads."""

    @property
    def download_url_ttl_sec(self) -> int:
        """How long a presigned link works."""
        ...


class DownloadLinks(Protocol):
    """What signing a download link reads (the API's reads, the callback's payload)."""

    @property
    def settings(self) -> DownloadLinkSettings:
        """The link's lifetime."""
        ...

    @property
    def results(self) -> ResultStore:
        """The result files."""
        ...

    @property
    def clock(self) -> Callable[[], datetime]:
        """The current time."""
        ...


def download_link(task: Task, deps: DownloadLinks) -> tuple[str, datetime]:
    """A fresh presigned link to a COMPLETED task's file and when it stops working."""
    if not task.has_file or task.result is None:
        status = "COMPLETED without a file (an empty run its schedule skips)" if task.empty_skipped else None
        raise TaskNotReady(task.task_id, status or task.status.value)
    ttl = deps.settings.download_url_ttl_sec
    url = deps.results.presign_download(task.result.key, task.result.file_name, ttl)
    return url, deps.clock() + timedelta(seconds=ttl)
