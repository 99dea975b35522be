"""docs/export-your-own-data.md's recipe for a DynamoDB table of your own in local mode, as it is:
its declaration appended to exports.toml, `make run`'s stack started with it, its script run
against the embedded AWS, then exports over HTTP compared with the table read by boto3."""

import csv
import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.stack_process import ROOT, Stack, running_stack

pytestmark = pytest.mark.e2e

DOCS = ROOT / "docs" / "export-your-own-data.md"
MONTH = "2025-03"
TENANTS = {"alice": "acme", "bob": "globex"}


def docs_block(name: str, language: str) -> str:
    """The ``language`` block under ``<!-- example: name -->`` in the guide."""
    match = re.search(
        rf"<!-- example: {name} -->\n```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL
    )
    assert match, f"the example {name} is missing from {DOCS}"
    return match.group(1)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    declaration = tmp_path_factory.mktemp("own-table") / "my-exports.toml"
    repository = (ROOT / "exports.toml").read_text(encoding="utf-8")
    declaration.write_text(f"{repository}\n{docs_block('dynamodb-declaration', 'toml')}", encoding="utf-8")
    with running_stack(demo_orders=50, environment={"EXPORTS_CONFIG": str(declaration)}) as running:
        yield running


def export(stack: Stack, user: str, filters: dict[str, Any]) -> dict[str, Any]:
    """Submit an invoices_dynamodb export as ``user`` and wait until it ends: the task."""
    body: dict[str, Any] = {"export_type": "invoices_dynamodb", "format": "csv", "filters": filters}
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
    assert answer.status_code == 202, answer.text
    task_id = answer.json()["task_id"]
    deadline = time.monotonic() + 60
    while True:
        task = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers(user), timeout=10).json()
        if task["status"] not in ("PENDING", "RUNNING") or time.monotonic() > deadline:
            return task
        time.sleep(0.2)


def run_the_docs_script(stack: Stack, folder: Path) -> None:
    script = folder / "my_tables.py"
    script.write_text(docs_block("dynamodb-table", "python"), encoding="utf-8")
    # Only the variables the guide exports (the tests' own AWS settings left out).
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(
        {
            "AWS_ENDPOINT_URL": stack.aws_url,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    )
    exported = re.search(r"^export (AWS_ENDPOINT_URL=.*)$", DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    assert exported, "the guide's export line is missing"
    assert {pair.split("=")[0] for pair in exported.group(1).split()} == {
        n for n in environment if n.startswith("AWS_")
    }
    command = [sys.executable, str(script)]
    done = subprocess.run(command, check=False, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "table invoices: 300 items"


def invoices_in_the_table(stack: Stack, tenant: str) -> list[list[str]]:
    """The tenant's invoices of MONTH, read with boto3, as the file's rows should be."""
    items = stack.client("dynamodb").scan(TableName="invoices")["Items"]
    chosen = sorted(
        (item for item in items if item["tenant_id"]["S"] == tenant and item["sk"]["S"].startswith(MONTH)),
        key=lambda item: item["sk"]["S"],
    )
    fields = ("invoice_id", "issued_on", "customer")
    return [[*(item[name]["S"] for name in fields), item["amount"]["N"], item["status"]["S"]] for item in chosen]


def test_the_recipe_exports_each_tenants_invoices_from_the_users_own_table(stack: Stack, tmp_path: Path) -> None:
    # Given the type declared and the stack started, but the table not created yet:
    before = export(stack, "alice", {"month": MONTH})
    assert before["status"] == "FAILED" and before["error"]["code"] == "SOURCE_QUERY_FAILED", before
    # The caller reads a code and a reference (the task id); DynamoDB's own words are logged.
    assert before["task_id"] in before["error"]["message"]
    assert "ResourceNotFoundException" not in before["error"]["message"]

    # When the guide's script creates the table in the embedded AWS:
    run_the_docs_script(stack, tmp_path)

    # Then each caller's export holds exactly their tenant's invoices of the month.
    for user, tenant in TENANTS.items():
        task = export(stack, user, {"month": MONTH})
        assert task["status"] == "COMPLETED", task
        assert task["file_name"] == f"invoices_{MONTH}.csv"
        content = requests.get(task["download_url"], timeout=10).text
        header, *rows = list(csv.reader(io.StringIO(content)))
        assert header == ["Invoice", "Issued on", "Customer", "Amount", "Status"]
        expected = invoices_in_the_table(stack, tenant)
        assert rows == expected and len(rows) > 3, (user, rows)
    paid = export(stack, "alice", {"month": MONTH, "status": "paid"})
    assert paid["rows"] == sum(row[4] == "paid" for row in invoices_in_the_table(stack, "acme")) > 0

    # And the documented example request of the new type runs as it is.
    document = requests.get(f"{stack.url}/openapi.json", timeout=10).json()
    example = document["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert example["invoices_dynamodb"]["value"]["filters"] == {"month": MONTH}
