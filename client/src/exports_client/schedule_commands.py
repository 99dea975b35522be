"""``exportctl schedules …`` and ``exportctl mailbox``: recurring exports from a terminal.

The options mirror the body of ``POST /v1/schedules``; what can be checked before a request
(the filters against the type's schema, with relative windows allowed on its window only, the
cron's five fields, ``--every``'s unit, aware date-times) is checked here and refused with exit 2.
The service checks everything again and has the last word.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from itertools import islice
from typing import Any, Final

from exports_client.client import DEFAULT_WAIT_SEC, ExportsClient
from exports_client.filters import RELATIVE_WINDOWS
from exports_client.following import follow
from exports_client.models import ExportFormat
from exports_client.options import (
    LIST_PAGE_MAX,
    UsageError,
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
from exports_client.output import ExitCode, Output
from exports_client.render import mailbox_view, schedule_details, schedule_table, task_table

_EVERY: Final = re.compile(r"\s*([1-9]\d*)\s*(m|min|minutes?|h|hours?|d|days?)\s*", re.IGNORECASE)
_UNITS: Final = {"m": "minutes", "h": "hours", "d": "days"}
CRON_FIELDS: Final = 5

_CREATE_EPILOG = f"""\
when it runs: exactly one of
  --cron "M H DOM MON DOW"   five cron fields, in --timezone (e.g. "0 8 * * 1": Mondays 08:00)
  --every 30m | 2h | 1d      a fixed interval in minutes, hours or days

filters are those of exportctl submit (--filter, --filters, --from/--to, --status, --columns);
the type's date window also takes a relative value, resolved at each firing in --timezone:
  {", ".join(RELATIVE_WINDOWS)}
  give it with --from (--to may be left out): --from previous_week

examples:
  exportctl schedules create orders --cron "0 8 * * 1" --timezone Europe/Berlin --from previous_week \\
      --format xlsx --recipient finance@acme.example --name "Weekly orders"
  exportctl schedules create orders --every 1d --from previous_day --filter status=delivered
  exportctl schedules create order_changes --every 1h --from since_last_run --when-empty skip

a feed (--from since_last_run, on a type that declares its change column) sends at each run the
rows changed since the previous COMPLETED run; exportctl schedules latest ID saves its newest file.
"""


def _every(value: str) -> dict[str, int]:
    """``30m`` -> ``{"minutes": 30}``; also ``2h``, ``1d``, ``90 minutes``."""
    matched = _EVERY.fullmatch(value)
    if not matched:
        raise argparse.ArgumentTypeError(f"give a whole number and a unit, e.g. 30m, 2h or 1d; not {value!r}")
    return {_UNITS[matched.group(2)[0].lower()]: int(matched.group(1))}


def _cron(value: str) -> str:
    fields = value.split()
    if len(fields) != CRON_FIELDS:
        raise argparse.ArgumentTypeError(
            f"give {CRON_FIELDS} fields (minute hour day-of-month month day-of-week), e.g. '0 8 * * 1'; "
            f"{value!r} has {len(fields)}"
        )
    return " ".join(fields)


def _moment(value: str) -> str:
    """An aware date-time, as the API reads it."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        example = "2026-12-07T08:00:00+01:00"
        raise argparse.ArgumentTypeError(f"give a date and time with its offset, e.g. {example}; not {value!r}")
    return value.strip()


def _name(value: str) -> str:
    if not 1 <= len(value) <= 100:
        raise argparse.ArgumentTypeError("give 1 to 100 characters")
    return value


# -- commands --------------------------------------------------------------------------------------


