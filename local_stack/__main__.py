"""``make run``: the whole service on http://127.0.0.1:8000 until Ctrl-C."""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import logging
import os
import shlex
import signal
import sys
import threading
import time
import warnings
from collections.abc import Sequence

from exports.api.http.openapi import example_filters
from exports.core.caller import Caller
from exports.core.export_type import AnyExportType
from exports.core.task import ExportFormat
from exports.export_types.loader import DeclarationError
from local_stack.customer_side import CustomerSide
from local_stack.embedded_aws import REGION
from local_stack.embedded_postgres import psql_command
from local_stack.stack import GC_THRESHOLDS, LocalConfig, LocalStack

# prctl's option that asks for a signal when the parent process dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _banner(stack: LocalStack, seconds: float) -> str:
    assert stack.gateway and stack.resources
    url = stack.gateway.url
    token, user = next(iter(stack.config.tokens.items()))
    users = "\n               ".join(
        f"{signed.user_id:<6} {signed_token}   {signed.describe()}"
        for signed_token, signed in stack.config.tokens.items()
    )
    split_rows, most = f"{stack.config.partition_rows:,}", stack.config.max_partitions
    caller = Caller(user.user_id, dict(user.claims), None)
    return f"""
exports is running locally (ready in {seconds:.1f} s)

  API          {url}
  API docs     {url}/docs
  console      {url}/console/  (sign in with a token below)
  push         {stack.websocket.url if stack.websocket else "off (EXPORTS_WS_PORT=-1): clients poll"}
               (WebSocket: POST /v1/stream-tickets, then subprotocols exports.v1 + ticket.<ticket>;
                see docs/push.md)
  token        {token}   (user: {user.user_id})
  users        {users}
               (their claims, from {stack.config.users_file}: each export type binds the
                caller's tenant from them, so every user exports only their tenant's rows)
  PostgreSQL   {stack.database_uri}
               ({stack.config.demo_orders} demo orders of the last 90 days, and customers; open it with
                {psql_command()} "{stack.database_uri}"){_mysql_line(stack)}
  demo API     {stack.demo_api.url if stack.demo_api else ""}/tenants/acme/customers
               (a customer service with cursor pages; the customers_api type reads it over HTTP)
  embedded AWS {stack.resources.endpoint_url}  (moto; {stack.config.demo_dynamodb_orders} demo orders in DynamoDB)
  export types {", ".join(export_type.name for export_type in stack.export_types)}
               (declared in {stack.config.exports_config or "exports.toml"}; see docs/export-your-own-data.md)
  fan-out      an export of a type with partitions splits past {split_rows} rows
               (EXPORTS_PARTITION_ROWS), in at most {most} partitions (EXPORTS_MAX_PARTITIONS)
  webhooks     signed with EXPORTS_WEBHOOK_SECRET={stack.config.webhook_secret}
               (callbacks to http://127.0.0.1 are allowed locally)
  state        tasks, files, queues and the embedded DynamoDB tables are in memory: a restart starts
               them empty. The PostgreSQL data in {stack.config.postgres_dir} is kept.
{try_it(url, token, stack.export_types, caller, _recent(0), _clock_line(stack))}{_other_user(stack)}
{_destinations(stack, url)}
Ctrl-C stops everything.
"""


def _mysql_line(stack: LocalStack) -> str:
    """The banner's MariaDB line (EXPORTS_DEMO_MYSQL=1), or nothing."""
    if stack.mariadb is None:
        return ""
    return (
        f"\n  MySQL        {stack.mysql_url}"
        "\n               (MariaDB, the same demo orders and customers; open it with"
        f"\n                mariadb --default-character-set=utf8mb4 --socket={stack.mariadb.socket} -uroot shop)"
    )


