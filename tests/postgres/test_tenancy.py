"""Tenancy in a declaration, on a real PostgreSQL: caller-bound values reach the query only as
bound parameters, row-level security applies through a session role and settings (and
PostgREST's ``request.jwt.claims``), and every mistake in the new keys stops start-up."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exports.api.queries import bindings_of
from exports.core.caller import Caller
from exports.core.export_type import ExportType, Unbounded
from exports.export_types.loader import DeclarationError, load_declarations
from tests.postgres.conftest import declared_types, write_declaration

SOURCE = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"
"""
# A table with its own row-level security, as a team that already has it would write it: the
# policies apply to the roles exports run as (not to the table's owner, which RLS exempts).
SCHEMA = """
CREATE TABLE invoices (invoice_id integer PRIMARY KEY, tenant_id text NOT NULL, team text NOT NULL,
                       amount numeric(10, 2) NOT NULL);
INSERT INTO invoices
SELECT n, (ARRAY['acme', 'globex', 'initech'])[n % 3 + 1], (ARRAY['north', 'south'])[n % 2 + 1], n * 1.5
FROM generate_series(1, 300) AS n;
ALTER TABLE invoices ENABLE ROW LEVEL SECURITY;
CREATE ROLE exports_tenant NOLOGIN;
GRANT SELECT ON invoices TO exports_tenant;
CREATE POLICY tenant_rows ON invoices FOR SELECT TO exports_tenant
    USING (tenant_id = current_setting('app.tenant_id', true));
-- PostgREST's (and Supabase's) convention: the verified claims as JSON in request.jwt.claims.
CREATE ROLE authenticated NOLOGIN;
GRANT SELECT ON invoices TO authenticated;
CREATE POLICY claims_rows ON invoices FOR SELECT TO authenticated
    USING (tenant_id = current_setting('request.jwt.claims', true)::json->>'custom:tenant_id');
-- The exports connect as a login role that is neither superuser nor the owner.
CREATE ROLE exports_reader LOGIN;
GRANT exports_tenant, authenticated TO exports_reader;
"""
TYPES = """
[types.rls]
description = "invoices under the database's own policy"
source = "db"
query = "SELECT invoice_id, tenant_id, amount FROM invoices"
order_key = ["invoice_id"]
[types.rls.caller]
tenant_id = { claim = "custom:tenant_id" }
[types.rls.session]
role = "exports_tenant"
settings = { "app.tenant_id" = "tenant_id" }
[types.rls.partitions]
by = "order_key"

[types.postgrest]
description = "invoices under a PostgREST policy"
source = "db"
query = "SELECT invoice_id, tenant_id FROM invoices"
order_key = ["invoice_id"]
[types.postgrest.session]
role = "authenticated"
jwt_claims = true

[types.teams]
description = "invoices of the caller's teams (a list claim)"
source = "db"
query = "SELECT invoice_id, team FROM invoices WHERE team = ANY(%(teams)s)"
order_key = ["invoice_id"]
[types.teams.caller]
teams = { claim = "cognito:groups", type = "list" }
[types.teams.session]
role = "exports_tenant"
settings = { "app.tenant_id" = "tenant" }
[types.teams.caller.tenant]
claim = "custom:tenant_id"

[types.unscoped]
description = "the same query with no session: as the owner, every tenant's rows"
source = "db"
query = "SELECT invoice_id, tenant_id FROM invoices"
order_key = ["invoice_id"]
"""
ALICE = Caller("alice", {"sub": "alice", "custom:tenant_id": "acme", "cognito:groups": "[north]", "exp": "99"})
BOB = Caller("bob", {"sub": "bob", "custom:tenant_id": "globex", "cognito:groups": "[north south]"})


@pytest.fixture
def invoices(scratch: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, ExportType]]]:
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute(SCHEMA)
    as_reader = scratch.replace("postgresql://postgres@", "postgresql://exports_reader@")
    types = declared_types(write_declaration(tmp_path, SOURCE + TYPES), {"DB_URL": as_reader})
    yield scratch, types
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("DROP OWNED BY exports_reader, exports_tenant, authenticated")
        conn.execute("DROP ROLE exports_reader, exports_tenant, authenticated")


