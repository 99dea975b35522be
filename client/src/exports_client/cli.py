"""``exportctl``: submit, follow, list, cancel and download exports from a terminal or a script.

Configured by ``EXPORTS_API_URL`` (default: ``make run``'s http://127.0.0.1:8000) and
``EXPORTS_TOKEN``, or by ``--url`` and ``--token``. Results go to stdout (tables, or JSON with
``--json``); progress and messages go to stderr. The exit code says what happened: see
:class:`ExitCode`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from enum import IntEnum
from itertools import islice
from typing import Final, TextIO

import httpx
from pydantic import BaseModel
from rich.console import RenderableType

from exports_client.client import DEFAULT_WAIT_SEC, ExportsClient
from exports_client.errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ExportsError,
    IntegrityError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    WaitTimeoutError,
)
from exports_client.models import ExportFormat, TaskStatus, TaskView
from exports_client.render import ProgressReporter, human_size, show, task_details, task_table, to_json, types_view

DEFAULT_URL: Final = "http://127.0.0.1:8000"
URL_ENV: Final = "EXPORTS_API_URL"
TOKEN_ENV: Final = "EXPORTS_TOKEN"
LIST_PAGE_MAX: Final = 100


class ExitCode(IntEnum):
    """What ``exportctl`` exits with (docs/client.md has the same table)."""

    OK = 0
    #: Anything else, e.g. the file could not be written.
    FAILURE = 1
    #: Bad command line (argparse's own code).
    USAGE = 2
    #: No token, or the service refused it (401/403).
    AUTH = 3
    #: No such task (404).
    NOT_FOUND = 4
    #: The service refused the request as it is: invalid input (400/413/415/422) or the task's
    #: state does not allow it (409).
    REJECTED = 5
    #: Too many requests (429): try again after the time the message gives.
    RATE_LIMITED = 6
    #: The service failed or is unavailable (5xx), could not be reached, or sent something
    #: unexpected (including a download whose sha256 did not match).
    UNAVAILABLE = 7
    #: ``--wait``: the task ended FAILED, TIMEOUT or CANCELLED.
    TASK_NOT_COMPLETED = 8
    #: ``--wait``: the task had not ended when ``--timeout`` ran out (it goes on on the server).
    TIMEOUT = 9
    #: Ctrl-C.
    INTERRUPTED = 130


_EXIT_BY_ERROR: Final[tuple[tuple[type[ExportsError], ExitCode], ...]] = (
    (AuthenticationError, ExitCode.AUTH),
    (NotFoundError, ExitCode.NOT_FOUND),
    (ConflictError, ExitCode.REJECTED),
    (InvalidRequestError, ExitCode.REJECTED),
    (RateLimitedError, ExitCode.RATE_LIMITED),
    (ServerError, ExitCode.UNAVAILABLE),
    (APIError, ExitCode.REJECTED),
    (WaitTimeoutError, ExitCode.TIMEOUT),
)


def exit_code_for(error: ExportsError) -> ExitCode:
    """The exit code for an SDK error."""
    for error_type, code in _EXIT_BY_ERROR:
        if isinstance(error, error_type):
            return code
    return ExitCode.UNAVAILABLE


def _hint(error: ExportsError) -> str | None:
    if isinstance(error, NetworkError):
        return f"Is the exports API running there? Set {URL_ENV} or --url."
    if isinstance(error, AuthenticationError):
        return f"Check {TOKEN_ENV} or --token."
    if isinstance(error, APIError) and error.retryable:
        when = f"in {math.ceil(error.retry_after)} s" if error.retry_after is not None else "in a little while"
        return f"Retry {when}."
    if isinstance(error, WaitTimeoutError):
        return f"The export goes on on the server: exportctl status {error.task_id}"
    if isinstance(error, IntegrityError):
        return "Nothing was saved; download it again."
    return None


def describe(error: ExportsError) -> str:
    """What went wrong and what to do about it."""
    message = str(error) if isinstance(error, APIError) else error.message
    hint = _hint(error)
    return f"{message.rstrip('.')}. {hint}" if hint else message


class _Output:
    """stdout for results, stderr for messages; tables for people, JSON with ``--json``."""

    def __init__(self, as_json: bool, out: TextIO, err: TextIO) -> None:
        self.as_json = as_json
        self.out = out
        self.err = err

    def result(self, data: BaseModel | Sequence[BaseModel] | dict[str, object], view: RenderableType | str) -> None:
        if self.as_json:
            print(to_json(data), file=self.out)
        elif isinstance(view, str):
            print(view, file=self.out)
        else:
            show(view, self.out)

    def note(self, message: str) -> None:
        print(message, file=self.err, flush=True)


# -- commands --------------------------------------------------------------------------------------


def _submit(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    filters: dict[str, object] = {}
    if args.date_from:
        filters["date_from"] = args.date_from
    if args.date_to:
        filters["date_to"] = args.date_to
    if args.status:
        filters["status"] = args.status
    if args.columns:
        filters["columns"] = args.columns
    accepted = client.submit(args.export_type, filters, format=args.format, priority=args.priority)
    if accepted.deduplicated:
        output.note(f"an identical export is already active: {accepted.task_id} ({accepted.status.value})")
    if not (args.wait or args.download):
        follow = f"follow it with: exportctl status {accepted.task_id}"
        output.result(accepted, f"submitted {accepted.task_id} ({accepted.status.value}); {follow}")
        return ExitCode.OK
    output.note(f"submitted {accepted.task_id}; waiting for it (Ctrl-C stops waiting, not the export)")
    try:
        with ProgressReporter(output.err) as progress:
            task = client.wait(accepted.task_id, timeout=args.timeout, on_update=progress.update)
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
    return _save(client, task, args.download, output)


def _save(client: ExportsClient, task: TaskView, folder: str, output: _Output) -> ExitCode:
    path = client.download(task.task_id, folder.rstrip("/" + os.sep) + os.sep)
    size = human_size(task.size_bytes) if task.size_bytes is not None else "?"
    output.note(f"{task.task_id}: {task.rows or 0:,} rows, {size}, sha256 verified")
    output.result({**task.model_dump(mode="json"), "path": str(path)}, str(path))
    return ExitCode.OK


def _status(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    task = client.get(args.task_id)
    output.result(task, task_details(task))
    if task.status is TaskStatus.COMPLETED and not output.as_json:
        output.note(f"download it with: exportctl download {task.task_id}")
    return ExitCode.OK


def _list(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    page_size = min(args.limit, LIST_PAGE_MAX)
    tasks = list(islice(client.iter_tasks(status=args.status, page_size=page_size), args.limit))
    output.result(tasks, task_table(tasks) if tasks else "no exports")
    return ExitCode.OK


def _cancel(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    task = client.cancel(args.task_id)
    output.result(task, task_details(task))
    return ExitCode.OK


def _download(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    task = client.get(args.task_id)
    path = client.download(task.task_id, args.output)
    output.result({**task.model_dump(mode="json"), "path": str(path)}, str(path))
    return ExitCode.OK


def _types(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    export_types = client.export_types()
    output.result(export_types, types_view(export_types))
    return ExitCode.OK


# -- the command line ------------------------------------------------------------------------------

_EPILOG = f"""\
configuration:
  {URL_ENV}   the API (default {DEFAULT_URL}, what `make run` serves); or --url
  {TOKEN_ENV}     your bearer token; or --token

