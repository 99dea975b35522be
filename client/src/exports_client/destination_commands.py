"""``exportctl destinations …``: where finished files are delivered (docs/destinations.md).

Secrets (an SFTP password, a ZIP password) are read from a file or stdin (``-``), never from an
option's value, which other users of the machine see in the process list. The answer of a create
shows what the customer must paste on their side (an SFTP key's ``authorized_keys`` line, an S3
role's trust policy) once; exportctl prints it in full and says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any, Final

from exports_client.client import ExportsClient
from exports_client.models import DestinationState, DestinationView, SftpAuth
from exports_client.options import LIST_PAGE_MAX, UsageError, positive_int
from exports_client.output import ExitCode, Output
from exports_client.render import destination_details, destination_table

_FINGERPRINT_HELP: Final = "SHA256:… as ssh-keygen -lf prints it"

_CREATE_EPILOG = """\
examples:
  exportctl destinations create sftp "Acme drop" --host sftp.acme.example --user exports --path /incoming \\
      --host-key-fingerprint SHA256:…      (the answer shows the public key for authorized_keys, once)
  exportctl destinations create sftp "Acme drop" --host sftp.acme.example --user exports --password-file -
  exportctl destinations create s3 "Acme bucket" --bucket acme-exports --region eu-central-1 \\
      --role-arn arn:aws:iam::123456789012:role/exports-delivery --prefix daily/
                                           (the answer shows the trust policy to give that role)