def rows_of(export_type: ExportType, caller: Caller, raw: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    filters = export_type.parse_filters(raw or {}, export_type.bind_caller(caller))
    return [tuple(row) for page in export_type.pages(filters) for row in page.rows]


def expected(uri: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri) as conn:
        return [tuple(row) for row in conn.execute(query, params).fetchall()]


def test_a_session_role_and_setting_apply_the_databases_own_policy(
    invoices: tuple[str, dict[str, ExportType]],
) -> None:
    uri, types = invoices
    for caller, tenant in ((ALICE, "acme"), (BOB, "globex")):
        rows = rows_of(types["rls"], caller)
        assert rows == expected(
            uri, "SELECT invoice_id, tenant_id, amount FROM invoices WHERE tenant_id = %s ORDER BY invoice_id", tenant
        )
        assert len(rows) == 100


def test_partitions_of_a_row_level_secured_export_hold_only_the_callers_rows(
    invoices: tuple[str, dict[str, ExportType]],
) -> None:
    uri, types = invoices
    export_type = types["rls"]
    filters = export_type.parse_filters({}, export_type.bind_caller(ALICE))

    specs = export_type.plan_partitions(filters, Unbounded(), 30, 4)

    assert specs is not None and len(specs) == 4 and sum(spec.rows for spec in specs) == 100
    parts = [
        row for spec in specs for page in export_type.partition_stream(filters, spec, Unbounded()) for row in page.rows
    ]
    assert [row[0] for row in parts] == [
        row[0] for row in expected(uri, "SELECT invoice_id FROM invoices WHERE tenant_id = 'acme' ORDER BY invoice_id")
    ]


def test_postgrest_policies_read_the_verified_claims_unchanged(invoices: tuple[str, dict[str, ExportType]]) -> None:
    uri, types = invoices
    export_type = types["postgrest"]
    assert export_type.bind_caller(ALICE) == {
        "jwt_claims": {"sub": "alice", "custom:tenant_id": "acme", "cognito:groups": ["north"]}
    }
    rows = rows_of(export_type, BOB)
    assert rows == expected(
        uri, "SELECT invoice_id, tenant_id FROM invoices WHERE tenant_id = 'globex' ORDER BY invoice_id"
    )
    assert "jwt_claims" not in export_type.filters_schema()["properties"]


def test_a_list_claim_binds_as_an_array(invoices: tuple[str, dict[str, ExportType]]) -> None:
    uri, types = invoices
    north = rows_of(types["teams"], ALICE)
    both = rows_of(types["teams"], BOB)
    assert north == expected(
        uri, "SELECT invoice_id, team FROM invoices WHERE tenant_id = 'acme' AND team = 'north' ORDER BY invoice_id"
    )
    assert both == expected(uri, "SELECT invoice_id, team FROM invoices WHERE tenant_id = 'globex' ORDER BY invoice_id")


def test_without_a_session_the_owner_reads_every_tenants_rows(scratch: str, tmp_path: Path) -> None:
    # The control: the policies, not the query, are what scoped the rows above.
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute(SCHEMA)
    try:
        types = declared_types(write_declaration(tmp_path, SOURCE + TYPES), {"DB_URL": scratch})
        rows = rows_of(types["unscoped"], ALICE)
        assert {row[1] for row in rows} == {"acme", "globex", "initech"} and len(rows) == 300
    finally:
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("DROP OWNED BY exports_reader, exports_tenant, authenticated")
            conn.execute("DROP ROLE exports_reader, exports_tenant, authenticated")


def test_the_demo_types_bind_the_tenant_into_their_query_and_hot_key(demo_types: dict[str, ExportType]) -> None:
    orders = demo_types["orders"]
    raw = {"date_from": "2025-03-01", "date_to": "2025-03-31"}
    acme = orders.parse_filters(raw, orders.bind_caller(ALICE))
    globex = orders.parse_filters(raw, orders.bind_caller(BOB))

    assert orders.hot_key(acme) == "orders:2025-03-01:2025-03-31:acme"
    assert orders.hot_key(acme) != orders.hot_key(globex)
    assert acme.model_dump(mode="json", exclude_none=True) == raw  # what the task stores as its filters
    assert acme.bound_values() == {"tenant_id": "acme"}  # and what it records as bound


def test_who_is_signed_in_shows_what_the_demo_types_bind_from_the_token(demo_types: dict[str, ExportType]) -> None:
    # GET /v1/me's `bound`: the console says whose data the caller exports.
    assert bindings_of(ALICE, list(demo_types.values())) == {"tenant_id": "acme"}
    assert bindings_of(Caller("nobody"), list(demo_types.values())) == {}  # no tenant claim: bound to none


def test_a_long_hot_key_is_hashed_to_fit_a_dynamodb_key(demo_types: dict[str, ExportType]) -> None:
    orders = demo_types["orders"]
    caller = Caller("u", {"custom:tenant_id": "t" * 2048})
    key = orders.hot_key(
        orders.parse_filters({"date_from": "2025-03-01", "date_to": "2025-03-31"}, orders.bind_caller(caller))
    )
    assert key is not None and key.startswith("orders#") and len(key) < 100


BASE = '[types.t]\ndescription = "x"\nsource = "db"\n'


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            BASE + 'query = "SELECT 1 AS a"\n[types.t.caller]\ntenant_id = { claim = "tenant" }',
            "types.t: caller.tenant_id",
            "never uses it",
        ),
        (
            BASE + 'query = "SELECT %(p)s AS a"\n[types.t.caller]\np = { claim = "c" }\n'
            '[types.t.parameters.p]\ntype = "string"',
            "types.t: caller.p",
            "also a parameter",
        ),
        (
            BASE + 'query = "SELECT %(t)s AS a"\n[types.t.caller]\nt = { type = "string" }',
            "types.t: caller.t.claim",
            "names the claim",
        ),
        (
            BASE + 'query = "SELECT 1 AS a"\n[types.t.caller]\nt = { type = "claims", claim = "sub" }',
            "types.t: caller.t.claim",
            "it names none",
        ),
        (
            BASE + 'query = "SELECT 1 AS a"\n[types.t.session]\nsettings = { "app.tenant" = "nope" }',
            "types.t: session.settings.app.tenant",
            "not a declared caller value",
        ),
        (
            BASE + 'query = "SELECT %(t)s AS a"\n[types.t.caller]\nt = { claim = "c" }\n'
            '[types.t.session]\nsettings = { "tenant" = "t" }',
            "types.t: session.settings.tenant",
            "String should match pattern",
        ),
        (
            BASE + 'query = "SELECT 1 AS a"\n[types.t.session]\nrole = "Not A Role"',
            "types.t: session.role",
            "String should match pattern",
        ),
        (BASE + 'query = "SELECT 1 AS a"\nallow = {}', "types.t: allow", "lists the groups, scopes or claims"),
        (
            BASE + 'plugin = "examples.demo_plugins.factories:orders"\n[types.t.caller]\nt = { claim = "c" }',
            "types.t: caller",
            "a plugin type declares only",
        ),
        (
            BASE + 'query = "SELECT %(columns)s AS a"\nselectable_columns = true\n'
            '[[types.t.columns]]\nname = "a"\n[types.t.caller]\ncolumns = { claim = "c" }',
            "types.t: caller.columns",
            "reserved for selectable_columns",
        ),
        (
            BASE + 'query = "SELECT 1 AS a"\nfile_name = "f_{who}"\n[types.t.caller]\nwho = { claim = "sub" }',
            "types.t: caller.who",
            "never uses it",
        ),
    ],
)
def test_a_bad_tenancy_key_names_the_file_the_type_and_the_key(
    tmp_path: Path, body: str, where: str, message: str
) -> None:
    path = write_declaration(tmp_path, SOURCE + body)

    with pytest.raises(DeclarationError) as raised:
        declared_types(path, {"DB_URL": "postgresql://nowhere"})

    text = str(raised.value)
    assert text.startswith(f"{path}: {where}"), text
    assert message in text, text


def test_an_unscoped_type_is_warned_about_at_start_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_declaration(tmp_path, SOURCE + TYPES + BASE + 'query = "SELECT 1 AS a"\nallow = { groups = ["x"] }')

    warnings = load_declarations(path).warnings
    with caplog.at_level(logging.WARNING):
        declared_types(path, {"DB_URL": "postgresql://nowhere"})

    assert warnings == [
        "type unscoped exports the same rows to every caller (it declares no caller values and no allow rule; "
        "see docs/export-your-own-data.md#tenancy)"
    ]
    assert warnings[0] in caplog.text
