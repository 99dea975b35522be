"""The installed `exportctl` against `make run`'s own declaration (exports.toml on the embedded
PostgreSQL): every demo type submitted with its filters from the served schema, and downloaded."""

import csv
import json
import re
from pathlib import Path

import openpyxl
import pytest

from exports_client.output import ExitCode
from tests.client.e2e_support import Exportctl
from tests.stack_process import Stack, recent

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pg_stack(postgres_stack: Stack) -> Stack:
    """The stack as `make run` starts it: exports.toml's types on PostgreSQL."""
    return postgres_stack


@pytest.fixture(scope="module")
def pg_exportctl(pg_stack: Stack) -> Exportctl:
    return Exportctl(pg_stack.url, pg_stack.tokens["alice"])


def downloaded(result_stdout: str) -> Path:
    path = Path(result_stdout.strip())
    assert path.is_file(), result_stdout
    return path


def csv_rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.reader(file))


def test_types_lists_every_declared_type_with_its_filters(pg_exportctl: Exportctl) -> None:
    result = pg_exportctl("types")

    assert result.returncode == ExitCode.OK, result.stderr
    for name in ("orders", "customers", "sales_report", "orders_dynamodb"):
        assert re.search(rf"^{name} \(", result.stdout, re.MULTILINE), result.stdout
    assert re.search(r"^\s+countries\s+list of string\s+no\s+up to 50; each matching \[A-Z\]\{2\}", result.stdout,
                     re.MULTILINE)  # fmt: skip
    assert re.search(r"^\s+currency\s+string\s+yes\s+matching \[A-Z\]\{3\}", result.stdout, re.MULTILINE)
    assert "exportctl submit customers --from YYYY-MM-DD --to YYYY-MM-DD [--filter countries=A,B]" in result.stdout


def test_customers_with_a_list_filter(pg_exportctl: Exportctl, tmp_path: Path) -> None:
    result = pg_exportctl("submit", "customers", "--from", recent(365), "--to", recent(0),
                          "--filter", "countries=DE,FR", "--download", f"{tmp_path}/")  # fmt: skip

    assert result.returncode == ExitCode.OK, result.stderr
    path = downloaded(result.stdout)
    assert path.name == f"customers_{recent(365)}_{recent(0)}.csv"
    header, *rows = csv_rows(path)
    country = header.index("Country")
    assert rows
    assert {row[country] for row in rows} == {"DE", "FR"}


def test_sales_report_with_a_string_filter_as_xlsx(pg_exportctl: Exportctl, tmp_path: Path) -> None:
    result = pg_exportctl("submit", "sales_report", "--filter", f"date_from={recent(6)}", "--filter",
                          f"date_to={recent(0)}", "--filter", "currency=EUR", "--format", "xlsx",
                          "--download", f"{tmp_path}/")  # fmt: skip

    assert result.returncode == ExitCode.OK, result.stderr
    path = downloaded(result.stdout)
    assert path.name == f"sales_report_EUR_{recent(6)}_{recent(0)}.xlsx"
    header, *rows = list(openpyxl.load_workbook(path, read_only=True).active.iter_rows(values_only=True))
    assert header[:3] == ("Day", "Status", "Currency")
    assert len(rows) == 7 * 6  # every day and status, zeros included
    assert {row[2] for row in rows} == {"EUR"}


def test_orders_with_an_enum_and_chosen_columns(pg_exportctl: Exportctl, tmp_path: Path) -> None:
    result = pg_exportctl("submit", "orders", "--from", recent(30), "--to", recent(0), "--filter", "status=delivered",
                          "--filter", "columns=order_id,status,amount", "--download", f"{tmp_path}/",
                          "--priority", "2", "--timeout", "600", "--csv-bom", "--json")  # fmt: skip

    assert result.returncode == ExitCode.OK, result.stderr
    task = json.loads(result.stdout)
    assert task["priority"] == 2
    assert task["filters"]["columns"] == ["order_id", "status", "amount"]
    path = Path(task["path"])
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    header, *rows = csv_rows(path)
    assert header == ["\ufeffOrder ID", "Status", "Amount"]
    assert rows
    assert {row[1] for row in rows} == {"delivered"}


def test_a_filter_the_schema_refuses_is_named_and_nothing_is_submitted(pg_exportctl: Exportctl) -> None:
    before = json.loads(pg_exportctl("list", "--json", "--limit", "100").stdout)

    result = pg_exportctl("submit", "customers", "--from", recent(30), "--to", recent(0), "--filter", "countries=de")

    assert result.returncode == ExitCode.USAGE == 2
    assert result.stderr == 'exportctl: filter countries: value 1 must match [A-Z]{2}, not "de"\n'
    assert json.loads(pg_exportctl("list", "--json", "--limit", "100").stdout) == before
