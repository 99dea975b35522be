"""The MySQL kind on a real MariaDB: the demo declaration's types read their tenant's rows in
order-key order, in pages, resume after a cursor, split into keyset partitions, and infer their
columns; the session is pinned to UTC whatever the server's zone."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from exports.core.caller import Caller
from exports.core.export_type import ColumnKind, ExportType, Unbounded
from local_stack.embedded_mariadb import SERVER_TIME_ZONE, EmbeddedMariaDB
from tests.mysql.conftest import declared_types, run_as_root

ACME = Caller(user_id="alice", claims={"custom:tenant_id": "acme", "cognito:groups": ["analysts"]})
FILTERS = {"date_from": "2025-03-01", "date_to": "2025-03-31"}


def rows_of(export_type: ExportType, raw: dict[str, Any], caller: Caller = ACME) -> list[Any]:
    filters = export_type.parse_filters(raw, export_type.bind_caller(caller))
    return [row for page in export_type.pages(filters) for row in page.rows]


def database_rows(mariadb: EmbeddedMariaDB, tenant: str) -> list[tuple[Any, ...]]:
    return run_as_root(
        mariadb,
        "shop",
        "SET time_zone = '+00:00'",
        "SELECT order_id, order_date, created_at, customer_id, customer_name, customer_email, country, status, "
        f"item_count, items, amount, currency, note FROM orders WHERE tenant_id = '{tenant}' "
        "AND order_date BETWEEN '2025-03-01' AND '2025-03-31' ORDER BY order_date, order_id",
    )


def test_a_type_reads_its_tenants_rows_in_key_order_as_the_database_holds_them(
    demo_mysql_types: dict[str, ExportType], mariadb: EmbeddedMariaDB
) -> None:
    rows = rows_of(demo_mysql_types["mysql_orders"], FILTERS)

    assert rows == database_rows(mariadb, "acme")
    assert len(rows) > 100
    assert isinstance(rows[0][1], date) and isinstance(rows[0][2], datetime) and isinstance(rows[0][10], Decimal)


def test_the_session_reads_timestamps_in_utc_whatever_the_servers_zone(
    demo_mysql_types: dict[str, ExportType], mariadb: EmbeddedMariaDB
) -> None:
    (stored,) = run_as_root(
        mariadb,
        "shop",
        "SELECT UNIX_TIMESTAMP(MIN(created_at)) FROM orders WHERE tenant_id = 'acme' AND order_date = '2025-03-01'",
    )[0]
    rows = rows_of(demo_mysql_types["mysql_orders"], {"date_from": "2025-03-01", "date_to": "2025-03-01"})

    assert SERVER_TIME_ZONE != "+00:00"
    assert min(row[2] for row in rows) == datetime.utcfromtimestamp(int(stored))


def test_a_cursor_resumes_after_the_last_row_given(demo_mysql_types: dict[str, ExportType]) -> None:
    export_type = demo_mysql_types["mysql_orders"]
    filters = export_type.parse_filters(FILTERS, export_type.bind_caller(ACME))
    every = [row for page in export_type.pages(filters) for row in page.rows]
    first = next(iter(export_type.stream(filters, None, Unbounded())))
    assert first.cursor is not None

    rest = [row for page in export_type.stream(filters, first.cursor, Unbounded()) for row in page.rows]

    assert [*first.rows, *rest] == every


def test_keyset_partitions_cover_every_row_once(demo_mysql_types: dict[str, ExportType]) -> None:
    export_type = demo_mysql_types["mysql_orders"]
    filters = export_type.parse_filters(FILTERS, export_type.bind_caller(ACME))
    every = [row for page in export_type.pages(filters) for row in page.rows]

    specs = export_type.plan_partitions(filters, Unbounded(), rows_per_partition=50, max_partitions=4)

    assert specs is not None and len(specs) == 4
    parts = [
        row for spec in specs for page in export_type.partition_stream(filters, spec, Unbounded()) for row in page.rows
    ]
    assert parts == every
    assert export_type.count_rows(filters, Unbounded()) == len(every)


def test_selectable_columns_choose_and_order_the_columns(demo_mysql_types: dict[str, ExportType]) -> None:
    export_type = demo_mysql_types["mysql_orders"]
    rows = rows_of(export_type, {**FILTERS, "columns": ["amount", "order_id"]})
    every = rows_of(export_type, FILTERS)

    assert rows == [(row[10], row[0]) for row in every]


def test_inferred_columns_follow_mysqls_types(demo_mysql_types: dict[str, ExportType]) -> None:
    export_type = demo_mysql_types["mysql_customers"]
    filters = export_type.parse_filters(
        {"signed_up_from": "2020-01-01", "signed_up_to": "2025-03-31"}, export_type.bind_caller(ACME)
    )

    kinds = {column.name: column.kind for column in export_type.columns(filters)}

    assert kinds == {
        "customer_id": ColumnKind.STRING,
        "name": ColumnKind.STRING,
        "email": ColumnKind.STRING,
        "country": ColumnKind.STRING,
        "signup_date": ColumnKind.DATE,
        "signed_up_at": ColumnKind.DATETIME,
        "plan": ColumnKind.STRING,
        # BOOLEAN is TINYINT(1): the number stored (docs/export-your-own-data.md, MySQL values).
        "marketing_opt_in": ColumnKind.INTEGER,
    }


@pytest.mark.parametrize("tenant", ["acme", "globex"])
def test_a_caller_reads_only_their_tenants_rows(
    demo_mysql_types: dict[str, ExportType], mariadb: EmbeddedMariaDB, tenant: str
) -> None:
    caller = Caller(user_id="u", claims={"custom:tenant_id": tenant})

    assert rows_of(demo_mysql_types["mysql_orders"], FILTERS, caller) == database_rows(mariadb, tenant)


def test_timestamps_are_instants_an_export_in_another_zone_converts(demo_mysql_types: dict[str, ExportType]) -> None:
    """TIMESTAMP is an instant (reported as the instant type): a zoned export shifts it;
    DATETIME and DATE are wall times and stay."""
    export_type = demo_mysql_types["mysql_orders"]
    filters = export_type.parse_filters(FILTERS, export_type.bind_caller(ACME))

    assert export_type.zoned_columns(filters, Unbounded()) == frozenset({"created_at"})


def test_the_hot_key_and_the_source_limit_are_the_declarations(demo_mysql_types: dict[str, ExportType]) -> None:
    export_type = demo_mysql_types["mysql_orders"]
    filters = export_type.parse_filters(FILTERS, export_type.bind_caller(ACME))

    assert export_type.hot_key(filters) == "mysql_orders:2025-03-01:2025-03-31:acme"
    limit = export_type.source_limit()
    assert (limit.source, limit.max_concurrent) == ("shop_mysql", 4)
    assert export_type.allows(ACME) and demo_mysql_types["mysql_customers"].allows(ACME)
    assert not demo_mysql_types["mysql_customers"].allows(Caller(user_id="bob", claims={"custom:tenant_id": "globex"}))


def test_a_cursor_on_a_timestamp_and_a_decimal_key_resumes_exactly(shop_mysql: str, tmp_path: Path) -> None:
    """The saved key values (ISO text of a TIMESTAMP, a DECIMAL's digits) compare as the key
    columns' own types when bound back."""
    path = tmp_path / "exports.toml"
    path.write_text(
        '[sources.db]\nkind = "mysql"\nurl_env = "DB_URL"\n[types.t]\ndescription = "x"\nsource = "db"\n'
        'mysql_query = "SELECT created_at, amount, order_id FROM orders"\n'
        'order_key = ["created_at", "amount", "order_id"]\nallow = { groups = ["tests"] }\n',
        encoding="utf-8",
    )
    export_type = declared_types(path, {"DB_URL": shop_mysql})["t"]
    export_type._reader._page_rows = 700  # type: ignore[attr-defined]  # several pages of 3,000 rows
    filters = export_type.parse_filters({})
    every = [row for page in export_type.pages(filters) for row in page.rows]
    first = next(iter(export_type.stream(filters, None, Unbounded())))
    assert first.cursor is not None

    rest = [row for page in export_type.stream(filters, first.cursor, Unbounded()) for row in page.rows]

    assert len(first.rows) == 700 and [*first.rows, *rest] == every and len(every) == 3000


def test_date_range_partitions_cover_every_row_once(shop_mysql: str, tmp_path: Path) -> None:
    path = tmp_path / "exports.toml"
    path.write_text(
        '[sources.db]\nkind = "mysql"\nurl_env = "DB_URL"\n[types.t]\ndescription = "x"\nsource = "db"\n'
        'mysql_query = "SELECT order_id, order_date FROM orders '
        'WHERE order_date BETWEEN %(date_from)s AND %(date_to)s"\n'
        'order_key = ["order_date", "order_id"]\nallow = { groups = ["tests"] }\n'
        'date_ranges = [{ from = "date_from", to = "date_to", max_days = 366 }]\n'
        '[types.t.partitions]\nby = "date_range"\n'
        '[types.t.parameters.date_from]\ntype = "date"\n[types.t.parameters.date_to]\ntype = "date"\n',
        encoding="utf-8",
    )
    export_type = declared_types(path, {"DB_URL": shop_mysql})["t"]
    filters = export_type.parse_filters(FILTERS)
    every = [row for page in export_type.pages(filters) for row in page.rows]

    specs = export_type.plan_partitions(filters, Unbounded(), rows_per_partition=300, max_partitions=4)

    assert specs is not None and len(specs) > 1
    parts = [
        row for spec in specs for page in export_type.partition_stream(filters, spec, Unbounded()) for row in page.rows
    ]
    assert parts == every and sum(spec.rows for spec in specs) == len(every)
