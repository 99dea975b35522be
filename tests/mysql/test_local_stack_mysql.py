"""`EXPORTS_DEMO_MYSQL=1 make run`: the stack in its own process starts MariaDB, loads the demo
tables and serves the MySQL demo declaration; alice (tenant acme) and bob (globex) export
``mysql_orders`` over real HTTP in every format, and each file holds exactly their tenant's
rows, as the ``mariadb`` client reads them."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import requests
from python_calamine import CalamineWorkbook

from local_stack.stack import MYSQL_DEMO_DECLARATION
from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import Stack, recent, running_stack

pytestmark = pytest.mark.e2e

TENANTS = {"alice": "acme", "bob": "globex"}
DAYS = {"date_from": recent(30), "date_to": recent(0)}


@pytest.fixture(scope="module")
def mysql_stack() -> Iterator[tuple[Stack, Path]]:
    with tempfile.TemporaryDirectory(prefix="exports-stack-mariadb-") as folder:
        environment = {
            "EXPORTS_DEMO_MYSQL": "1",
            "EXPORTS_CONFIG": str(MYSQL_DEMO_DECLARATION),
            "EXPORTS_MYSQL_DIR": folder,
            "EXPORTS_DEMO_ORDERS": "600",
        }
        with running_stack(environment=environment) as stack:
            yield stack, Path(folder) / "mysqld.sock"


def client_order_ids(socket: Path, tenant: str) -> list[str]:
    """The tenant's order ids in DAYS, in key order, as the mariadb client prints them."""
    query = (
        f"SELECT order_id FROM orders WHERE tenant_id = '{tenant}' AND order_date BETWEEN "
        f"'{DAYS['date_from']}' AND '{DAYS['date_to']}' ORDER BY order_date, order_id"
    )
    output = subprocess.run(
        [
            "mariadb",
            "--no-defaults",
            f"--socket={socket}",
            "-uroot",
            "--batch",
            "--skip-column-names",
            "shop",
            "-e",
            query,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return output.split()


def order_ids(fmt: str, body: bytes) -> list[str]:
    """The file's first column (order_id), read back with libraries the service does not write with."""
    if fmt.endswith(".gz"):
        body, fmt = gzip.decompress(body), fmt.removesuffix(".gz")
    if fmt == "csv":
        return [row[0] for row in csv.reader(io.StringIO(body.decode("utf-8-sig"), newline=""))][1:]
    if fmt == "jsonl":
        return [json.loads(line)["order_id"] for line in body.decode("utf-8").splitlines()]
    if fmt == "parquet":
        return [str(value) for value in pq.read_table(io.BytesIO(body)).column("order_id").to_pylist()]
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(body)).get_sheet_by_index(0).to_python()
    return [str(row[0]) for row in sheet[1:]]


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "jsonl", "jsonl.gz", "xlsx", "parquet", "pdf"])
def test_each_tenant_exports_exactly_their_rows_in_every_format(mysql_stack: tuple[Stack, Path], fmt: str) -> None:
    stack, socket = mysql_stack
    files = {}
    for user, tenant in TENANTS.items():
        body: dict[str, Any] = {"export_type": "mysql_orders", "format": fmt, "filters": DAYS}
        answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
        assert answer.status_code == 202, answer.text
        view, files[tenant] = finished(stack, answer.json()["task_id"], user)
        expected = client_order_ids(socket, tenant)
        assert view["rows"] == len(expected) > 0
        if fmt != "pdf":
            assert order_ids(fmt, files[tenant]) == expected

    assert files["acme"] != files["globex"]


def test_a_caller_cannot_set_the_tenant(mysql_stack: tuple[Stack, Path]) -> None:
    stack, _ = mysql_stack
    body: dict[str, Any] = {"export_type": "mysql_orders", "format": "csv", "filters": {**DAYS, "tenant_id": "globex"}}

    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers("alice"), timeout=10)

    assert answer.status_code == 422
    assert "bound to the caller's identity" in answer.text


def test_the_banner_names_the_mysql_source(mysql_stack: tuple[Stack, Path]) -> None:
    stack, _ = mysql_stack

    assert "MySQL        mysql://exports_reader:" in stack.output()
    assert "mysql_orders" in stack.output()
