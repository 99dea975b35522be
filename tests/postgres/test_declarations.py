"""Declaration files: every mistake names the file, the type and the key; every parameter kind
validates strictly and its refusals name ``filters.<name>``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from exports.accepting.validation import invalid_request
from exports.api.http.envelope import strict_json
from exports.declared.parameters import DeclaredFilters, filters_model
from exports.export_types.loader import DeclarationError, default_path, load_declarations
from exports.sources.postgres.model import PostgresSource
from tests.postgres.conftest import write_declaration

SOURCE = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"
"""


def declaration(body: str) -> str:
    return SOURCE + body


def test_the_shipped_declarations_load() -> None:
    assert list(load_declarations(default_path()).file.types) == [
        "orders",
        "customers",
        "sales_report",
        "generated_orders",
        "orders_all_tenants",
        "order_changes",
        "orders_dynamodb",
        "customers_api",
        "audit_log",
    ]
    tests_file = Path(__file__).parents[1] / "declarations" / "dynamodb_demo.toml"
    assert list(load_declarations(tests_file).file.types) == ["orders", "customers", "sales_report"]


def typed(parameter: str) -> str:
    """A SQL type ``t`` with one parameter ``p`` declared by the TOML lines ``parameter``."""
    return (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT %(p)s AS a"\n[types.t.parameters.p]\n' + parameter
    )


# What issue 23 found the loader accepting (or crashing on): each must stop start-up and synth.
def ranged(kind: str, changes: str) -> str:
    """A SQL type ``t`` with a range ``a``/``b`` of ``kind`` parameters and the ``changes`` line."""
    return (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS x"\n'
        'date_ranges = [{ from = "a", to = "b", max_days = 31 }]\n'
        f"{changes}\n"
        f'[types.t.parameters.a]\ntype = "{kind}"\n[types.t.parameters.b]\ntype = "{kind}"\n'
    )


