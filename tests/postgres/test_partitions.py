"""Partition plans of declared SQL types on a real PostgreSQL: keyset ranges from one numbering
query, runs of days counted, and each partition's rows exactly its share of the export."""

import math
from pathlib import Path
from typing import Any

import pytest

from exports.core.export_type import ExportType, Unbounded
from exports.export_types.loader import DeclarationError
from tests.postgres.conftest import declared_types, write_declaration

FILTERS = {"date_from": "2025-01-01", "date_to": "2025-03-31"}
# The demo types bind the caller's tenant (exports.toml).
ACME = {"tenant_id": "acme"}
SQL_TYPE = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.t]
description = "x"
source = "db"
query = "SELECT order_id, order_date FROM orders WHERE order_date BETWEEN %(date_from)s AND %(date_to)s"
date_ranges = [{ from = "date_from", to = "date_to", max_days = 366 }]
"""
DATES = """
[types.t.parameters.date_from]
type = "date"
[types.t.parameters.date_to]
type = "date"
"""


def _rows(export_type: ExportType, filters: Any, spec: Any = None) -> list[tuple[Any, ...]]:
    pages = (
        export_type.stream(filters, None, Unbounded())
        if spec is None
        else export_type.partition_stream(filters, spec, Unbounded())
    )
    return [tuple(row) for page in pages for row in page.rows]


@pytest.mark.parametrize(("size", "most", "expected"), [(200, 10, 5), (200, 2, 2), (10_000, 10, 1)])
def test_keyset_ranges_come_from_one_query_and_their_rows_make_the_export(
    demo_types: dict[str, ExportType], size: int, most: int, expected: int
) -> None:
    orders = demo_types["orders"]
    filters = orders.parse_filters(FILTERS, ACME)
    whole = _rows(orders, filters)

    specs = orders.plan_partitions(filters, Unbounded(), size, most)

    assert specs is not None and len(specs) == expected
    # The numbering query's step: every range but the last has the partition size's rows, or more
    # when that size would make more than ``most`` ranges.
    assert [spec.rows for spec in specs[:-1]] == [max(size, math.ceil(len(whole) / most))] * (expected - 1)
    assert sum(spec.rows for spec in specs) == len(whole)
    parts = [_rows(orders, filters, spec) for spec in specs]
    assert [len(part) for part in parts] == [spec.rows for spec in specs]
    assert [row for part in parts for row in part] == whole


def test_an_empty_export_plans_no_range(demo_types: dict[str, ExportType]) -> None:
    orders = demo_types["orders"]
    filters = orders.parse_filters({"date_from": "2001-01-01", "date_to": "2001-01-31"}, ACME)

    assert orders.plan_partitions(filters, Unbounded(), 10, 4) == []


def test_date_range_partitions_are_runs_of_days_counted_and_balanced(shop: str, tmp_path: Path) -> None:
    body = SQL_TYPE.replace('query = "', 'order_key = ["order_id"]\nquery = "') + DATES
    path = write_declaration(tmp_path, body + '[types.t.partitions]\nby = "date_range"\n')
    export_type = declared_types(path, {"DB_URL": shop})["t"]
    filters = export_type.parse_filters(FILTERS)
    whole = sorted(_rows(export_type, filters), key=lambda row: (row[1], row[0]))

    specs = export_type.plan_partitions(filters, Unbounded(), 400, 4)

    assert specs is not None and len(specs) == 4
    assert specs[0].filters["date_from"] == "2025-01-01"
    assert specs[-1].filters["date_to"] == "2025-03-31"
    parts = [_rows(export_type, filters, spec) for spec in specs]
    assert [len(part) for part in parts] == [spec.rows for spec in specs]
    assert sorted((row for part in parts for row in part), key=lambda row: (row[1], row[0])) == whole
    assert max(spec.rows for spec in specs) < 2 * min(spec.rows for spec in specs)


@pytest.mark.parametrize(
    ("extra", "where", "message"),
    [
        ('[types.t.partitions]\nby = "order_key"\n', "types.t: partitions.by", "need the type's order_key"),
        ('[types.t.partitions]\nby = "rows"\n', "types.t: partitions.by", "Input should be"),
        (
            '[types.t.partitions]\nby = "date_range"\ndate_range = "nope"\n',
            "types.t: partitions.date_range",
            "names no date range",
        ),
        (
            'order_key = ["order_id"]\n[types.t.partitions]\nby = "order_key"\ndate_range = "date_from"\n',
            "types.t: partitions.date_range",
            "is for date_range partitions",
        ),
    ],
)
def test_a_bad_partitions_declaration_names_its_key(tmp_path: Path, extra: str, where: str, message: str) -> None:
    path = write_declaration(tmp_path, SQL_TYPE + extra + DATES)

    with pytest.raises(DeclarationError) as raised:
        declared_types(path, {"DB_URL": "postgresql://nowhere"})

    assert str(raised.value).startswith(f"{path}: {where}"), str(raised.value)
    assert message in str(raised.value)


def test_optional_dates_cannot_be_cut(tmp_path: Path) -> None:
    dates = DATES.replace('type = "date"', 'type = "date"\nrequired = false')
    path = write_declaration(tmp_path, SQL_TYPE + '[types.t.partitions]\nby = "date_range"\n' + dates)

    with pytest.raises(DeclarationError, match="must be a date parameter, required or with a default"):
        declared_types(path, {"DB_URL": "postgresql://nowhere"})


def test_dynamodb_types_are_not_split(tmp_path: Path) -> None:
    body = """
[sources.d]
kind = "dynamodb"
[types.t]
description = "x"
source = "d"
columns = [{ name = "a" }]
dynamodb = { table = "tbl", partition_key = { name = "pk", value = "x" } }
[types.t.partitions]
by = "date_range"
"""
    path = write_declaration(tmp_path, body)

    with pytest.raises(DeclarationError, match=r"types\.t: partitions: only SQL types"):
        declared_types(path, {})


def test_a_sql_type_counts_the_rows_an_unsplit_export_measures_its_progress_against(
    demo_types: dict[str, ExportType],
) -> None:
    orders = demo_types["orders"]
    filters = orders.parse_filters(FILTERS, ACME)
    assert orders.count_rows(filters, Unbounded()) == len(_rows(orders, filters)) > 0
