"""The make run banner: its CLI line works when copied, whatever the port, and its "Try it"
commands are made from the declared export types."""

import json
import shlex
from pathlib import Path
from typing import Any

from exports.core.aws.clients import ClientFactory
from exports.core.caller import Caller
from exports.core.export_type import AnyExportType
from exports.export_types.build import build_export_types
from exports.export_types.loader import default_path, load_declarations
from exports.sources.kind import SourceReaders
from local_stack.__main__ import cli_environment, try_it

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