# A feed's change window (docs/schedules.md, "Feeds"): a declared range of instants.
CHANGES_DECLARATIONS = [
    (
        ranged("datetime", 'changes = { column = "updated_at", from = "a", to = "c" }'),
        "types.t: changes",
        "is not one of the type's date_ranges",
    ),
    (
        ranged("date", 'changes = { column = "updated_at", from = "a", to = "b" }'),
        "types.t: changes",
        "a range of datetime parameters",
    ),
    (
        ranged("datetime", 'changes = { column = "updated_at", from = "a", to = "b", lag = "5 minutes" }'),
        "types.t: changes.lag",
        "should match pattern",
    ),
    (
        ranged("datetime", 'changes = { column = "updated_at", from = "a", to = "b", floor = 2026-01-01T00:00:00 }'),
        "types.t: changes.floor",
        "with its offset",
    ),
]
BREAKING_DECLARATIONS = {
    "a statement after the query": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS x; COMMIT; INSERT INTO t VALUES (1)"',
        "types.t: query",
        "holds a ';' outside a string or comment",
    ),
    "a ';' between dollar quotes is not a separator, one after them is": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT $q$;$q$ AS x; DROP TABLE t"',
        "types.t: query",
        "holds a ';'",
    ),
    "an unterminated comment": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS x /* ; "',
        "types.t: query",
        "never closed",
    ),
    "a string for an integer bound": (
        typed('type = "integer"\nmin = "4"'),
        "types.t: parameters.p.min",
        "must be an integer",
    ),
    "a string for a boolean": (
        typed('type = "integer"\nrequired = "true"'),
        "types.t: parameters.p.required",
        "boolean",
    ),
    "a string for max_days": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT %(a)s, %(b)s"\n'
        'date_ranges = [{ from = "a", to = "b", max_days = "12" }]\n'
        '[types.t.parameters.a]\ntype = "date"\n[types.t.parameters.b]\ntype = "date"',
        "types.t: date_ranges.0.max_days",
        "integer",
    ),
    "a string for a column width": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a, 2 AS order_id"\n'
        'columns = [{ name = "a" }, { name = "order_id", width = "9" }]',
        "types.t: columns.order_id.width",
        "integer",
    ),
    "a column of an unknown kind, by its name": (
        '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a, 2 AS order_id"\n'
        'columns = [{ name = "a" }, { name = "order_id", kind = "money" }]',
        "types.t: columns.order_id.kind",
        "Input should be",
    ),
    "min above max": (typed('type = "integer"\nmin = 5\nmax = 4'), "types.t: parameters.p.min", "greater than max"),
    "min above max (dates)": (
        typed('type = "date"\nmin = 2025-02-01\nmax = 2025-01-01'),
        "types.t: parameters.p.min",
        "greater than max",
    ),
    "min_length above max_length": (
        typed('type = "string"\nmin_length = 5\nmax_length = 4'),
        "types.t: parameters.p.min_length",
        "greater than max_length",
    ),
    "a repeated enum value": (
        typed('type = "enum"\nvalues = ["a", "b", "a"]'),
        "types.t: parameters.p.values",
        "'a' more than once",
    ),
    "an empty enum value": (
        typed('type = "enum"\nvalues = ["a", ""]'),
        "types.t: parameters.p.values",
        "value 2 is empty",
    ),
    "a repeated enum value of list items": (
        typed('type = "list"\nitems = { type = "enum", values = ["x", "x"] }'),
        "types.t: parameters.p.items.values",
        "more than once",
    ),
    "a backreference (RE2 has none)": (
        typed('type = "string"\npattern = "(a*)\\\\1"'),
        "types.t: parameters.p.pattern",
        "not a pattern RE2 accepts: invalid escape sequence",
    ),
    "a lookahead (RE2 has none)": (
        typed('type = "string"\npattern = "(?=a)a"'),
        "types.t: parameters.p.pattern",
        "not a pattern RE2 accepts: invalid perl operator",
    ),
    "a boolean with a bound": (typed('type = "boolean"\nmin = true'), "types.t: parameters.p.min", "no min"),
    "a boolean default that is a string": (
        typed('type = "boolean"\ndefault = "true"'),
        "types.t: parameters.p.default",
        "must be true or false",
    ),
    "a decimal bound past the digit limit": (
        typed('type = "decimal"\nmax = "1e999999"'),
        "types.t: parameters.p.max",
        "at most 1000 digits",
    ),
    "a plugin module that does not exist": (
        '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "nosuchmod:f"',
        "types.t: plugin",
        "cannot import nosuchmod:f",
    ),
    "a plugin that is not a function": (
        '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "sys:maxsize"',
        "types.t: plugin",
        "is not a function",
    ),
    "a plugin that exits the process": (
        '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "sys:exit"',
        "types.t: plugin",
        "sys:exit failed: SystemExit",
    ),
}


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            '[types.t]\ndescription = "x"\nsource = "nope"\nquery = "SELECT 1 AS a"',
            "types.t: source",
            "no source 'nope'",
        ),
        ('[types.t]\ndescription = "x"\nsource = "db"', "types.t", "exactly one of query"),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT %(missing)s AS a"',
            "types.t: query",
            "%(missing)s is not a declared parameter",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 WHERE a LIKE \'x%\'"',
            "types.t: query",
            "literal % as %%",
        ),
        ('[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1;"', "types.t: query", "must be one statement"),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n[types.t.parameters.p]\ntype = "when"',
            "types.t: parameters.p.type",
            "Input should be",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n[types.t.parameters.p]\ntype = "enum"',
            "types.t: parameters.p.values",
            "lists its allowed values",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n[types.t.parameters.p]\ntype = "list"',
            "types.t: parameters.p.items",
            "declares what its items are",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n'
            '[types.t.parameters.p]\ntype = "integer"\nmin = 5\ndefault = 1',
            "types.t: parameters.p.default",
            "at least 5",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n'
            '[types.t.parameters.p]\ntype = "string"\npattern = "[A-Z]{3}"\nexample = "eur"',
            "types.t: parameters.p.example",
            "must match",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n'
            '[types.t.parameters.p]\ntype = "string"\nmin = 1',
            "types.t: parameters.p.min",
            "no min",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\nhot_key = ["nope"]',
            "types.t: hot_key[0]",
            "not a declared parameter",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\nfile_name = "f_{nope}"',
            "types.t: file_name",
            "{nope} is not a declared parameter",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\nselectable_columns = true',
            "types.t: selectable_columns",
            "needs the columns declared",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n'
            'columns = [{ name = "a" }, { name = "a" }]',
            "types.t: columns.a",
            "declared twice",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\nformats = ["docx"]',
            "types.t: formats.0",
            "Input should be",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\nunknown_key = 1',
            "types.t: unknown_key",
            "Extra inputs are not permitted",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1"\n'
            'date_ranges = [{ from = "a", to = "b", max_days = 3 }]',
            "types.t: date_ranges[0]",
            "not a declared date",
        ),
        (
            '[sources.d]\nkind = "dynamodb"\n[types.t]\ndescription = "x"\nsource = "d"\n'
            'columns = [{ name = "a" }]\n'
            '[types.t.dynamodb]\ntable = "tbl"\npartition_key = { name = "pk", value = "{p}" }\n',
            "types.t: dynamodb.partition_key.value",
            "{p} is not a declared parameter",
        ),
        (
            '[sources.d]\nkind = "dynamodb"\n[types.t]\ndescription = "x"\nsource = "d"\nquery = "SELECT 1"',
            "types.t: query",
            "not a PostgreSQL source",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "exports.nowhere:factory"',
            "types.t: plugin",
            "cannot import",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "examples.demo_plugins.factories:orders"\n'
            "hot_key = []",
            "types.t: hot_key",
            "a plugin type declares only",
        ),
        (
            '[sources.d]\nkind = "dynamodb"\n[types.t]\ndescription = "x"\nsource = "d"\n'
            'columns = [{ name = "a" }]\n[types.t.parameters.f]\ntype = "date"\n[types.t.parameters.u]\ntype = "date"\n'
            '[types.t.dynamodb]\ntable = "tbl"\npartition_key = { name = "pk", value = "{day}" }\n'
            'each_day = { from = "f", to = "u" }\n',
            "types.t: dynamodb.each_day",
            "needs a date_ranges entry",
        ),
        (
            '[sources.two]\nkind = "postgresql"\nurl_env = "A"\nsecret_arn = "arn:aws:secretsmanager:x"\n',
            "sources.two",
            "declare one way to connect",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"\norder_key = ["a"]\n'
            'columns = [{ name = "a", kind = "decimal", precision = 10 }]',
            "types.t: columns.a",
            "precision and scale go together",
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"\norder_key = ["a"]\n'
            'columns = [{ name = "a", precision = 10, scale = 2 }]',
            "types.t: columns.a",
            'precision and scale are for kind = "decimal"',
        ),
        (
            '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"\norder_key = ["a"]\n'
            'columns = [{ name = "a", kind = "decimal", precision = 2, scale = 3 }]',
            "types.t: columns.a",
            "scale cannot be more than precision",
        ),
        *CHANGES_DECLARATIONS,
        *BREAKING_DECLARATIONS.values(),
    ],
    ids=lambda value: value[:60] if isinstance(value, str) else None,
)
def test_a_bad_declaration_names_the_file_the_type_and_the_key(
    tmp_path: Path, body: str, where: str, message: str
) -> None:
    path = write_declaration(tmp_path, declaration(body))

    with pytest.raises(DeclarationError) as raised:
        from tests.postgres.conftest import declared_types

        declared_types(path, {"DB_URL": "postgresql://nowhere"})

    text = str(raised.value)
    assert text.startswith(f"{path}: {where}"), text
    assert message in text, text


def test_a_file_that_is_not_toml_is_refused_with_its_name(tmp_path: Path) -> None:
    path = write_declaration(tmp_path, "[types\nbroken")

    with pytest.raises(DeclarationError, match=f"{path}: not a readable TOML file"):
        load_declarations(path)


def test_deeply_nested_toml_is_a_declaration_error_not_a_traceback(tmp_path: Path) -> None:
    path = write_declaration(tmp_path, "x = " + "[" * 5000 + "]" * 5000)

    with pytest.raises(DeclarationError, match=f"{path}: not a readable TOML file: it is nested too deeply"):
        load_declarations(path)


def test_deeply_nested_plugin_options_are_a_declaration_error(tmp_path: Path) -> None:
    nested = "{ a = " * 400 + "1" + " }" * 400
    body = (
        '[types.t]\ndescription = "x"\nsource = "db"\nplugin = "examples.demo_plugins.factories:orders"\n'
        f"options = {{ o = {nested} }}"
    )
    path = write_declaration(tmp_path, declaration(body))

    with pytest.raises(DeclarationError, match=f"{path}: "):
        load_declarations(path)


def test_a_missing_file_says_how_to_name_another(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="set EXPORTS_CONFIG"):
        load_declarations(tmp_path / "none.toml")


ALL_KINDS = declaration(
    """
[types.t]
description = "every kind"
source = "db"
query = "SELECT 1 AS a"
date_ranges = [{ from = "day_from", to = "day_to", max_days = 31 }]
[types.t.parameters.day_from]
type = "date"
min = 2020-01-01
[types.t.parameters.day_to]
type = "date"
[types.t.parameters.since]
type = "datetime"
required = false
[types.t.parameters.count]
type = "integer"
min = 1
max = 100
default = 10
[types.t.parameters.amount]
type = "decimal"
required = false
max = "1000.00"
[types.t.parameters.code]
type = "string"
required = false
pattern = "[A-Z]{3}"
example = "EUR"
[types.t.parameters.state]
type = "enum"
values = ["open", "closed"]
required = false
[types.t.parameters.ids]
type = "list"
required = false
max_items = 3
items = { type = "integer", min = 1 }
[types.t.parameters.big]
type = "list"
required = false
items = { type = "integer" }
[types.t.parameters.paid]
type = "boolean"
default = false
"""
)


@pytest.fixture
def model(tmp_path: Path) -> type[DeclaredFilters]:
    declared = load_declarations(write_declaration(tmp_path, ALL_KINDS)).file.types["t"]
    return filters_model("t", declared.parameters, declared.date_ranges, [])


VALID = {"day_from": "2025-01-01", "day_to": "2025-01-31"}


def test_every_kind_validates_to_python_values_and_back_to_json(model: type[DeclaredFilters]) -> None:
    filters = model.model_validate(
        {
            **VALID,
            "since": "2025-01-02T10:00:00+08:00",
            "amount": "12.50",
            "code": "EUR",
            "state": "open",
            "ids": [1, 2],
            "big": [-(2**63), 2**63 - 1],
        }
    )
    # The fields are made from the declaration: read by name.
    values = dict(filters)
    assert values["paid"] is False and dict(model.model_validate({**VALID, "paid": True}))["paid"] is True

    assert str(values["day_from"]) == "2025-01-01" and values["count"] == 10
    assert values["since"].isoformat() == "2025-01-02T02:00:00+00:00"
    assert str(values["amount"]) == "12.50" and values["ids"] == [1, 2]
    dumped = filters.model_dump(mode="json", exclude_none=True)
    assert model.model_validate(dumped) == filters


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"day_from": 0}, "day_from", "must be a date as YYYY-MM-DD"),
        ({"day_from": "2026-10-06T00:00:00Z"}, "day_from", "must be a date as YYYY-MM-DD"),
        ({"day_from": "2025-02-30"}, "day_from", "is not a calendar date"),
        ({"day_from": "2019-12-31"}, "day_from", "must be at least 2020-01-01"),
        ({"day_to": "2024-12-31"}, "day_to", "must not be before day_from"),
        ({"day_to": "2025-02-01"}, "day_to", "must not exceed 31 days"),
        ({"since": "2025-01-02T10:00:00"}, "since", "with its UTC offset"),
        ({"count": True}, "count", "must be an integer"),
        ({"count": "60"}, "count", "must be an integer"),
        ({"count": 101}, "count", "must be at most 100"),
        ({"amount": "12,50"}, "amount", "must be a decimal number"),
        ({"amount": "NaN"}, "amount", "must be a decimal number"),
        ({"amount": 1000.01}, "amount", "must be at most 1000.00"),
        ({"code": "eur"}, "code", "must match"),
        ({"code": 7}, "code", "must be a string"),
        ({"state": "OPEN"}, "state", "must be one of: open, closed"),
        ({"ids": [1, 1]}, "ids", "must not repeat"),
        ({"ids": [1, 2, 3, 4]}, "ids", "1 to 3 values"),
        ({"ids": [0]}, "ids", "value 1: must be at least 1"),
        ({"ids": "1"}, "ids", "must be a list"),
        ({"other": 1}, "other", "Extra inputs are not permitted"),
        # Accepted once and then failed in the worker (issue 23): refused at submit, by the same
        # rules the worker re-validates with.
        ({"code": "\ud800"}, "code", "lone surrogate"),
        ({"state": "op\ud800en"}, "state", "lone surrogate"),
        ({"code": "A\x00B"}, "code", "NUL"),
        ({"amount": "1e999999"}, "amount", "at most 1000 digits before the point"),
        ({"amount": "1e-1001"}, "amount", "and 1000 after it"),
        ({"amount": float("1e300") * 1e10}, "amount", "must be a decimal number"),
        ({"big": [2**63]}, "big", "value 1: must be between"),
        ({"big": [-(2**63) - 1]}, "big", "64-bit integer"),
        ({"count": 2**63}, "count", "64-bit integer"),
        # Integers past Python's 4,300 digits of int-from-text, as the API's JSON parser reads them.
        ({"count": strict_json("9" * 5000)}, "count", "64-bit integer"),
        ({"amount": strict_json("9" * 5000)}, "amount", "at most 1000 digits before the point"),
        ({"since": "1900-01-01T00:00:00+14:00"}, "since", "in UTC"),
        ({"since": "2999-12-31T23:00:00-05:00"}, "since", "in UTC"),
        ({"since": "0001-01-01T00:00:00+14:00"}, "since", "must be between 1900-01-01"),
        ({"paid": "true"}, "paid", "must be true or false"),
        ({"paid": 1}, "paid", "must be true or false"),
    ],
)
def test_each_refusal_names_the_filter(model: type[DeclaredFilters], change: dict, field: str, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        model.model_validate({**VALID, **change})

    error = invalid_request(raised.value, prefix="filters")
    assert error.field == f"filters.{field}"
    assert message in error.message


def test_a_missing_required_parameter_is_named(model: type[DeclaredFilters]) -> None:
    with pytest.raises(ValidationError) as raised:
        model.model_validate({"day_from": "2025-01-01"})

    assert invalid_request(raised.value, prefix="filters").field == "filters.day_to"


def test_the_json_schema_comes_from_the_declaration(model: type[DeclaredFilters]) -> None:
    schema = model.model_json_schema()

    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["day_from", "day_to"]
    properties = schema["properties"]
    assert properties["day_from"]["format"] == "date" and properties["day_from"]["x-minimum"] == "2020-01-01"
    assert properties["since"]["format"] == "date-time"
    assert properties["count"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 10, "title": "Count"}
    assert properties["state"]["enum"] == ["open", "closed"]
    assert properties["ids"]["items"] == {"type": "integer", "minimum": 1} and properties["ids"]["maxItems"] == 3
    assert properties["paid"] == {"type": "boolean", "default": False, "title": "Paid"}
    json.dumps(schema)


def test_the_json_schema_says_what_the_validation_does(model: type[DeclaredFilters]) -> None:
    properties = model.model_json_schema()["properties"]

    # The whole value must match, as the validator's fullmatch: "xEURx" is refused.
    assert properties["code"]["pattern"] == "^(?:[A-Z]{3})$"
    assert properties["code"]["examples"] == ["EUR"]
    # null is refused in filters, so an optional parameter without a default offers none.
    assert "default" not in properties["state"] and properties["count"]["default"] == 10
    with pytest.raises(ValidationError):
        model.model_validate({**VALID, "code": "xEURx"})
    with pytest.raises(ValidationError):
        model.model_validate({**VALID, "state": None})


def test_the_deployment_can_give_a_source_its_connection(tmp_path: Path) -> None:
    path = write_declaration(
        tmp_path, declaration('[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"')
    )
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-1"

    declared = load_declarations(path, {"db": {"secret_arn": arn, "host": "proxy.example.internal"}})

    source = declared.file.sources["db"]
    assert isinstance(source, PostgresSource)
    assert source.secret_arn == arn and source.url_env is None  # the deployment's connection replaces the file's
    assert source.host == "proxy.example.internal"
    with pytest.raises(DeclarationError, match=r"sources\.other: overridden by the deployment but not declared"):
        load_declarations(path, {"other": {"secret_arn": arn}})


def test_connections_from_a_secret_or_iam_verify_tls_by_default(tmp_path: Path) -> None:
    from exports.sources.postgres.connections import connection_settings
    from exports.sources.sql.connections import SourceNotConfigured

    secret = {"host": "db.example.internal", "port": 6432, "dbname": "shop", "username": "exporter", "password": "pw"}
    source = PostgresSource(kind="postgresql", secret_arn="arn:aws:secretsmanager:eu-west-1:1:secret:x")
    settings = connection_settings("db", source, {}, lambda arn: secret, lambda auth: "token", tmp_path)()
    assert settings == {
        "host": "db.example.internal",
        "port": 6432,
        "dbname": "shop",
        "user": "exporter",
        "password": "pw",
        "sslmode": "verify-full",
        "sslrootcert": "system",
    }

    iam = PostgresSource.model_validate(
        {"kind": "postgresql", "iam_auth": {"host": "h", "user": "u", "database": "d"}, "sslrootcert": "ca.pem"}
    )
    settings = connection_settings("db", iam, {}, lambda arn: secret, lambda auth: f"token-for-{auth.user}", tmp_path)()
    assert settings["password"] == "token-for-u" and settings["sslmode"] == "verify-full"
    assert settings["sslrootcert"] == str(tmp_path / "ca.pem")

    proxied = PostgresSource.model_validate(
        {"kind": "postgresql", "secret_arn": "arn:aws:secretsmanager:x", "host": "proxy", "port": 5432}
    )
    settings = connection_settings("db", proxied, {}, lambda arn: secret, lambda auth: "", tmp_path)()
    assert (settings["host"], settings["port"], settings["dbname"]) == ("proxy", 5432, "shop")

    unset = PostgresSource(kind="postgresql", url_env="NOT_SET_HERE")
    with pytest.raises(SourceNotConfigured, match="NOT_SET_HERE, which is not set"):
        connection_settings("db", unset, {}, lambda arn: secret, lambda auth: "", tmp_path)


def test_building_the_registry_does_not_import_psycopg() -> None:
    """The API builds the registry too (the lifecycle and callback functions never do); only a
    query needs psycopg."""
    import subprocess
    import sys

    from exports.core.config.env import Env

    environment = {
        Env.TASKS_TABLE: "t",
        # orders_dynamodb's and audit_log's tables (their table_env).
        Env.ORDERS_TABLE: "o",
        Env.AUDIT_TABLE: "a",
        "EXPORTS_SHOP_DATABASE_URL": "postgresql://nowhere",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PATH": "/usr/bin:/bin",
    }
    script = (
        "import sys\nfrom exports.export_types.composition import build_registry\n"
        "from exports.core.config.settings import RegistrySettings\n"
        "import os\nnames = [t.name for t in build_registry(RegistrySettings.from_env(os.environ))]\n"
        "print(names, 'psycopg' in sys.modules)"
    )
    probe = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert (
        probe.stdout.strip()
        == "['orders', 'customers', 'sales_report', 'generated_orders', 'orders_all_tenants', 'order_changes',"
        " 'orders_dynamodb', 'audit_log'] False"
    )


def test_naive_datetimes_are_utc_whatever_the_machines_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    from datetime import datetime

    from exports.declared.parameters import json_value

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        assert json_value(datetime(2025, 3, 1, 8, 0)) == "2025-03-01T08:00:00Z"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_decimal_bounds_may_be_toml_numbers(tmp_path: Path) -> None:
    body = '[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1 AS a"\n'
    body += '[types.t.parameters.p]\ntype = "decimal"\nmin = 0.5\ndefault = 2.25'
    declared = load_declarations(write_declaration(tmp_path, declaration(body))).file.types["t"]
    model = filters_model("t", declared.parameters, declared.date_ranges, [])

    assert str(dict(model.model_validate({}))["p"]) == "2.25"
    with pytest.raises(ValidationError, match=r"must be at least 0\.5"):
        model.model_validate({"p": 0.25})


def test_make_run_stops_at_a_bad_declaration_with_its_message(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = write_declaration(tmp_path, declaration('[types.t]\ndescription = "x"\nsource = "db"\nquery = "SELECT 1;"'))
    environment = {**os.environ, "EXPORTS_CONFIG": str(path), "PORT": "1", "EXPORTS_POSTGRES_DIR": str(tmp_path / "pg")}

    started = subprocess.run(
        [sys.executable, "-m", "local_stack"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
        check=False,
    )

    assert started.returncode == 2
    assert f"declaration error: {path}: types.t: query: must be one statement" in started.stderr
    assert not (tmp_path / "pg").exists()  # nothing was started


@pytest.mark.parametrize(
    ("columns", "where", "missing"),
    [
        ('order_key = ["nope"]', "types.t: order_key", "'nope'"),
        ('columns = [{ name = "a" }, { name = "gone" }]', "types.t: columns.gone", "'gone'"),
    ],
)
def test_a_query_that_does_not_return_its_order_key_is_a_declaration_error_at_start_up(
    shop: str, tmp_path: Path, columns: str, where: str, missing: str
) -> None:
    """What local mode checks once the database is up: describing the query (every parameter
    NULL, no row read) shows which declared column it does not return."""
    from exports.export_types.build import check_results
    from tests.postgres.conftest import declared_types

    body = (
        '[types.t]\ndescription = "x"\nsource = "db"\n'
        'query = "SELECT order_id AS a FROM orders WHERE order_date >= %(since)s"\n'
        f'{columns}\n[types.t.parameters.since]\ntype = "date"\n'
    )
    path = write_declaration(tmp_path, declaration(body))
    types = declared_types(path, {"DB_URL": shop})

    with pytest.raises(DeclarationError) as raised:
        check_results(load_declarations(path), list(types.values()))

    assert str(raised.value) == f"{path}: {where}: the query returns no column {missing}"


def test_the_shipped_sql_types_pass_the_start_up_check(demo_types: dict[str, Any]) -> None:
    from exports.export_types.build import check_results

    check_results(load_declarations(default_path()), list(demo_types.values()))


def test_make_run_stops_when_a_query_does_not_return_its_order_key(tmp_path: Path) -> None:
    """The check needs the database, so make run makes it once its embedded PostgreSQL is up,
    then stops it again and exits 2, before the API or a worker starts."""
    import os
    import subprocess
    import sys

    body = (
        '[sources.shop]\nkind = "postgresql"\nurl_env = "EXPORTS_SHOP_DATABASE_URL"\n'
        '[types.t]\ndescription = "x"\nsource = "shop"\nquery = "SELECT order_id FROM orders"\norder_key = ["nope"]\n'
    )
    path = write_declaration(tmp_path, body)
    environment = {
        **os.environ,
        "EXPORTS_CONFIG": str(path),
        "PORT": "1",
        "EXPORTS_POSTGRES_DIR": str(tmp_path / "pg"),
        "EXPORTS_DEMO_ORDERS": "50",
        "EXPORTS_DEMO_DYNAMODB_ORDERS": "5",
    }

    started = subprocess.run(
        [sys.executable, "-m", "local_stack"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
        check=False,
    )

    assert started.returncode == 2, started.stderr[-2000:]
    assert f"declaration error: {path}: types.t: order_key: the query returns no column 'nope'" in started.stderr
    assert not (tmp_path / "pg" / "postmaster.pid").exists()  # the embedded PostgreSQL stopped again


def test_make_run_stops_when_a_sources_variable_is_not_set_naming_it_and_its_types(tmp_path: Path) -> None:
    """Issue 36: the types of a source whose URL variable was unset were dropped silently (the
    API listed none of them, the banner all of them)."""
    import os
    import subprocess
    import sys

    from tests.stack_process import free_port

    body = (
        '[sources.shop]\nkind = "postgresql"\nurl_env = "EXPORTS_SHOP_DATABASE_URL"\n'
        '[sources.warehouse]\nkind = "postgresql"\nurl_env = "WAREHOUSE_URL"\n'
        '[types.orders]\ndescription = "x"\nsource = "shop"\nquery = "SELECT order_id FROM orders"\n'
        '[types.stock]\ndescription = "x"\nsource = "warehouse"\nquery = "SELECT 1 AS n"\n'
        '[types.moves]\ndescription = "x"\nsource = "warehouse"\nquery = "SELECT 2 AS n"\n'
    )
    path = write_declaration(tmp_path, body)
    environment = {
        **{name: value for name, value in os.environ.items() if name != "WAREHOUSE_URL"},
        "EXPORTS_CONFIG": str(path),
        "PORT": str(free_port()),
        "EXPORTS_POSTGRES_DIR": str(tmp_path / "pg"),
        "EXPORTS_DEMO_ORDERS": "50",
        "EXPORTS_DEMO_DYNAMODB_ORDERS": "5",
    }

    started = subprocess.run(
        [sys.executable, "-m", "local_stack"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
        check=False,
    )

    assert started.returncode == 2, started.stderr[-2000:]
    assert (
        f"declaration error: {path}: sources.warehouse: data source 'warehouse' reads its connection URI from "
        "WAREHOUSE_URL, which is not set: its export types stock, moves cannot be served" in started.stderr
    )
    assert "exports is running locally" not in started.stdout
    assert not (tmp_path / "pg" / "postmaster.pid").exists()  # the embedded PostgreSQL stopped again


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)*$", "(\\w+\\s?)*$", "(a?){30}a{30}"])
def test_a_catastrophic_pattern_validates_in_linear_time(tmp_path: Path, pattern: str) -> None:
    """Issue 23: with Python's engine, (a+)+$ took 4.5 s to refuse a 24-character value (each
    character more doubles it). RE2 refuses 10,000 characters in well under a millisecond;
    the bound here leaves room for a loaded machine."""
    import time

    body = typed(f'type = "string"\nmax_length = 20000\npattern = "{pattern.replace(chr(92), chr(92) * 2)}"')
    declared = load_declarations(write_declaration(tmp_path, declaration(body))).file.types["t"]
    model = filters_model("t", declared.parameters, declared.date_ranges, [])

    started = time.perf_counter()
    for length in (24, 200, 10_000):
        with pytest.raises(ValidationError, match="must match"):
            model.model_validate({"p": "a" * length + "!"})
    assert time.perf_counter() - started < 0.5