without --host-key-fingerprint the service fetches the server's key and shows its fingerprint:
compare it with the server's own, then: exportctl destinations confirm-host-key ID FINGERPRINT
"""


def _secret(path: str) -> str:
    """The first line of ``path`` (``-``: stdin), without its line end."""
    try:
        text = sys.stdin.readline() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from error
    secret = text.splitlines()[0] if text.strip() else ""
    if not secret:
        raise UsageError(f"{'stdin' if path == '-' else path} is empty: give the secret on its first line")
    return secret


def _encryption(args: argparse.Namespace) -> dict[str, Any] | None:
    """``encryption`` from --pgp-key-file, --zip-password-file or --no-encryption (at most one)."""
    given = [bool(args.pgp_key_file), bool(args.zip_password_file), bool(args.no_encryption)]
    if sum(given) > 1:
        raise UsageError("give one of --pgp-key-file, --zip-password-file and --no-encryption")
    if args.pgp_key_file:
        try:
            key = Path(args.pgp_key_file).read_text(encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot read {args.pgp_key_file}: {error.strerror}") from error
        return {"kind": "pgp", "pgp_public_key": key}
    if args.zip_password_file:
        return {"kind": "zip", "zip_password": _secret(args.zip_password_file)}
    if args.no_encryption:
        return {"kind": "none"}
    return None


def _use(args: argparse.Namespace) -> dict[str, list[str]] | None:
    return {"groups": args.use_groups} if args.use_groups else None


def _target(args: argparse.Namespace) -> dict[str, Any]:
    if args.kind == "s3":
        target: dict[str, Any] = {
            "kind": "s3",
            "bucket": args.bucket,
            "region": args.region,
            "role_arn": args.role_arn,
            "prefix": args.prefix,
        }
        if args.kms_key_arn:
            target |= {"server_side_encryption": "aws:kms", "kms_key_arn": args.kms_key_arn}
        return {key: value for key, value in target.items() if value is not None}
    target = {
        "kind": "sftp",
        "host": args.host,
        "port": args.port,
        "username": args.user,
        "path": args.path,
        "host_key_fingerprint": args.host_key_fingerprint,
    }
    if args.password_file:
        target |= {"auth": SftpAuth.PASSWORD.value, "password": _secret(args.password_file)}
    return {key: value for key, value in target.items() if value is not None}


def _once_notes(destination: DestinationView) -> list[str]:
    """What the customer must do on their side, from a create's (or confirm's) answer."""
    notes: list[str] = []
    if destination.public_key:
        notes += [
            "add this line to the SFTP user's ~/.ssh/authorized_keys (it is shown only this once):",
            destination.public_key,
        ]
    if destination.trust_policy:
        notes += ["the role's trust policy (its trust relationships):", json.dumps(destination.trust_policy, indent=2)]
    if destination.permissions_policy:
        notes += ["the role's permissions policy:", json.dumps(destination.permissions_policy, indent=2)]
    target = destination.target
    if destination.state == DestinationState.HOST_KEY_UNCONFIRMED and target.kind == "sftp":
        notes.append(
            f"the server offered the host key {target.offered_host_key_fingerprint}: compare it with the server's "
            f"own (ssh-keygen -lf), then: exportctl destinations confirm-host-key {destination.destination_id} "
            f"{target.offered_host_key_fingerprint}"
        )
    return notes


def _shown(destination: DestinationView, output: Output) -> None:
    output.result(destination, destination_details(destination))
    if not output.as_json:
        for note in _once_notes(destination):
            output.note(note)


# -- commands --------------------------------------------------------------------------------------


def _list(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    page_size = min(args.limit, LIST_PAGE_MAX)
    destinations = list(islice(_every_destination(client, page_size), args.limit))
    output.result(destinations, destination_table(destinations) if destinations else "no destinations")
    return ExitCode.OK


def _every_destination(client: ExportsClient, page_size: int) -> Iterator[DestinationView]:
    next_token: str | None = None
    while True:
        page = client.list_destinations(limit=page_size, next_token=next_token)
        yield from page.items
        if not page.next_token:
            return
        next_token = page.next_token


def _get(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    destination = client.get_destination(args.destination_id)
    output.result(destination, destination_details(destination))
    return ExitCode.OK


def _create(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    destination = client.create_destination(
        args.name,
        _target(args),
        encryption=_encryption(args),
        use=_use(args),
        idempotency_key=args.idempotency_key,
    )
    _shown(destination, output)
    return ExitCode.OK


def _update(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    changes: dict[str, Any] = {
        "name": args.name,
        "path": args.path,
        "prefix": args.prefix,
        "host_key_fingerprint": args.host_key_fingerprint,
        "password": _secret(args.password_file) if args.password_file else None,
        "encryption": _encryption(args),
        "use": _use(args),
    }
    changes = {key: value for key, value in changes.items() if value is not None}
    if not changes:
        raise UsageError("nothing to change: give at least one option (see: exportctl destinations update --help)")
    _shown(client.update_destination(args.destination_id, **changes), output)
    return ExitCode.OK


def _delete(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    client.delete_destination(args.destination_id)
    output.result({"destination_id": args.destination_id, "deleted": True}, f"deleted {args.destination_id}")
    return ExitCode.OK


def _confirm(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    _shown(client.confirm_destination(args.destination_id, args.fingerprint), output)
    return ExitCode.OK


def _verify(client: ExportsClient, args: argparse.Namespace, output: Output) -> ExitCode:
    verdict = client.verify_destination(args.destination_id)
    if verdict.ok:
        output.result(verdict, f"OK: a probe file was written to {args.destination_id} and removed")
        return ExitCode.OK
    step = verdict.failed_step.value if verdict.failed_step else "?"
    output.result(verdict, f"FAILED at {step}: {verdict.message}")
    return ExitCode.FAILURE


# -- the command line ------------------------------------------------------------------------------


def _add_common_options(parser: argparse.ArgumentParser) -> None:
    """Options that create and update share: encryption at delivery and who may use it."""
    encryption = parser.add_argument_group("encryption at delivery (one of)")
    encryption.add_argument("--pgp-key-file", metavar="FILE", help="OpenPGP: encrypt to this armored public key")
    encryption.add_argument(
        "--zip-password-file", metavar="FILE|-", help="an AES-256 ZIP with the password on FILE's first line"
    )
    encryption.add_argument("--no-encryption", action="store_true", help="deliver the file as it is (the default)")
    parser.add_argument(
        "--use-group",
        dest="use_groups",
        action="append",
        default=[],
        metavar="GROUP",
        help="only members of GROUP may name it on an export (repeat it; default: everyone of the tenant)",
    )


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``destinations`` (list, get, create, update, delete, confirm-host-key, verify)."""
    destinations = commands.add_parser(
        "destinations", parents=[common], help="where finished files are delivered: SFTP servers, S3 buckets"
    )
    actions = destinations.add_subparsers(dest="destination_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", parents=[common], help="your tenant's destinations, newest first")
    listing.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    listing.set_defaults(run=_list)

    create = actions.add_parser(
        "create",
        parents=[common],
        help="create a destination",
        epilog=_CREATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = create.add_subparsers(dest="kind", required=True, metavar="KIND")
    sftp = kinds.add_parser("sftp", parents=[common], help="the customer's SFTP server")
    sftp.add_argument("name", metavar="NAME")
    sftp.add_argument("--host", required=True)
    sftp.add_argument("--port", type=positive_int, help="default 22")
    sftp.add_argument("--user", required=True, help="the user the service logs in as")
    sftp.add_argument("--path", help="the directory files go to (default: the user's home)")
    sftp.add_argument("--host-key-fingerprint", metavar="FINGERPRINT", help=_FINGERPRINT_HELP)
    sftp.add_argument(
        "--password-file",
        metavar="FILE|-",
        help="log in with the password on FILE's first line (default: a key pair the service makes)",
    )
    s3 = kinds.add_parser("s3", parents=[common], help="the customer's S3 bucket, through a role of theirs")
    s3.add_argument("name", metavar="NAME")
    s3.add_argument("--bucket", required=True)
    s3.add_argument("--region", required=True, help="the bucket's, e.g. eu-central-1")
    s3.add_argument("--role-arn", required=True, metavar="ARN", help="the role in their account the service assumes")
    s3.add_argument("--prefix", help="the key prefix files go under")
    s3.add_argument("--kms-key-arn", metavar="ARN", help="encrypt with this KMS key (default: SSE-S3)")
    for kind in (sftp, s3):
        _add_common_options(kind)
        kind.add_argument("--idempotency-key", metavar="KEY", help="a repeated create with it answers the same")
        kind.set_defaults(run=_create)

    update = actions.add_parser("update", parents=[common], help="change a destination (only what is given)")
    update.add_argument("destination_id", metavar="ID")
    update.add_argument("--name")
    update.add_argument("--path", help="SFTP: the directory files go to")
    update.add_argument("--prefix", help="S3: the key prefix files go under")
    update.add_argument(
        "--host-key-fingerprint", metavar="FINGERPRINT", help=f"SFTP: pin this key ({_FINGERPRINT_HELP})"
    )
    update.add_argument("--password-file", metavar="FILE|-", help="SFTP password login: the new password")
    _add_common_options(update)
    update.set_defaults(run=_update)

    confirm = actions.add_parser(
        "confirm-host-key", parents=[common], help="pin the SFTP host key the service was offered, by its fingerprint"
    )
    confirm.add_argument("destination_id", metavar="ID")
    confirm.add_argument("fingerprint", metavar="FINGERPRINT", help=_FINGERPRINT_HELP)
    confirm.set_defaults(run=_confirm)

    for action, run, text in (
        ("get", _get, "show one destination"),
        ("delete", _delete, "delete a destination and its secret"),
        ("verify", _verify, "write and remove a probe file; says what failed (exit 1)"),
    ):
        command = actions.add_parser(action, parents=[common], help=text)
        command.add_argument("destination_id", metavar="ID")
        command.set_defaults(run=run)