exit codes:
  0 ok  1 other failure (e.g. cannot write the file)  2 usage  3 authentication
  4 not found  5 rejected (invalid request or conflicting state)  6 rate limited
  7 service failed or unreachable  8 export ended but not COMPLETED  9 --wait timed out
  130 interrupted
"""


def _columns(value: str) -> list[str]:
    columns = [column.strip() for column in value.split(",") if column.strip()]
    if not columns:
        raise argparse.ArgumentTypeError("give column names separated by commas")
    return columns


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The ``exportctl`` argument parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get(URL_ENV) or DEFAULT_URL, help=f"the API (${URL_ENV})")
    common.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"bearer token (${TOKEN_ENV})")
    common.add_argument("--json", action="store_true", help="print JSON for scripts instead of tables")

    parser = argparse.ArgumentParser(
        prog="exportctl",
        description="Submit, follow and download exports of the exports service.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    submit = commands.add_parser("submit", parents=[common], help="submit an export")
    submit.add_argument("export_type", metavar="TYPE", help="an export type (see: exportctl types)")
    submit.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD", help="first day included")
    submit.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD", help="last day included")
    submit.add_argument("--status", help="only rows with this status (e.g. delivered)")
    submit.add_argument("--columns", type=_columns, metavar="A,B,...", help="columns to include, in this order")
    submit.add_argument("--format", choices=[f.value for f in ExportFormat], default=ExportFormat.CSV.value)
    submit.add_argument("--priority", type=int, metavar="1..10", help="1 is the highest (default 5)")
    submit.add_argument("--wait", action="store_true", help="show progress until the export ends")
    submit.add_argument(
        "--timeout", type=float, default=DEFAULT_WAIT_SEC, metavar="SECONDS", help="stop waiting after this long"
    )
    submit.add_argument("--download", metavar="DIR", help="wait, then save the file into DIR (created if needed)")
    submit.set_defaults(run=_submit)

    status = commands.add_parser("status", parents=[common], help="show one export")
    status.add_argument("task_id", metavar="ID")
    status.set_defaults(run=_status)

    listing = commands.add_parser("list", parents=[common], help="list your exports, newest first")
    listing.add_argument("--status", type=str.upper, choices=[s.value for s in TaskStatus])
    listing.add_argument("--limit", type=_positive, default=20, help="at most this many (default 20)")
    listing.set_defaults(run=_list)

    cancel = commands.add_parser("cancel", parents=[common], help="cancel an export that has not ended")
    cancel.add_argument("task_id", metavar="ID")
    cancel.set_defaults(run=_cancel)

    download = commands.add_parser("download", parents=[common], help="save a completed export's file")
    download.add_argument("task_id", metavar="ID")
    download.add_argument(
        "--output", "-o", default=".", metavar="PATH", help="file, or directory (existing, or ending in /); default: ."
    )
    download.set_defaults(run=_download)

    types = commands.add_parser("types", parents=[common], help="what can be exported, and its filters")
    types.set_defaults(run=_types)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``exportctl``; returns the exit code. ``transport`` replaces the network in tests."""
    args = build_parser().parse_args(argv)
    output = _Output(args.json, stdout or sys.stdout, stderr or sys.stderr)
    run: Callable[[ExportsClient, argparse.Namespace, _Output], ExitCode] = args.run
    if not args.token:
        output.note(f"exportctl: no token: set {TOKEN_ENV} or pass --token")
        return ExitCode.AUTH
    try:
        with ExportsClient(args.url, args.token, transport=transport) as client:
            return run(client, args, output)
    except ExportsError as error:
        output.note(f"exportctl: {describe(error)}")
        return exit_code_for(error)
    except OSError as error:
        output.note(f"exportctl: {error}")
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        output.note("exportctl: interrupted")
        return ExitCode.INTERRUPTED