def try_it(
    url: str, token: str, export_types: Sequence[AnyExportType], caller: Caller, day: str, clock: str = ""
) -> str:
    """The banner's "Try it" commands: submit, poll and download, with curl and the CLI, and a
    schedule that fires every minute, for the first export type ``caller`` may use whose filters
    can be made up from its schema (as the OpenAPI document's examples are, dates ``day``); in
    XLSX when the type has it. ``clock``: how the local scheduler keeps time."""
    for export_type in export_types:
        filters = example_filters(export_type, day) if export_type.allows(caller) else None
        if filters is not None:
            break
    else:
        return f"""
Try it:

  export TOKEN={token}
  curl -s {url}/v1/export-types -H "Authorization: Bearer $TOKEN"
"""
    fmt = ExportFormat.XLSX if ExportFormat.XLSX in export_type.formats else export_type.formats[0]
    body = json.dumps({"export_type": export_type.name, "format": fmt.value, "filters": filters})
    cli = f"exportctl submit {export_type.name} --filters {shlex.quote(json.dumps(filters))} --format {fmt.value}"
    schedule = _every_minute(url, export_type, filters, clock)
    return f"""
Try it:

  export TOKEN={token}
  curl -s -X POST {url}/v1/exports -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
       -d {shlex.quote(body)}
  curl -s {url}/v1/exports/<task_id> -H "Authorization: Bearer $TOKEN"
  curl -sL -OJ {url}/v1/exports/<task_id>/download -H "Authorization: Bearer $TOKEN"
{schedule}Or with the CLI (in another terminal):

  source .venv/bin/activate && {cli_environment(url, token)}
  {cli} --wait --download ./out/
"""


def _every_minute(url: str, export_type: AnyExportType, filters: dict[str, object], clock: str) -> str:
    """The banner's schedule: ``export_type`` every minute, its window (when it has one) the
    previous day in Berlin time, with its runs and the mail they send."""
    window = export_type.window()
    if window is not None:
        filters = {name: value for name, value in filters.items() if name not in (window.start, window.end)}
        filters[window.start] = "previous_day"
    body = {
        "name": f"Every minute: {export_type.name}",
        "export_type": export_type.name,
        "format": "csv" if ExportFormat.CSV in export_type.formats else export_type.formats[0].value,
        "filters": filters,
        "every": {"minutes": 1},
        "timezone": "Europe/Berlin",
        "recipients": ["you@example.com"],
    }
    return f"""
A schedule that fires every minute (locally EXPORTS_MIN_SCHEDULE_INTERVAL_MIN={_min_interval()}; on AWS the
shortest interval is 15 minutes unless configured; see docs/schedules.md):

  curl -s -X POST {url}/v1/schedules -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
       -d {shlex.quote(json.dumps(body))}
  curl -s "{url}/v1/exports?schedule_id=<schedule_id>" -H "Authorization: Bearer $TOKEN"   (its runs)
  curl -s {url}/local/mailbox -H "Authorization: Bearer $TOKEN"   (the mail its runs sent)
  {clock}
"""


def _min_interval() -> str:
    from exports.core.config.env import Env

    return os.environ.get(Env.MIN_SCHEDULE_INTERVAL_MIN, "")


def _destinations(stack: LocalStack, url: str) -> str:
    """The banner's destinations: the customer's SFTP server and bucket, and how a destination
    manager delivers an export to both."""
    if stack.customer is None:
        return ""
    from exports.finishing.destinations.declaration import load_destination_access

    access, _ = load_destination_access(stack.config.exports_config)
    managers = [
        (token, user)
        for token, user in stack.config.tokens.items()
        if access.may_manage(Caller(user.user_id, dict(user.claims), None))
    ]
    if not managers:
        return ""
    token, user = managers[0]
    caller = Caller(user.user_id, dict(user.claims), None)
    return try_destinations(url, token, user.user_id, stack.customer, stack.export_types, caller, _recent(0))


def try_destinations(
    url: str,
    token: str,
    user_id: str,
    customer: CustomerSide,
    export_types: Sequence[AnyExportType],
    caller: Caller,
    day: str,
) -> str:
    """The banner's destination lines: create an SFTP and an S3 destination on the customer's
    side as ``user_id`` (a destination manager), then deliver an export of the first type they
    may use to both."""
    example = _example(export_types, caller, day)
    if example is None:
        return ""
    export_type, filters = example
    sftp = json.dumps({"name": "Customer SFTP", "target": customer.sftp_target()})
    s3 = json.dumps({"name": "Customer bucket", "target": customer.s3_target(REGION)})
    export = json.dumps(
        {
            "export_type": export_type.name,
            "filters": filters,
            "destinations": ["<sftp_destination_id>", "<s3_destination_id>"],
            "path_template": "{type}/{date}/{file}",
        }
    )
    post = f"curl -s -X POST {url}/v1/%s -H \"Authorization: Bearer $MANAGER\" -H 'Content-Type: application/json' \\"
    return f"""Deliver to the customer's own storage (docs/destinations.md), as {user_id}, a destination manager:

  SFTP server  sftp://{customer.sftp_target()["username"]}@127.0.0.1:{customer.sftp.port}/upload
               (files land in {customer.sftp_files}; host key {customer.sftp.fingerprint})
  S3 bucket    s3://{customer.bucket} in the customer's account, written through {customer.role_arn}

  export MANAGER={token}
  {post % "destinations"}
       -d {shlex.quote(sftp)}
  {post % "destinations"}
       -d {shlex.quote(s3)}
  {post % "exports"}
       -d {shlex.quote(export)}
  curl -s {url}/v1/exports/<task_id> -H "Authorization: Bearer $MANAGER"   (its deliveries)
"""


