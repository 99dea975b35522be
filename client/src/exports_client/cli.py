"""``exportctl``: submit, follow, list, cancel and download exports, and manage schedules
(``exportctl schedules …``, in :mod:`exports_client.schedule_commands`), from a terminal or a script.

Configured by ``EXPORTS_API_URL`` (default: ``make run``'s http://127.0.0.1:8000) and
``EXPORTS_TOKEN``, or by ``--url`` and ``--token``. Results go to stdout (tables, or JSON with
``--json``); progress and messages go to stderr. The exit code says what happened: see
:class:`ExitCode`."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Final, TextIO

import httpx

from exports_client import audit_commands, delivery_commands, destination_commands, schedule_commands
from exports_client.client import DEFAULT_WAIT_SEC, ExportsClient, OnRefused
from exports_client.errors import (
    ExportsError,
    RateLimitedError,
)
from exports_client.filters import FilterError
from exports_client.following import WAIT_GRACE_SEC, follow
from exports_client.models import ExportFormat, TaskStatus
from exports_client.options import (
    LIST_PAGE_MAX,
    PRIORITY_HIGHEST,
    PRIORITY_LOWEST,
    TOKEN_ENV,
    URL_ENV,
    UsageError,
    add_capacity_option,
    add_destination_options,
    add_follow_options,
    add_locale_options,
    csv_dialect,
    destination_choice,
    filters_for,
    json_object,
    key_value_pair,
    positive_int,
    priority_level,
    timeout_seconds,
)
from exports_client.output import ExitCode, Output, describe, exit_code_for
from exports_client.render import task_details, task_table, types_view

DEFAULT_URL: Final = "http://127.0.0.1:8000"


def _submit(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    filters = filters_for(client, args)
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
        **destination_choice(args),
    )
    if accepted.deduplicated:
        output.note(f"an identical export is already active: {accepted.task_id} ({accepted.status.value})")
    wait_sec = args.wait_timeout
    if wait_sec is None:
        wait_sec = args.timeout + WAIT_GRACE_SEC if args.timeout is not None else DEFAULT_WAIT_SEC
    return follow(client, accepted, args, output, f"submitted {accepted.task_id}", wait_sec)


def _waiting_note(output: Output) -> OnRefused:
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


def _retry(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    accepted = client.retry(args.task_id, wait_for_capacity=args.wait_for_capacity, on_refused=_waiting_note(output))
    wait_sec = args.wait_timeout if args.wait_timeout is not None else DEFAULT_WAIT_SEC
    return follow(client, accepted, args, output, f"retried {args.task_id} as {accepted.task_id}", wait_sec)


def _status(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    task = client.get(args.task_id)
    output.result(task, task_details(task))
    if task.status is TaskStatus.COMPLETED and not output.as_json:
        output.note(f"download it with: exportctl download {task.task_id}")
    return ExitCode.OK


def _list(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    page_size = min(args.limit, LIST_PAGE_MAX)
    tasks = list(islice(client.iter_tasks(status=args.status, page_size=page_size), args.limit))
    output.result(tasks, task_table(tasks) if tasks else "no exports")
    return ExitCode.OK


def _cancel(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    task = client.cancel(args.task_id)
    output.result(task, task_details(task))
    return ExitCode.OK


def _download(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    task = client.get(args.task_id)
    path = client.download(task.task_id, args.output)
    output.result({**task.model_dump(mode="json"), "path": str(path)}, str(path))
    return ExitCode.OK


def _types(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    export_types = client.export_types()
    if args.names:
        unknown = sorted(set(args.names) - {export_type.name for export_type in export_types})
        if unknown:
            names = ", ".join(sorted(export_type.name for export_type in export_types)) or "none"
            raise UsageError(f"unknown export type {unknown[0]!r} (this service exports: {names})")
        export_types = [export_type for export_type in export_types if export_type.name in args.names]
    output.result(export_types, types_view(export_types))
    return ExitCode.OK


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
        "--filter",
        "-f",
        action="append",
        type=key_value_pair,
        default=[],
        metavar="KEY=VALUE",
        help="a filter (repeat it)",
    )
    submit.add_argument("--filters", dest="filters_json", type=json_object, metavar="JSON", help="filters as JSON")
    submit.add_argument("--from", dest="date_from", metavar="DATE", help="first day of the type's date range")
    submit.add_argument("--to", dest="date_to", metavar="DATE", help="last day of the type's date range")
    submit.add_argument("--status", help="the same as --filter status=STATUS")
    submit.add_argument("--columns", metavar="A,B,...", help="the same as --filter columns=A,B,...")
    submit.add_argument("--format", choices=[f.value for f in ExportFormat], default=ExportFormat.CSV.value)
    submit.add_argument(
        "--priority", type=priority_level, metavar=f"{PRIORITY_HIGHEST}..{PRIORITY_LOWEST}", help="1 is the highest"
    )
    submit.add_argument(
        "--timeout",
        type=timeout_seconds,
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
    add_destination_options(submit)
    add_follow_options(submit, f"--timeout + {WAIT_GRACE_SEC:g} s, or {DEFAULT_WAIT_SEC:g} s")
    add_capacity_option(submit)
    submit.set_defaults(run=_submit)

    retry = commands.add_parser(
        "retry", parents=[common], help="submit a FAILED, TIMEOUT or CANCELLED export again (a new task)"
    )
    retry.add_argument("task_id", metavar="ID")
    add_follow_options(retry, f"{DEFAULT_WAIT_SEC:g} s")
    add_capacity_option(retry)
    retry.set_defaults(run=_retry)

    status = commands.add_parser("status", parents=[common], help="show one export")
    status.add_argument("task_id", metavar="ID")
    status.set_defaults(run=_status)

    listing = commands.add_parser("list", parents=[common], help="list your exports, newest first")
    listing.add_argument("--status", type=str.upper, choices=[s.value for s in TaskStatus])
    listing.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
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

    for module in (schedule_commands, destination_commands, delivery_commands, audit_commands):
        module.add_commands(commands, common)
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
        code = _run(args, Output(args.json, out, err), transport, sleep, clock)
        out.flush()
    except BrokenPipeError:
        _discard(out)
        return ExitCode.BROKEN_PIPE
    return code


def _run(
    args: argparse.Namespace,
    output: Output,
    transport: httpx.BaseTransport | None,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> ExitCode:
    run: Callable[[ExportsClient, argparse.Namespace, Output], ExitCode] = args.run
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
