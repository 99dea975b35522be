"""``exportctl deliveries …``: a task's file deliveries to its destinations (docs/destinations.md).

``retry`` asks for a FAILED delivery again once the customer's side is fixed: the delivery is
PENDING again at once and a new round of attempts runs on the server; ``exportctl status`` shows
how it ends.
"""

from __future__ import annotations

import argparse
from typing import Any

from exports_client.client import ExportsClient
from exports_client.output import ExitCode, Output
from exports_client.render import task_details


def _retry(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    task = client.retry_delivery(args.task_id, args.destination_id)
    output.result(task, task_details(task))
    if not output.as_json:
        output.note(f"delivery to {args.destination_id} retried; follow it with: exportctl status {task.task_id}")
    return ExitCode.OK


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """``deliveries retry``."""
    deliveries = commands.add_parser(
        "deliveries", parents=[common], help="a task's file deliveries to its destinations"
    )
    actions = deliveries.add_subparsers(dest="delivery_command", required=True, metavar="ACTION")
    retry = actions.add_parser(
        "retry",
        parents=[common],
        help="try a FAILED delivery of a completed export again (the same file, a new round of attempts)",
    )
    retry.add_argument("task_id", metavar="TASK")
    retry.add_argument("destination_id", metavar="DESTINATION")
    retry.set_defaults(run=_retry)
