"""The make run banner: its CLI line works when copied, whatever the port, and its "Try it"
commands are made from the declared export types."""

import json
import shlex
from pathlib import Path
from typing import Any

from exports.accepting.requests import ExportRequest
from exports.core.aws.clients import ClientFactory
from exports.core.caller import Caller
from exports.core.export_type import AnyExportType
from exports.export_types.build import build_export_types
from exports.export_types.loader import default_path, load_declarations
from exports.finishing.destinations.kinds.s3 import S3TargetSpec
from exports.finishing.destinations.kinds.sftp import SftpTargetSpec
from exports.finishing.destinations.requests import DestinationRequest
from exports.sources.kind import SourceReaders
from local_stack.__main__ import cli_environment, try_destinations, try_it
from local_stack.customer_side import CUSTOMER_ROLE, CustomerSide
from local_stack.sftp_server import LocalSftpServer

DAY = "2026-11-30"
URL = "http://127.0.0.1:8102"
INVOICES = """
[sources.billing]
kind = "postgresql"
url_env = "BILLING_URL"

[types.archive]
description = "for auditors only"
source = "billing"
query = "SELECT 1 AS n"
allow = { groups = ["auditors"] }

[types.invoices]
description = "invoices of a day"
source = "billing"
query = "SELECT invoice_no FROM invoices WHERE issued_on = %(issued_on)s AND state = %(state)s"
formats = ["jsonl", "csv"]

[types.invoices.parameters.issued_on]
type = "date"

[types.invoices.parameters.state]
type = "enum"
values = ["open", "paid"]
"""


def test_the_default_port_needs_only_the_token() -> None:
    assert cli_environment("http://127.0.0.1:8000", "dev-x") == "export EXPORTS_TOKEN=dev-x"


def test_another_port_also_sets_the_api_url() -> None:
    line = cli_environment("http://127.0.0.1:8123", "dev-x")
    assert line == "export EXPORTS_TOKEN=dev-x EXPORTS_API_URL=http://127.0.0.1:8123"


def built(path: Path, environ: dict[str, str]) -> list[AnyExportType]:
    """The file's export types, as the functions build them (no connection is opened)."""
    readers = SourceReaders(client=ClientFactory(), environ=environ)
    return build_export_types(load_declarations(path), readers).types


def submitted(banner: str) -> dict[str, Any]:
    """The body of the banner's curl submit, as the shell would pass it."""
    words = shlex.split(banner.split("curl -s -X POST", 1)[1].split("\n  curl", 1)[0].replace("\\\n", " "))
    body: dict[str, Any] = json.loads(words[words.index("-d") + 1])
    return body


def test_try_it_uses_a_declared_type_the_first_user_may_use(tmp_path: Path) -> None:
    path = tmp_path / "exports.toml"
    path.write_text(INVOICES, encoding="utf-8")
    types = built(path, {"BILLING_URL": "postgresql://billing.example.internal/billing"})

    banner = try_it(URL, "dev-a", types, Caller("alice", {}, None), DAY)

    # Not the demo's orders, nor a type alice may not see; a format the type has.
    expected: dict[str, Any] = {
        "export_type": "invoices",
        "format": "jsonl",
        "filters": {"issued_on": DAY, "state": "open"},
    }
    assert submitted(banner) == expected
    assert "orders" not in banner and "archive" not in banner
    cli = next(line for line in banner.splitlines() if "exportctl submit" in line)
    words = shlex.split(cli)
    assert words[:3] == ["exportctl", "submit", "invoices"]
    assert json.loads(words[words.index("--filters") + 1]) == expected["filters"]
    assert words[words.index("--format") + 1] == "jsonl"
    invoices = types[1]
    invoices.parse_filters(expected["filters"])  # the filters pass the type's own rules


def test_try_it_on_the_demo_declaration_submits_orders_that_validate() -> None:
    types = built(default_path(), {"EXPORTS_SHOP_DATABASE_URL": "postgresql://shop.example.internal/shop"})
    alice = Caller("alice", {"custom:tenant_id": "acme"}, None)

    body = submitted(try_it(URL, "dev-a", types, alice, DAY))

    assert body == {"export_type": "orders", "format": "xlsx", "filters": {"date_from": DAY, "date_to": DAY}}
    orders = next(export_type for export_type in types if export_type.name == "orders")
    orders.parse_filters(body["filters"], orders.bind_caller(alice))


def test_without_a_usable_type_try_it_lists_the_types() -> None:
    banner = try_it(URL, "dev-a", [], Caller("alice", {}, None), DAY)

    assert f"curl -s {URL}/v1/export-types" in banner and "exportctl submit" not in banner


def posted(banner: str) -> list[dict[str, Any]]:
    """The bodies of the banner's curl POSTs, in order, as the shell would pass them."""
    bodies = []
    for command in banner.split("curl -s -X POST")[1:]:
        words = shlex.split(command.split("\n  curl", 1)[0].replace("\\\n", " "))
        bodies.append(json.loads(words[words.index("-d") + 1]))
    return bodies


def test_the_destination_lines_create_both_kinds_on_the_customers_side_and_deliver_to_them(tmp_path: Path) -> None:
    types = built(default_path(), {"EXPORTS_SHOP_DATABASE_URL": "postgresql://shop.example.internal/shop"})
    carol = Caller("carol", {"custom:tenant_id": "initech", "cognito:groups": ["admin"]}, None)
    server = LocalSftpServer(tmp_path, port=2222)
    customer = CustomerSide(sftp=server, sftp_password="s3cret-pass")

    try:
        banner = try_destinations(URL, "dev-c", "carol", customer, types, carol, DAY)
    finally:
        server.shutdown()

    sftp_body, s3_body, export = posted(banner)
    sftp_request, s3_request = DestinationRequest.model_validate(sftp_body), DestinationRequest.model_validate(s3_body)
    assert isinstance(sftp_request.target, SftpTargetSpec) and isinstance(s3_request.target, S3TargetSpec)
    assert sftp_request.target.host_key_fingerprint == server.fingerprint
    assert s3_request.target.role_arn == CUSTOMER_ROLE
    assert export["destinations"] == ["<sftp_destination_id>", "<s3_destination_id>"]
    ids = ["dst_01JABCDEFGHJKMNPQRSTVWXYZ0", "dst_01JABCDEFGHJKMNPQRSTVWXYZ1"]
    request = ExportRequest.model_validate(export | {"destinations": ids})
    assert request.export_type == "orders" and request.path_template == "{type}/{date}/{file}"
    assert "export MANAGER=dev-c" in banner and "as carol" in banner
