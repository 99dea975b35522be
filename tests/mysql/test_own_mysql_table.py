"""docs/export-your-own-data.md, "Your own MySQL or MariaDB table, locally", followed as written:
`EXPORTS_DEMO_MYSQL=1 make run` once, the guide's table created in its MariaDB, the guide's
declaration appended to a copy of the MySQL demo file, the stack restarted with it; alice (acme)
and bob (globex) export the type in every format. alice's CSV is the guide's, line for line;
every file holds exactly its tenant's invoices, read back with other libraries than ours."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import requests
from python_calamine import CalamineWorkbook

from local_stack.embedded_mariadb import EmbeddedMariaDB
from local_stack.stack import MYSQL_DEMO_DECLARATION
from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import Stack, running_stack

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "docs" / "export-your-own-data.md"
FILTERS = {"date_from": "2025-03-01", "date_to": "2025-03-31"}
INVOICES = {"acme": ["INV-001", "INV-002"], "globex": ["INV-003"]}
USERS = {"alice": "acme", "bob": "globex"}


def example(name: str, language: str) -> str:
    """The ``language`` block under ``<!-- example: name -->`` in the guide."""
    match = re.search(
        rf"<!-- example: {name} -->\n```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL
    )
    assert match, f"the example {name} is missing from {DOCS}"
    return match.group(1)


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Path]]:
    folder = tmp_path_factory.mktemp("own-mysql")
    mysql_dir = folder / "mariadb"
    # Step 0: the first `make run` created the database; here, the same server on the same folder.
    first = EmbeddedMariaDB(mysql_dir)
    first.start()
    try:
        first.create_database("shop")
        first.admin(example("mysql-table", "sql"), database="shop")
    finally:
        first.stop()
    declaration = folder / "my-exports.toml"
    declaration.write_text(
        MYSQL_DEMO_DECLARATION.read_text(encoding="utf-8")
        + "\n"
        + example("mysql-declaration", "toml")
        + "\n"
        + example("mysql-columns", "toml"),
        encoding="utf-8",
    )
    environment = {"EXPORTS_DEMO_MYSQL": "1", "EXPORTS_CONFIG": str(declaration), "EXPORTS_MYSQL_DIR": str(mysql_dir)}
    with running_stack(environment=environment) as stack:
        yield stack, mysql_dir / "mysqld.sock"


def invoice_ids(fmt: str, body: bytes) -> list[str]:
    if fmt.endswith(".gz"):
        body, fmt = gzip.decompress(body), fmt.removesuffix(".gz")
    if fmt == "csv":
        return [row[0] for row in csv.reader(io.StringIO(body.decode("utf-8-sig"), newline=""))][1:]
    if fmt == "jsonl":
        return [json.loads(line)["invoice_id"] for line in body.decode("utf-8").splitlines()]
    if fmt == "parquet":
        return [str(value) for value in pq.read_table(io.BytesIO(body)).column("invoice_id").to_pylist()]
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
    return [str(row[0]) for row in sheet[1:]]


def export(stack: Stack, user: str, fmt: str) -> tuple[dict[str, Any], bytes]:
    body: dict[str, Any] = {"export_type": "invoices_mysql", "format": fmt, "filters": FILTERS}
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
    assert answer.status_code == 202, answer.text
    return finished(stack, answer.json()["task_id"], user)


def test_alices_csv_is_the_guides(own_stack: tuple[Stack, Path]) -> None:
    stack, _ = own_stack
    documented = [
        line.removeprefix("# ") for line in example("mysql-export", "bash").splitlines() if line.startswith("# ")
    ]

    _, body = export(stack, "alice", "csv")

    assert body.decode("utf-8-sig").splitlines() == documented


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "jsonl", "jsonl.gz", "xlsx", "parquet", "pdf"])
def test_each_tenant_gets_exactly_their_invoices_in_every_format(own_stack: tuple[Stack, Path], fmt: str) -> None:
    stack, socket = own_stack
    for user, tenant in USERS.items():
        view, body = export(stack, user, fmt)
        client = subprocess.run(
            [
                "mariadb",
                "--no-defaults",
                f"--socket={socket}",
                "-uroot",
                "--batch",
                "--skip-column-names",
                "shop",
                "-e",
                f"SELECT invoice_id FROM invoices WHERE tenant_id = '{tenant}' AND issued_on BETWEEN '2025-03-01' "
                "AND '2025-03-31' ORDER BY issued_on, invoice_id",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert client == INVOICES[tenant] and view["rows"] == len(client)
        if fmt != "pdf":
            assert invoice_ids(fmt, body) == client
