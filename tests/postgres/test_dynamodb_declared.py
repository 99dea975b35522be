"""A declared DynamoDB type over the user's own table (moto): partition key from a template,
sort-key ranges, attribute filters, typed columns, and pages that resume from the table's own
continuation key."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from python_calamine import CalamineWorkbook
from types_boto3_dynamodb.type_defs import AttributeValueTypeDef

from exports.core.aws.clients import ClientFactory
from exports.core.caller import Caller, CallerRefused
from exports.core.errors import ExportFailed
from exports.core.export_type import SOURCE_PAGE_ROWS
from exports.export_types.build import build_export_types
from exports.export_types.loader import load_declarations
from exports.running.writers import csv_writer, jsonl_writer, parquet_writer, xlsx_engine
from exports.sources.kind import SourceReaders
from local_stack.embedded_aws import REGION, Resources
from tests.postgres.conftest import write_declaration

DECLARATION = """
[sources.mine]
kind = "dynamodb"

[types.events]
description = "a tenant's events in a time range"
source = "mine"
file_name = "events_{tenant}"
[types.events.dynamodb]
table = "my-events"
partition_key = { name = "pk", value = "TENANT#{tenant}" }
sort_key = { name = "sk", between = ["{since}", "{until}"] }
filters = [{ attribute = "kind", parameter = "kinds" }]
[types.events.parameters.tenant]
type = "string"
pattern = "[a-z0-9-]+"
[types.events.parameters.since]
type = "datetime"
[types.events.parameters.until]
type = "datetime"
[types.events.parameters.kinds]
type = "list"
required = false
items = { type = "enum", values = ["login", "export", "delete"] }
[[types.events.columns]]
name = "at"
attribute = "sk"
kind = "datetime"
[[types.events.columns]]
name = "kind"
[[types.events.columns]]
name = "size"
kind = "integer"
[[types.events.columns]]
name = "cost"
kind = "decimal"

[types.my_events]
description = "the caller's own tenant's events: the tenant comes from the token, never the request"
source = "mine"
file_name = "events_{tenant}"
[types.my_events.caller]
tenant = { claim = "custom:tenant_id" }
[types.my_events.dynamodb]
table = "my-events"
partition_key = { name = "pk", value = "TENANT#{tenant}" }
sort_key = { name = "sk", begins_with = "{day}" }
[types.my_events.parameters.day]
type = "string"
pattern = "[0-9-]+"
[[types.my_events.columns]]
name = "pk"
[[types.my_events.columns]]
name = "at"
attribute = "sk"

[types.attributes]
description = "every DynamoDB attribute type, as text"
source = "mine"
[types.attributes.dynamodb]
table = "my-events"
partition_key = { name = "pk", value = "TYPES" }
[[types.attributes.columns]]
name = "sk"
[[types.attributes.columns]]
name = "value"
[[types.attributes.columns]]
name = "number"
kind = "decimal"

[types.nested]
description = "every DynamoDB attribute type, maps and lists nested in JSON Lines and Parquet"
source = "mine"
[types.nested.dynamodb]
table = "my-events"
partition_key = { name = "pk", value = "TYPES" }
[[types.nested.columns]]
name = "sk"
[[types.nested.columns]]
name = "value"
kind = "json"

[types.prefixed]
description = "sort key prefix"
source = "mine"
[types.prefixed.dynamodb]
table = "my-events"
partition_key = { name = "pk", value = "TENANT#acme" }
sort_key = { name = "sk", begins_with = "{year}" }
[types.prefixed.parameters.year]
type = "string"
[[types.prefixed.columns]]
name = "sk"

[types.missing_table]
description = "a table that is not there"
source = "mine"
[types.missing_table.dynamodb]
table = "not-there"
partition_key = { name = "pk", value = "x" }
[[types.missing_table.columns]]
name = "pk"
"""
KINDS = ("login", "export", "delete")


@pytest.fixture
def events(aws: Resources, tmp_path: Path) -> dict[str, Any]:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="my-events",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for tenant in ("acme", "other"):
        for minute in range(60):
            item = {
                "pk": {"S": f"TENANT#{tenant}"},
                "sk": {"S": f"2025-03-01T10:{minute:02d}:00Z"},  # templates render datetimes so
                "kind": {"S": KINDS[minute % 3]},
                "cost": {"N": f"{minute}.25"},
            }
            if minute % 2:
                item["size"] = {"N": str(minute * 10)}
            client.put_item(TableName="my-events", Item=item)
    return declared_events(tmp_path)


def declared_events(tmp_path: Path, page_rows: int = SOURCE_PAGE_ROWS) -> dict[str, Any]:
    """The declaration's types on the events table, reading ``page_rows`` items a query page."""
    declarations = load_declarations(write_declaration(tmp_path, DECLARATION))
    readers = SourceReaders(client=ClientFactory(), page_rows=page_rows)
    return {export_type.name: export_type for export_type in build_export_types(declarations, readers).types}