def _create(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    filters = filters_for(client, args, scheduled=True)
    schedule = client.create_schedule(
        args.export_type,
        filters,
        cron=args.cron,
        every=args.every,
        timezone=args.timezone,
        name=args.name,
        start_at=args.start_at,
        end_at=args.end_at,
        recipients=args.recipients or None,
        format=args.format,
        priority=args.priority,
        timeout_sec=args.timeout,
        callback_url=args.callback_url,
        csv_bom=args.csv_bom,
        csv_formula_guard=args.csv_formula_guard,
        when_empty=args.when_empty,
        locale=args.locale,
        csv_dialect=csv_dialect(args),
        idempotency_key=args.idempotency_key,
        **destination_choice(args),
    )
    output.result(schedule, schedule_details(schedule))
    if not output.as_json:
        output.note(f"its runs: exportctl schedules runs {schedule.schedule_id}")
    return ExitCode.OK


def _list(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    schedules = list(islice(client.iter_schedules(page_size=min(args.limit, LIST_PAGE_MAX)), args.limit))
    output.result(schedules, schedule_table(schedules) if schedules else "no schedules")
    return ExitCode.OK


def _show(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    schedule = client.get_schedule(args.schedule_id)
    output.result(schedule, schedule_details(schedule))
    return ExitCode.OK


def _filters_given(args: argparse.Namespace) -> bool:
    shortcuts = (args.date_from, args.date_to, args.status, args.columns)
    return bool(args.filter or args.filters_json is not None or any(value is not None for value in shortcuts))


def _update(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    changes: dict[str, Any] = {}
    if _filters_given(args):
        # The schedule's filters with the given ones on top, checked as a whole against its type.
        current = client.get_schedule(args.schedule_id)
        args.export_type = current.export_type
        base = {} if args.filters_json is not None else dict(current.filters)
        changes["filters"] = filters_for(client, args, scheduled=True, base=base)
    if args.recipients and args.no_recipients:
        raise UsageError("give --recipient or --no-recipients, not both")
    given = {
        "name": args.name,
        "cron": args.cron,
        "every": args.every,
        "timezone": args.timezone,
        "start_at": args.start_at,
        "end_at": args.end_at,
        "recipients": [] if args.no_recipients else (args.recipients or None),
        "when_empty": args.when_empty,
        "watermark": args.watermark,
    }
    changes |= {key: value for key, value in given.items() if value is not None}
    # One of cron and every: the one given replaces the other.
    if args.cron is not None:
        changes["every"] = None
    if args.every is not None:
        changes["cron"] = None
    if args.no_end:
        changes["end_at"] = None
    if args.watermark is not None and args.reset_watermark:
        raise UsageError("give --watermark or --reset-watermark, not both")
    if args.reset_watermark:
        changes["watermark"] = None
    changes |= _delivery_changes(args)
    if not changes:
        raise UsageError("nothing to change: give at least one option (see: exportctl schedules update --help)")
    schedule = client.update_schedule(args.schedule_id, **changes)
    output.result(schedule, schedule_details(schedule))
    return ExitCode.OK


def _delivery_changes(args: argparse.Namespace) -> dict[str, Any]:
    """``--destination`` replaces the schedule's destinations, ``--no-destinations`` removes
    them; ``--path-template`` alone keeps them (the service refuses it on a schedule without)."""
    if args.destinations and args.no_destinations:
        raise UsageError("give --destination or --no-destinations, not both")
    if args.no_destinations and args.path_template is not None:
        raise UsageError("--path-template places the file on a destination: not with --no-destinations")
    changes: dict[str, Any] = {}
    if args.destinations or args.no_destinations:
        changes["destinations"] = args.destinations
    if args.path_template is not None:
        changes["path_template"] = args.path_template
    return changes


def _pause(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    schedule = client.pause_schedule(args.schedule_id)
    output.result(schedule, schedule_details(schedule))
    return ExitCode.OK


def _resume(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    schedule = client.resume_schedule(args.schedule_id)
    output.result(schedule, schedule_details(schedule))
    return ExitCode.OK


def _delete(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    client.delete_schedule(args.schedule_id)
    output.result({"schedule_id": args.schedule_id, "deleted": True}, f"deleted {args.schedule_id}")
    return ExitCode.OK


def _run(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    accepted = client.run_schedule(args.schedule_id)
    wait_sec = args.wait_timeout if args.wait_timeout is not None else DEFAULT_WAIT_SEC
    return follow(client, accepted, args, output, f"ran {args.schedule_id} as {accepted.task_id}", wait_sec)


def _runs(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    # A schedule of someone else (or none) is a 404 here, not an empty list of runs.
    client.get_schedule(args.schedule_id)
    tasks = list(islice(client.schedule_runs(args.schedule_id, page_size=min(args.limit, LIST_PAGE_MAX)), args.limit))
    output.result(tasks, task_table(tasks) if tasks else "no runs yet")
    return ExitCode.OK


def _latest(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    saved = client.download_latest(args.schedule_id, args.path)
    output.result({"schedule_id": args.schedule_id, "path": str(saved)}, f"saved {saved}")
    return ExitCode.OK


def _permalink(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    if args.revoke:
        client.revoke_permalink(args.schedule_id)
        output.result({"schedule_id": args.schedule_id, "permalink": False}, "revoked: the old URL stops working")
        return ExitCode.OK
    link = client.create_permalink(args.schedule_id)
    output.result(link, f"{link.url}\nanyone with this URL gets the latest file; revoke it with --revoke")
    return ExitCode.OK


def _mailbox(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    messages = client.mailbox()[: args.limit]
    output.result(messages, mailbox_view(messages) if messages else "no mail")
    return ExitCode.OK


# -- the command line ------------------------------------------------------------------------------


def _add_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--filter",
        "-f",
        action="append",
        type=key_value_pair,
        default=[],
        metavar="KEY=VALUE",
        help="a filter (repeat it)",
    )
    parser.add_argument("--filters", dest="filters_json", type=json_object, metavar="JSON", help="filters as JSON")
    parser.add_argument(
        "--from", dest="date_from", metavar="DATE|WINDOW", help="start of the type's date range, or a relative window"
    )
    parser.add_argument("--to", dest="date_to", metavar="DATE", help="end of the type's date range")
    parser.add_argument("--status", help="the same as --filter status=STATUS")
    parser.add_argument("--columns", metavar="A,B,...", help="the same as --filter columns=A,B,...")


def _add_timing_options(parser: argparse.ArgumentParser, *, create: bool) -> None:
    when = parser.add_mutually_exclusive_group(required=create)
    when.add_argument("--cron", type=_cron, metavar='"M H DOM MON DOW"', help="five cron fields, in --timezone")
    when.add_argument("--every", type=_every, metavar="30m|2h|1d", help="a fixed interval")
    parser.add_argument(
        "--timezone", "--tz", metavar="ZONE", help="IANA zone of the firings and the files (default Etc/UTC)"
    )
    parser.add_argument("--start-at", type=_moment, metavar="DATETIME", help="no firing before (with offset)")
    parser.add_argument("--end-at", type=_moment, metavar="DATETIME", help="no firing after (with offset)")
    parser.add_argument("--name", type=_name, help="a name to tell it by (1..100 characters)")
    parser.add_argument(
        "--when-empty", choices=["send", "skip"], help="a run of 0 rows: sent (default), or skipped (no file, no mail)"
    )
    parser.add_argument(
        "--recipient",
        dest="recipients",
        action="append",
        default=[],
        metavar="EMAIL",
        help="mailed the link when a run ends (repeat it)",
    )


def _add_update_command(actions: Any, common: argparse.ArgumentParser) -> None:
    """``schedules update ID [options]``: only what is given changes."""
    update = actions.add_parser("update", parents=[common], help="change a schedule (only what is given)")
    update.add_argument("schedule_id", metavar="ID")
    _add_filter_options(update)
    _add_timing_options(update, create=False)
    update.add_argument("--no-recipients", action="store_true", help="mail nobody any more")
    update.add_argument("--no-end", action="store_true", help="remove the end (end_at: null)")
    update.add_argument("--watermark", type=_moment, metavar="DATETIME", help="a feed's next run starts here")
    update.add_argument(
        "--reset-watermark", action="store_true", help="a feed starts again at start_at (or its type's floor)"
    )
    add_destination_options(update)
    update.add_argument(
        "--no-destinations", action="store_true", help="deliver the runs' files nowhere any more (destinations: [])"
    )
    update.set_defaults(run=_update)


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``schedules`` (with its own commands) and ``mailbox`` to exportctl's ``commands``."""
    schedules = commands.add_parser("schedules", parents=[common], help="recurring exports: create, list, pause, ...")
    actions = schedules.add_subparsers(dest="schedule_command", required=True, metavar="ACTION")

    create = actions.add_parser(
        "create",
        parents=[common],
        help="create a schedule",
        epilog=_CREATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    create.add_argument("export_type", metavar="TYPE", help="an export type (see: exportctl types)")
    _add_filter_options(create)
    _add_timing_options(create, create=True)
    create.add_argument("--format", choices=[f.value for f in ExportFormat], default=ExportFormat.CSV.value)
    create.add_argument("--priority", type=priority_level, metavar="1..10", help="1 is the highest")
    create.add_argument("--timeout", type=timeout_seconds, metavar="SECONDS", help="each run's timeout_sec")
    create.add_argument("--callback-url", metavar="URL", help="called (signed) when a run ends")
    create.add_argument("--csv-bom", action=argparse.BooleanOptionalAction, help="start CSV files with a UTF-8 BOM")
    create.add_argument("--csv-formula-guard", action=argparse.BooleanOptionalAction, help="as for submit")
    add_locale_options(create)
    add_destination_options(create)
    create.add_argument("--idempotency-key", metavar="KEY", help="a repeated create with it answers the same schedule")
    create.set_defaults(run=_create)

    listing = actions.add_parser("list", parents=[common], help="list your schedules, newest first")
    listing.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    listing.set_defaults(run=_list)

    for action, run, text in (
        ("show", _show, "show one schedule, its next runs and its last run"),
        ("pause", _pause, "stop its firings until resumed"),
        ("resume", _resume, "fire again (clears the pause's reason and the failure count)"),
        ("delete", _delete, "delete a schedule (its past runs stay)"),
    ):
        command = actions.add_parser(action, parents=[common], help=text)
        command.add_argument("schedule_id", metavar="ID")
        command.set_defaults(run=run)

    _add_update_command(actions, common)

    run = actions.add_parser("run", parents=[common], help="run the schedule's export now (a new task)")
    run.add_argument("schedule_id", metavar="ID")
    add_follow_options(run, f"{DEFAULT_WAIT_SEC:g} s")
    run.set_defaults(run=_run)

    runs = actions.add_parser("runs", parents=[common], help="the exports a schedule started, newest first")
    runs.add_argument("schedule_id", metavar="ID")
    runs.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    runs.set_defaults(run=_runs)

    latest = actions.add_parser("latest", parents=[common], help="save the file of the newest COMPLETED run")
    latest.add_argument("schedule_id", metavar="ID")
    latest.add_argument("path", nargs="?", default=".", help="a file or a directory (default: here)")
    latest.set_defaults(run=_latest)

    permalink = actions.add_parser(
        "permalink", parents=[common], help="a secret URL of the latest file, for tools without a token"
    )
    permalink.add_argument("schedule_id", metavar="ID")
    permalink.add_argument("--revoke", action="store_true", help="revoke it (the URL stops working at once)")
    permalink.set_defaults(run=_permalink)
    _add_mailbox(commands, common)


def _add_mailbox(commands: Any, common: argparse.ArgumentParser) -> None:
    mailbox = commands.add_parser(
        "mailbox", parents=[common], help="local mode: the mail its embedded SES received, newest first"
    )
    mailbox.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    mailbox.set_defaults(run=_mailbox)
