"""Following an accepted task to its end (--wait, --download) and saving its file, as every
command that starts an export does."""

from __future__ import annotations

import argparse
import os
from typing import Final

from exports_client.client import ExportsClient
from exports_client.models import ExportAccepted, TaskStatus, TaskView
from exports_client.output import ExitCode, Output
from exports_client.render import ProgressReporter, human_size, task_details

#: While exportctl waits (bar or lines) no pause between polls of a running export is longer: the
#: worker records progress every 2 s, so the bar moves with it and sees the end within 2 s.
LIVE_POLL_SEC: Final = 2.0

#: ``--timeout N --wait`` waits N s and this much longer, for the service to record the timeout.
WAIT_GRACE_SEC: Final = 60.0


def follow(
    client: ExportsClient, accepted: ExportAccepted, args: argparse.Namespace, output: Output, what: str, wait: float
) -> ExitCode:
    """Print the accepted task, or with ``--wait``/``--download`` follow it to its end."""
    if not (args.wait or args.download):
        hint = f"follow it with: exportctl status {accepted.task_id}"
        output.result(accepted, f"{what} ({accepted.status.value}); {hint}")
        return ExitCode.OK
    output.note(f"{what}; waiting for it (Ctrl-C stops waiting, not the export)")
    try:
        with ProgressReporter(output.err) as progress:
            task = client.wait(accepted.task_id, timeout=wait, on_update=progress.update, max_interval=LIVE_POLL_SEC)
    except KeyboardInterrupt:
        output.note(f"stopped waiting; the export goes on: exportctl status {accepted.task_id}")
        raise
    if task.status is not TaskStatus.COMPLETED:
        reason = f": {task.error.code}: {task.error.message}" if task.error else ""
        output.note(f"export {task.task_id} ended {task.status.value}{reason}")
        output.result(task, task_details(task))
        return ExitCode.TASK_NOT_COMPLETED
    if not args.download:
        output.result(task, task_details(task))
        return ExitCode.OK
    return save_file(client, task, args.download, output)


def save_file(client: ExportsClient, task: TaskView, folder: str, output: Output) -> ExitCode:
    path = client.download(task.task_id, folder.rstrip("/" + os.sep) + os.sep)
    size = human_size(task.size_bytes) if task.size_bytes is not None else "?"
    output.note(f"{task.task_id}: {task.rows or 0:,} rows, {size}, sha256 verified")
    output.result({**task.model_dump(mode="json"), "path": str(path)}, str(path))
    return ExitCode.OK
