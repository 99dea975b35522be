"""``exportctl audit …``: your tenant's audit trail and usage, for the deployment's audit admins
(docs/audit.md). ``verify`` reads every record of the range and checks the chains here."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime
from typing import Any

from exports_client.audit import verify
from exports_client.client import ExportsClient
from exports_client.options import positive_int
from exports_client.output import ExitCode, Output


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day (YYYY-MM-DD): {value!r}") from None


def _range(args: argparse.Namespace) -> tuple[date, date]:
    today = datetime.now(UTC).date()
    return args.day_from or args.day_to or today, args.day_to or today


def _list(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    first, last = _range(args)
    filters = {"action": args.action, "actor": args.actor, "subject": args.subject}
    records: list[dict[str, Any]] = []
    for record in client.iter_audit(first, last, **filters):
        records.append(record)
        if len(records) >= args.limit:
            break
    lines = [
        f"{r.get('day')} #{r.get('seq')}  {r.get('at')}  {r.get('action')}  {r.get('actor')}  {r.get('subject')}"
        for r in records
    ]
    output.result({"items": records}, "\n".join(lines) if lines else "no records")
    return ExitCode.OK


def _verify(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    first, last = _range(args)
    verdict = verify(client.iter_audit(first, last))
    ends = [
        {"tenant": tenant, "day": day, "last_seq": seq, "last_hash": digest}
        for (tenant, day), (seq, digest) in sorted(verdict.ends.items())
    ]
    broken = verdict.broken
    result: dict[str, object] = {"ok": verdict.ok, "records": verdict.records, "days": ends}
    if broken is None:
        lines = [f"OK: {verdict.records} records in {len(ends)} day(s), every chain holds"]
        lines += [f"  {e['tenant']} {e['day']}: last #{e['last_seq']} {e['last_hash']}" for e in ends]
        output.result(result, "\n".join(lines))
        return ExitCode.OK
    result["broken"] = {"tenant": broken.tenant, "day": broken.day, "seq": broken.seq, "reason": broken.reason}
    output.result(result, f"BROKEN: {broken}")
    return ExitCode.FAILURE


def _usage(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    first, last = _range(args)
    usage = client.audit_usage(first, last)
    lines = [f"tenant {usage.tenant}", "day         exports        rows           bytes  cpu_seconds"]
    lines += [f"{u.day}  {u.exports:7d}  {u.rows:10d}  {u.bytes:14d}  {u.cpu_seconds:11.3f}" for u in usage.items]
    output.result(usage, "\n".join(lines))
    return ExitCode.OK


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``audit`` (list, verify, usage) to exportctl's ``commands``."""
    audit = commands.add_parser("audit", parents=[common], help="your tenant's audit trail and usage (audit admins)")
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    for action, run, text in (
        ("list", _list, "list the records of a range of days"),
        ("verify", _verify, "check every chain of a range of days; names the first broken record (exit 1)"),
        ("usage", _usage, "exports, rows, bytes and CPU-seconds per day (at most 31 days)"),
    ):
        command = actions.add_parser(action, parents=[common], help=text)
        command.add_argument("--from", dest="day_from", type=_day, metavar="DAY", help="first day, UTC (default today)")
        command.add_argument("--to", dest="day_to", type=_day, metavar="DAY", help="last day, UTC (default today)")
        if action == "list":
            command.add_argument("--action", help="only this action (export.completed, download, ...)")
            command.add_argument("--actor", help="only this user's (or system)")
            command.add_argument("--subject", metavar="ID", help="only this task's or schedule's")
            command.add_argument("--limit", type=positive_int, default=1000, help="at most this many (default 1000)")
        command.set_defaults(run=run)
