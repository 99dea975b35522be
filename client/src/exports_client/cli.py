"""``exportctl``: submit, follow, list, cancel and download exports, and manage schedules
(``exportctl schedules …``, in :mod:`exports_client.schedule_commands`), from a terminal or a script.

Configured by ``EXPORTS_API_URL`` (default: ``make run``'s http://127.0.0.1:8000) and
``EXPORTS_TOKEN``, or by ``--url`` and ``--token``. Results go to stdout (tables, or JSON with
``--json``); progress and messages go to stderr. The exit code says what happened: see
:class:`ExitCode`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from enum import IntEnum
from itertools import islice
from pathlib import Path
from typing import Any, Final, TextIO

import httpx
from pydantic import BaseModel
from rich.console import RenderableType

from exports_client.client import DEFAULT_CAPACITY_WAIT_SEC, DEFAULT_WAIT_SEC, ExportsClient, OnRefused
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
from exports_client.filters import FilterError, filter_schemas
from exports_client.models import ExportAccepted, ExportFormat, TaskStatus, TaskView
from exports_client.render import ProgressReporter, human_size, show, task_details, task_table, to_json, types_view

DEFAULT_URL: Final = "http://127.0.0.1:8000"
URL_ENV: Final = "EXPORTS_API_URL"
TOKEN_ENV: Final = "EXPORTS_TOKEN"
LIST_PAGE_MAX: Final = 100
PRIORITY_HIGHEST: Final = 1
PRIORITY_LOWEST: Final = 10
#: While exportctl waits (bar or lines) no pause between polls of a running export is longer: the
#: worker records progress every 2 s, so the bar moves with it and sees the end within 2 s.
LIVE_POLL_SEC: Final = 2.0
#: ``--timeout N --wait`` waits N s and this much longer, for the service to record the timeout.
WAIT_GRACE_SEC: Final = 60.0


class ExitCode(IntEnum):
    """What ``exportctl`` exits with (docs/client.md has the same table)."""

    OK = 0
    #: Anything else, e.g. the file could not be written.
    FAILURE = 1
    #: Bad command line (argparse's own code), or filters the export type's schema refuses
    #: (unknown, missing, of the wrong type), found before anything is submitted.
    USAGE = 2
    #: No token, or the service refused it (401/403).
    AUTH = 3
    #: No such task or schedule (404).
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
    #: stdout was closed before everything was written (``exportctl list | head -1``): 128 +
    #: SIGPIPE, what a shell reports for a command killed by a closed pipe. Nothing is printed.
    BROKEN_PIPE = 141


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


class UsageError(Exception):
    """A command line that cannot be right, found before any request changes anything (exit 2)."""


def _filters_for(
    client: ExportsClient, args: argparse.Namespace, *, scheduled: bool = False, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The submission's ``filters``: ``base``, then ``--filters``, then the shortcuts, then each
    ``--filter``, typed and checked by the export type's served JSON Schema. ``scheduled``: a
    schedule's filters, whose date window may take a relative value."""
    known = filter_schemas(client.export_types())
    schema = known.get(args.export_type)
    if schema is None:
        names = ", ".join(sorted(known)) or "none"
        raise UsageError(f"unknown export type {args.export_type!r} (this service exports: {names})")
    filters: dict[str, Any] = {**(base or {}), **(args.filters_json or {})}
    entries: list[tuple[str, str]] = []
    if args.date_from is not None or args.date_to is not None:
        date_range = schema.date_range()
        if date_range is None:
            raise UsageError(
                f"--from/--to: {schema.export_type} has no date range filter; give its filters with "
                f"--filter NAME=VALUE (see: exportctl types {schema.export_type})"
            )
        entries += [(name, value) for name, value in zip(date_range, (args.date_from, args.date_to), strict=True)
                    if value is not None]  # fmt: skip
    entries += [(name, value) for name, value in (("status", args.status), ("columns", args.columns)) if value]
    entries += args.filter
    for name, text in entries:
        filters[name] = schema.parse(name, text)
    if scheduled:
        schema.check_scheduled(filters)
    else:
        schema.check(filters)
    return filters