def _example(
    export_types: Sequence[AnyExportType], caller: Caller, day: str
) -> tuple[AnyExportType, dict[str, object]] | None:
    """The first export type ``caller`` may use whose filters can be made up from its schema."""
    for export_type in export_types:
        filters = example_filters(export_type, day) if export_type.allows(caller) else None
        if filters is not None:
            return export_type, filters
    return None


def _clock_line(stack: LocalStack) -> str:
    """How the schedule loop keeps time."""
    if stack.manual_clock:
        return '(EXPORTS_LOCAL_CLOCK=manual: schedules fire on POST /local/clock {"advance_sec": n})\n'
    return "(the local scheduler looks for due firings every 5 s)\n"


def _other_user(stack: LocalStack) -> str:
    """The line that shows tenancy: the same request as another user gives another file."""
    users = list(stack.config.tokens.items())
    if len(users) < 2:
        return ""
    token, user = users[1]
    return (
        f"\n  The same request with {user.user_id}'s token (TOKEN={token}) exports {user.user_id}'s own rows:"
        "\n  no user ever gets another tenant's.\n"
    )


def cli_environment(url: str, token: str) -> str:
    """The exports that make ``exportctl`` reach this stack: the token, and the URL whenever it
    is not the CLI's default (another ``PORT``), so the line works when copied."""
    from exports_client.cli import DEFAULT_URL

    line = f"export EXPORTS_TOKEN={token}"
    return line if url.rstrip("/") == DEFAULT_URL else f"{line} EXPORTS_API_URL={url}"


def _recent(days_ago: int) -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()


def _stop_with_parent() -> None:
    """Be sent SIGTERM when the process that started this one dies (``kill -9`` of ``make``):
    no orphan stack keeps serving the port (Linux; elsewhere a no-op). ``make run`` asks for
    it (``--stop-with-parent``); a stack started on its own may outlive its shell."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        return
    if os.getppid() == 1:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    """Start the stack, print how to use it, wait for Ctrl-C or SIGTERM (with
    ``--stop-with-parent``, also sent when the process that started it dies)."""
    parser = argparse.ArgumentParser(prog="python -m local_stack", description="The whole service, locally.")
    parser.add_argument(
        "--stop-with-parent", action="store_true", help="stop when the process that started this one dies"
    )
    arguments = parser.parse_args(argv)
    # Metrics are disabled locally; Powertools would warn about that on every request.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    # pgserver logs every initdb and pg_ctl run with its whole output.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    started = time.monotonic()
    # From the start: a SIGTERM (or the parent's death) during start-up stops the stack once up.
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    if arguments.stop_with_parent:
        _stop_with_parent()
    try:
        config = LocalConfig.from_env()
    except ValueError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    stack = LocalStack(config)
    print("starting exports locally: embedded PostgreSQL and AWS, tables, queues, demo data ...", flush=True)
    try:
        stack.start()
    except DeclarationError as error:
        # Checked before anything starts, or (the export types) stopped again: nothing to stop.
        print(f"declaration error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"could not start: {error}", file=sys.stderr)
        stack.stop()
        return 1
    print(_banner(stack, time.monotonic() - started), flush=True)
    gc.set_threshold(*GC_THRESHOLDS)
    # Timed waits: the kernel may hand Ctrl-C to any of the stack's threads, and then nothing
    # interrupts an untimed wait of the main thread, the only one that runs Python's handlers
    # (a loaded CI run ignored a SIGINT for 30 s). Woken every half second, it runs them.
    while not stopping.wait(0.5):
        pass
    print("\nstopping ...", flush=True)
    stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
