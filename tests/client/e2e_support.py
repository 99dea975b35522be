"""Helpers of the end-to-end tests: exportctl as a user runs it, and exports that take a while."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from exports_client import ConflictError, ExportsClient
from tests.stack_process import slow_filters

# The console script pip installed next to this interpreter.
EXPORTCTL = Path(sys.executable).with_name("exportctl")
TIMEOUT_SEC = 60


@dataclass(frozen=True)
class Exportctl:
    """``exportctl`` pointed at ``url`` with ``token`` (EXPORTS_API_URL, EXPORTS_TOKEN)."""

    url: str
    token: str

    def __call__(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run it with ``args``; stdout and stderr are captured (pipes, not a terminal)."""
        env = {**os.environ, "EXPORTS_API_URL": self.url, "EXPORTS_TOKEN": token or self.token}
        return subprocess.run(
            [str(EXPORTCTL), *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False
        )


class SlowTasks:
    """Exports that run for seconds, for tests that need one that has not ended yet.

    Each is cancelled after the test (if it is still running), so that the worker is free and
    the stack stops at once at the end of the session.
    """

    def __init__(self, client: ExportsClient) -> None:
        self._client = client
        self._task_ids: list[str] = []

    def submit(self, variant: int, priority: int | None = None) -> str:
        """Submit one (distinct ``variant``s make distinct requests); returns its id."""
        return self.track(self._client.submit("orders", slow_filters(variant), priority=priority).task_id)

    def track(self, task_id: str) -> str:
        """Cancel ``task_id`` too after the test."""
        self._task_ids.append(task_id)
        return task_id

    def cancel_all(self) -> None:
        """Cancel what has not ended; a task that ended already is fine."""
        for task_id in self._task_ids:
            with suppress(ConflictError):
                self._client.cancel(task_id)