# The CSV dialect's options: the service's name for each, and the choices it takes.
_DIALECT_OPTIONS = {
    "delimiter": ("--csv-delimiter", {"comma": ",", "semicolon": ";", "tab": "\t", "pipe": "|"}),
    "line_ending": ("--csv-line-ending", {"crlf": "crlf", "lf": "lf"}),
    "decimal_separator": ("--csv-decimal-separator", {"point": ".", "comma": ","}),
    "encoding": ("--csv-encoding", {name: name for name in ("utf-8", "gb18030", "shift_jis", "windows-1252")}),
    "unencodable": ("--csv-unencodable", {"fail": "fail", "replace": "replace"}),
}


def add_locale_options(parser: argparse.ArgumentParser) -> None:
    """``--locale`` and the CSV dialect's options (``submit`` and ``schedules create``)."""
    parser.add_argument(
        "--locale", metavar="TAG", help="language of the headers, e.g. zh-CN, de, ja (default: the type's)"
    )
    for key, (flag, choices) in _DIALECT_OPTIONS.items():
        parser.add_argument(
            flag, dest=f"csv_{key}", choices=list(choices), help=f"CSV {key.replace('_', ' ')} (default: the service's)"
        )


def csv_dialect(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``csv_dialect`` the options ask for; None when none was given (the service's default)."""
    given = {
        key: choices[value] for key, (_, choices) in _DIALECT_OPTIONS.items() if (value := getattr(args, f"csv_{key}"))
    }
    return given or None


def _submit(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    filters = _filters_for(client, args)
    accepted = client.submit(
        args.export_type,
        filters,
        format=args.format,
        priority=args.priority,
        timeout_sec=args.timeout,
        callback_url=args.callback_url,
        csv_bom=args.csv_bom,
        csv_formula_guard=args.csv_formula_guard,
        timezone=args.timezone,
        wait_for_capacity=args.wait_for_capacity,
        on_refused=_waiting_note(output),
        locale=args.locale,
        csv_dialect=csv_dialect(args),
    )
    if accepted.deduplicated:
        output.note(f"an identical export is already active: {accepted.task_id} ({accepted.status.value})")
    wait_sec = args.wait_timeout
    if wait_sec is None:
        wait_sec = args.timeout + WAIT_GRACE_SEC if args.timeout is not None else DEFAULT_WAIT_SEC
    return _follow(client, accepted, args, output, f"submitted {accepted.task_id}", wait_sec)


def _waiting_note(output: _Output) -> OnRefused:
    """What to say while a refused submit waits its turn (on stderr: JSON output stays clean)."""

    def note(refused: RateLimitedError, seconds: float) -> None:
        estimate = refused.estimate
        why = (
            f"it would finish in about {estimate.estimated_completion_sec} s, after its timeout of "
            f"{estimate.timeout_sec} s"
            if estimate is not None
            else refused.code
        )
        output.note(f"the service is at capacity ({why}): submitting again in {math.ceil(seconds)} s")

    return note


def _retry(client: ExportsClient, args: argparse.Namespace, output: _Output) -> ExitCode:
    accepted = client.retry(args.task_id, wait_for_capacity=args.wait_for_capacity, on_refused=_waiting_note(output))
    wait_sec = args.wait_timeout if args.wait_timeout is not None else DEFAULT_WAIT_SEC
    return _follow(client, accepted, args, output, f"retried {args.task_id} as {accepted.task_id}", wait_sec)


def _follow(
    client: ExportsClient, accepted: ExportAccepted, args: argparse.Namespace, output: _Output, what: str, wait: float
) -> ExitCode:
    """Print the accepted task, or with ``--wait``/``--download`` follow it to its end."""
    if not (args.wait or args.download):
        follow = f"follow it with: exportctl status {accepted.task_id}"
        output.result(accepted, f"{what} ({accepted.status.value}); {follow}")
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
    if args.names:
        unknown = sorted(set(args.names) - {export_type.name for export_type in export_types})
        if unknown:
            names = ", ".join(sorted(export_type.name for export_type in export_types)) or "none"
            raise UsageError(f"unknown export type {unknown[0]!r} (this service exports: {names})")
        export_types = [export_type for export_type in export_types if export_type.name in args.names]
    output.result(export_types, types_view(export_types))
    return ExitCode.OK


# -- the command line ------------------------------------------------------------------------------

_EPILOG = f"""\
configuration:
  {URL_ENV}   the API (default {DEFAULT_URL}, what `make run` serves); or --url
  {TOKEN_ENV}     your bearer token; or --token
  --url, --token and --json go before or after the command.

exit codes:
  0 ok  1 other failure (e.g. cannot write the file)  2 usage (also a filter the export type refuses)
  3 authentication  4 not found  5 rejected (invalid request or conflicting state)  6 rate limited
  7 service failed or unreachable  8 export ended but not COMPLETED  9 --wait timed out
  130 interrupted  141 stdout closed early (e.g. piped into head)
"""

_SUBMIT_EPILOG = """\
filters come from the export type's schema (exportctl types TYPE lists them):
  --filter KEY=VALUE   typed by the filter: integers, decimals ("12.50"), dates (YYYY-MM-DD),
                       lists as comma-separated values (--filter countries=DE,FR)
  --filters JSON       a JSON object of filters (or @FILE); --filter and the shortcuts win
  --from/--to          the type's date range (date_from/date_to, or its one ..._from/..._to pair)
  --status/--columns   the same as --filter status=... / --filter columns=...

examples:
  exportctl submit orders --from 2026-11-01 --to 2026-11-29 --filter status=delivered --format xlsx --wait
  exportctl submit customers --from 2026-01-01 --to 2026-06-30 --filter countries=DE,FR --download out/
  exportctl submit sales_report --from 2026-11-01 --to 2026-11-29 --filter currency=EUR --download out/
"""


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _priority(value: str) -> int:
    if not value.strip().lstrip("+-").isdigit() or not PRIORITY_HIGHEST <= int(value) <= PRIORITY_LOWEST:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from {PRIORITY_HIGHEST} (highest) to {PRIORITY_LOWEST}, not {value!r}"
        )
    return int(value)


def _timeout_sec(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(
            f"the export's own timeout in whole seconds (the API's timeout_sec), not {value!r};"
            " to stop waiting sooner use --wait-timeout"
        )
    return int(value)


def _wait_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return seconds


def _key_value(value: str) -> tuple[str, str]:
    key, equals, text = value.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"give KEY=VALUE, not {value!r}")
    return key.strip(), text


def _json_object(value: str) -> dict[str, Any]:
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as error:
            raise argparse.ArgumentTypeError(f"cannot read {value[1:]}: {error.strerror or error}") from None
    try:
        parsed = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. \'{"date_from": "2026-01-01"}\'')
    return parsed


def _add_global_options(parser: argparse.ArgumentParser, *, on_command: bool) -> None:
    """--url, --token and --json: on the main parser with their defaults, and again on each
    command without defaults (SUPPRESS), so a value given before the command is kept."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if on_command else value

    parser.add_argument("--url", default=default(os.environ.get(URL_ENV) or DEFAULT_URL), help=f"the API (${URL_ENV})")
    parser.add_argument("--token", default=default(os.environ.get(TOKEN_ENV)), help=f"bearer token (${TOKEN_ENV})")
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print JSON for scripts instead of tables"
    )


def _add_follow_options(parser: argparse.ArgumentParser, default_wait: str) -> None:
    parser.add_argument("--wait", action="store_true", help="show progress until the export ends")
    parser.add_argument(
        "--wait-timeout",
        type=_wait_seconds,
        metavar="SECONDS",
        help=f"with --wait or --download: stop waiting after this long (default: {default_wait})",
    )
    parser.add_argument("--download", metavar="DIR", help="wait, then save the file into DIR (created if needed)")


def _add_capacity_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait-for-capacity",
        type=_wait_seconds,
        default=DEFAULT_CAPACITY_WAIT_SEC,
        metavar="SECONDS",
        help="when the service is at capacity (429), wait its Retry-After (with jitter) and submit again, "
        f"for at most this long in all (default {DEFAULT_CAPACITY_WAIT_SEC:g})",
    )
    parser.add_argument(
        "--no-wait-for-capacity",
        dest="wait_for_capacity",
        action="store_const",
        const=0,
        help="fail at once when the service is at capacity",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``exportctl`` argument parser."""
    common = argparse.ArgumentParser(add_help=False)
    _add_global_options(common, on_command=True)

    parser = argparse.ArgumentParser(
        prog="exportctl",
        description="Submit, follow and download exports of the exports service, and schedule recurring ones.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_global_options(parser, on_command=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    submit = commands.add_parser(
        "submit",
        parents=[common],
        help="submit an export",
        epilog=_SUBMIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    submit.add_argument("export_type", metavar="TYPE", help="an export type (see: exportctl types)")
    submit.add_argument(
        "--filter", "-f", action="append", type=_key_value, default=[], metavar="KEY=VALUE", help="a filter (repeat it)"
    )
    submit.add_argument("--filters", dest="filters_json", type=_json_object, metavar="JSON", help="filters as JSON")
    submit.add_argument("--from", dest="date_from", metavar="DATE", help="first day of the type's date range")
    submit.add_argument("--to", dest="date_to", metavar="DATE", help="last day of the type's date range")
    submit.add_argument("--status", help="the same as --filter status=STATUS")
    submit.add_argument("--columns", metavar="A,B,...", help="the same as --filter columns=A,B,...")
    submit.add_argument("--format", choices=[f.value for f in ExportFormat], default=ExportFormat.CSV.value)
    submit.add_argument(
        "--priority", type=_priority, metavar=f"{PRIORITY_HIGHEST}..{PRIORITY_LOWEST}", help="1 is the highest"
    )
    submit.add_argument(
        "--timeout",
        type=_timeout_sec,
        metavar="SECONDS",
        help="the export times out this long after submission (timeout_sec; default: the service's)",
    )
    submit.add_argument("--callback-url", metavar="URL", help="called (signed) when the export ends")
    submit.add_argument(
        "--csv-bom", action=argparse.BooleanOptionalAction, help="start a CSV file with a UTF-8 BOM (for Excel)"
    )
    submit.add_argument(
        "--csv-formula-guard",
        action=argparse.BooleanOptionalAction,
        help="prefix CSV text starting with = + - @ with ' (default: on; --no-csv-formula-guard writes it as it is)",
    )
    submit.add_argument(
        "--timezone",
        metavar="ZONE",
        help="IANA time zone the file's date-times are written in, e.g. Europe/Berlin (default: the service's, UTC)",
    )
    add_locale_options(submit)
    _add_follow_options(submit, f"--timeout + {WAIT_GRACE_SEC:g} s, or {DEFAULT_WAIT_SEC:g} s")
    _add_capacity_option(submit)
    submit.set_defaults(run=_submit)

    retry = commands.add_parser(
        "retry", parents=[common], help="submit a FAILED, TIMEOUT or CANCELLED export again (a new task)"
    )
    retry.add_argument("task_id", metavar="ID")
    _add_follow_options(retry, f"{DEFAULT_WAIT_SEC:g} s")
    _add_capacity_option(retry)
    retry.set_defaults(run=_retry)

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
    types.add_argument("names", nargs="*", metavar="TYPE", help="only these export types")
    types.set_defaults(run=_types)

    # Imported here: the schedule and audit commands build on this module's helpers.
    from exports_client import audit_commands, schedule_commands

    schedule_commands.add_commands(commands, common)
    audit_commands.add_commands(commands, common)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run ``exportctl``; returns the exit code. ``transport``, ``sleep`` and ``clock`` replace
    the network, the pauses between polls and the clock that times the wait in tests.

    When stdout is closed early (``exportctl list | head -1``) it stops quietly with
    :attr:`ExitCode.BROKEN_PIPE` (141, as a command killed by SIGPIPE), without a traceback.
    """
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            out.flush()  # --help into a closed pipe
            raise
        code = _run(args, _Output(args.json, out, err), transport, sleep, clock)
        out.flush()
    except BrokenPipeError:
        _discard(out)
        return ExitCode.BROKEN_PIPE
    return code


def _run(
    args: argparse.Namespace,
    output: _Output,
    transport: httpx.BaseTransport | None,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> ExitCode:
    run: Callable[[ExportsClient, argparse.Namespace, _Output], ExitCode] = args.run
    if not args.token:
        output.note(f"exportctl: no token: set {TOKEN_ENV} or pass --token")
        return ExitCode.AUTH
    try:
        with ExportsClient(args.url, args.token, transport=transport, sleep=sleep, clock=clock) as client:
            return run(client, args, output)
    except (UsageError, FilterError) as error:
        output.note(f"exportctl: {error}")
        return ExitCode.USAGE
    except ExportsError as error:
        output.note(f"exportctl: {describe(error)}")
        return exit_code_for(error)
    except BrokenPipeError:
        raise
    except OSError as error:
        output.note(f"exportctl: {error}")
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        output.note("exportctl: interrupted")
        return ExitCode.INTERRUPTED


def _discard(stream: TextIO) -> None:
    """Point a closed stdout at /dev/null, so that the interpreter's last flush does not fail
    again on the way out (the Python documentation's recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError):  # not a real file (tests), or already closed
        pass