FILTERS = {"tenant": "acme", "since": "2025-03-01T10:10:00Z", "until": "2025-03-01T10:29:59Z"}


def test_rows_come_from_the_partition_and_range_with_typed_columns(events: dict[str, Any]) -> None:
    export = events["events"]
    filters = export.parse_filters({**FILTERS, "kinds": ["login", "delete"]})

    rows = [row for page in export.pages(filters) for row in page.rows]

    assert [row[0] for row in rows] == [datetime(2025, 3, 1, 10, m) for m in range(10, 30) if KINDS[m % 3] != "export"]
    assert rows[0] == (datetime(2025, 3, 1, 10, 11), "delete", 110, Decimal("11.25"))
    assert rows[1] == (datetime(2025, 3, 1, 10, 12), "login", None, Decimal("12.25"))  # no size: empty
    assert export.file_stem(filters) == "events_acme"


def test_a_caller_bound_tenant_is_the_partition_key_and_cannot_come_from_the_request(events: dict[str, Any]) -> None:
    export = events["my_events"]
    bound = export.bind_caller(Caller("u1", {"sub": "u1", "custom:tenant_id": "other"}))
    filters = export.parse_filters({"day": "2025-03-01"}, bound)

    rows = [row for page in export.pages(filters) for row in page.rows]

    assert len(rows) == 60 and {row[0] for row in rows} == {"TENANT#other"}
    assert export.file_stem(filters) == "events_other"
    assert "tenant" not in export.filters_schema()["properties"]
    with pytest.raises(ValidationError) as refused:
        export.parse_filters({"day": "2025-03-01", "tenant": "acme"}, bound)
    assert refused.value.errors()[0]["loc"] == ("tenant",)
    with pytest.raises(CallerRefused):
        export.bind_caller(Caller("u2", {"sub": "u2"}))


# Every attribute type, and the text each is written as (maps and lists as canonical JSON: keys
# and sets sorted, numbers with their own digits, binary as base64).
ATTRIBUTES: list[tuple[AttributeValueTypeDef, str]] = [
    ({"S": '王芳 "quoted"'}, '王芳 "quoted"'),
    ({"N": "12345678901234567890.123456789"}, "12345678901234567890.123456789"),
    ({"B": b"\x00\xffbin"}, "AP9iaW4="),
    ({"BOOL": True}, "true"),
    ({"NULL": True}, ""),
    (
        {"M": {"z": {"N": "1.50"}, "a": {"L": [{"S": "x"}, {"NULL": True}, {"BOOL": False}]}, "b": {"B": b"a"}}},
        '{"a":["x",null,false],"b":"YQ==","z":1.50}',
    ),
    ({"L": [{"N": "3.14159265358979323846264"}, {"M": {}}, {"L": []}]}, "[3.14159265358979323846264,{},[]]"),
    ({"SS": ["b", "a", "c"]}, '["a","b","c"]'),
    ({"NS": ["10", "9", "-1.5"]}, "[-1.5,9,10]"),
    ({"BS": [b"z", b"a"]}, '["YQ==","eg=="]'),
]


def test_every_attribute_type_is_written_exactly_and_the_same_every_time(
    events: dict[str, Any], aws: Resources
) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    for position, (attribute, _) in enumerate(ATTRIBUTES):
        item: dict[str, AttributeValueTypeDef] = {
            "pk": {"S": "TYPES"},
            "sk": {"S": f"{position:02d}"},
            "value": attribute,
        }
        client.put_item(TableName="my-events", Item=item)
    client.put_item(TableName="my-events", Item={"pk": {"S": "TYPES"}, "sk": {"S": "99"}, "number": {"N": "1E+3"}})
    export = events["attributes"]
    filters = export.parse_filters({})

    rows = [row for page in export.pages(filters) for row in page.rows]

    assert [row[1] or "" for row in rows[:-1]] == [text for _, text in ATTRIBUTES]
    assert rows[-1][2] == Decimal("1E+3")
    columns = export.columns(filters)
    out = io.BytesIO()
    stream = csv_writer.CsvStream(columns, out, formula_guard=False)
    stream.write_rows(rows)
    stream.detach()
    cells = list(csv.reader(io.StringIO(out.getvalue().decode("utf-8"), newline="")))[1:]
    assert [cell[1] for cell in cells[:-1]] == [text for _, text in ATTRIBUTES] and cells[-1][2] == "1000"
    book = io.BytesIO()
    xlsx_engine.write_xlsx_stream(columns, iter(rows), book)
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(book.getvalue())).get_sheet_by_index(0).to_python()
    assert [row[1] for row in sheet[1:-1]] == [text for _, text in ATTRIBUTES] and sheet[-1][2] == 1000.0
    again = [row for page in export.pages(filters) for row in page.rows]
    assert again == rows  # sets and maps in the same order on every read


