"""The argument types and option groups every exportctl command shares: priorities, timeouts,
filters, the CSV dialect and locale, following a task."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final

from exports_client.client import DEFAULT_CAPACITY_WAIT_SEC, ExportsClient
from exports_client.filters import filter_schemas

# Where exportctl finds the service and the caller's token when --url and --token are not given.
URL_ENV: Final = "EXPORTS_API_URL"
TOKEN_ENV: Final = "EXPORTS_TOKEN"
LIST_PAGE_MAX: Final = 100

PRIORITY_HIGHEST: Final = 1

PRIORITY_LOWEST: Final = 10


class UsageError(Exception):
    """A command line that cannot be right, found before any request changes anything (exit 2)."""


def filters_for(
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
DIALECT_OPTIONS = {
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
    for key, (flag, choices) in DIALECT_OPTIONS.items():
        parser.add_argument(
            flag, dest=f"csv_{key}", choices=list(choices), help=f"CSV {key.replace('_', ' ')} (default: the service's)"
        )


def csv_dialect(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``csv_dialect`` the options ask for; None when none was given (the service's default)."""
    given = {
        key: choices[value] for key, (_, choices) in DIALECT_OPTIONS.items() if (value := getattr(args, f"csv_{key}"))
    }
    return given or None


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def priority_level(value: str) -> int:
    if not value.strip().lstrip("+-").isdigit() or not PRIORITY_HIGHEST <= int(value) <= PRIORITY_LOWEST:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from {PRIORITY_HIGHEST} (highest) to {PRIORITY_LOWEST}, not {value!r}"
        )
    return int(value)


def timeout_seconds(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(
            f"the export's own timeout in whole seconds (the API's timeout_sec), not {value!r};"
            " to stop waiting sooner use --wait-timeout"
        )
    return int(value)


def wait_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return seconds


def key_value_pair(value: str) -> tuple[str, str]:
    key, equals, text = value.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"give KEY=VALUE, not {value!r}")
    return key.strip(), text


def json_object(value: str) -> dict[str, Any]:
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


def add_follow_options(parser: argparse.ArgumentParser, default_wait: str) -> None:
    parser.add_argument("--wait", action="store_true", help="show progress until the export ends")
    parser.add_argument(
        "--wait-timeout",
        type=wait_seconds,
        metavar="SECONDS",
        help=f"with --wait or --download: stop waiting after this long (default: {default_wait})",
    )
    parser.add_argument("--download", metavar="DIR", help="wait, then save the file into DIR (created if needed)")


def add_capacity_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait-for-capacity",
        type=wait_seconds,
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


def add_destination_options(parser: argparse.ArgumentParser) -> None:
    """``--destination`` (repeatable) and ``--path-template``, as submit and schedules take them."""
    parser.add_argument(
        "--destination",
        dest="destinations",
        action="append",
        default=[],
        metavar="ID",
        help="deliver the COMPLETED file to this destination (repeat it; see: exportctl destinations list)",
    )
    parser.add_argument(
        "--path-template",
        metavar="TEMPLATE",
        help="where the file goes under each destination: {type}, {date}, {task_id}, {file} (default {file})",
    )


def destination_choice(args: argparse.Namespace) -> dict[str, Any]:
    """The ``destinations`` and ``path_template`` keywords of submit and create_schedule."""
    if args.path_template is not None and not args.destinations:
        raise UsageError("--path-template places the file on a destination: give --destination too")
    return {"destinations": args.destinations or None, "path_template": args.path_template}