def _number_text(text: str) -> tuple[str, str]:
    return ("number", text)


def test_maps_and_lists_of_a_json_column_are_nested_in_json_lines_and_parquet(
    events: dict[str, Any], aws: Resources
) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    for position, (attribute, _) in enumerate(ATTRIBUTES):
        item: dict[str, AttributeValueTypeDef] = {
            "pk": {"S": "TYPES"},
            "sk": {"S": f"{position:02d}"},
            "value": attribute,
        }
        client.put_item(TableName="my-events", Item=item)
    export = events["nested"]
    filters = export.parse_filters({})
    columns = export.columns(filters)
    rows = [row for page in export.pages(filters) for row in page.rows]
    # The attribute as JSON: a string, number, binary and boolean as JSON values of their own.
    scalars = ['王芳 "quoted"', ("number", "12345678901234567890.123456789"), "AP9iaW4=", True, None]
    nested = [json.loads(text, parse_float=_number_text, parse_int=_number_text) for _, text in ATTRIBUTES[5:]]
    expected = scalars + nested

    out = io.BytesIO()
    jsonl_writer.write_jsonl(columns, iter(rows), out)
    lines = out.getvalue().decode("utf-8").splitlines()
    records = [json.loads(line, parse_float=_number_text, parse_int=_number_text) for line in lines]
    book = io.BytesIO()
    parquet_writer.write_parquet_stream(columns, iter(rows), book)
    table = pq.read_table(io.BytesIO(book.getvalue()))

    assert [record["value"] for record in records] == expected
    assert records[5]["value"] == {"a": ["x", None, False], "b": "YQ==", "z": ("number", "1.50")}
    assert str(table.schema.field("value").type) == "extension<arrow.json>"
    texts = table.column("value").to_pylist()
    assert [json.loads(text, parse_float=_number_text, parse_int=_number_text) for text in texts[:4]] == scalars[:4]
    assert texts[4] is None and [json.loads(text) for text in texts[5:]] == [json.loads(t) for _, t in ATTRIBUTES[5:]]
    # DuckDB reads the column as its JSON type: paths reach into the nested values.
    relation = duckdb.from_arrow(table)
    assert relation.query("t", "SELECT value->>'$.a[0]' FROM t WHERE sk = '05'").fetchall() == [("x",)]


def test_pages_resume_from_the_tables_own_continuation_key(events: dict[str, Any], tmp_path: Path) -> None:
    export = declared_events(tmp_path, page_rows=4)["events"]
    filters = export.parse_filters(FILTERS)

    pages = list(export.pages(filters))
    whole = [row for page in pages for row in page.rows]
    assert len(pages) > 3 and len(whole) == 20
    for position, page in enumerate(pages):
        before = [row for earlier in pages[: position + 1] for row in earlier.rows]
        rest = [row for later in export.pages(filters, page.cursor) for row in later.rows]
        assert before + rest == whole


def test_a_sort_key_prefix_selects_by_begins_with(events: dict[str, Any]) -> None:
    export = events["prefixed"]

    assert (
        len([row for page in export.pages(export.parse_filters({"year": "2025-03-01T10:0"})) for row in page.rows])
        == 10
    )
    assert [row for page in export.pages(export.parse_filters({"year": "2024"})) for row in page.rows] == []


def test_a_table_that_cannot_be_read_fails_the_export_clearly(events: dict[str, Any]) -> None:
    export = events["missing_table"]

    with pytest.raises(ExportFailed) as raised:
        list(export.pages(export.parse_filters({})))

    assert raised.value.code == "SOURCE_QUERY_FAILED" and "not-there" in raised.value.message


def test_a_value_its_column_kind_cannot_read_fails_the_export(events: dict[str, Any]) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    client.put_item(
        TableName="my-events",
        Item={
            "pk": {"S": "TENANT#acme"},
            "sk": {"S": "2025-03-01T10:15:30Z"},
            "kind": {"S": "login"},
            "size": {"S": "big"},
        },
    )
    export = events["events"]

    with pytest.raises(ExportFailed) as raised:
        list(export.pages(export.parse_filters(FILTERS)))

    assert raised.value.code == "SOURCE_DATA_INVALID" and "my-events" in raised.value.message
