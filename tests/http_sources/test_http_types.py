"""Declared HTTP types over a real service on 127.0.0.1: rows from each page's array typed by
the declared columns, every pagination style, resuming from a page's cursor, the caller's
tenant in the path, a page that changes shape failing the export by the field's name, and
the cells in every format (PDF read back cell by cell)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from python_calamine import CalamineWorkbook

from exports.domain.caller import Caller
from exports.domain.errors import ExportFailed, SourceCode
from exports.export_types.base import AnyExportType, ColumnKind, CursorInvalid
from exports.writers import csv_writer, jsonl_writer, parquet_writer, xlsx_engine
from local_stack.demo_api import json_bytes
from tests.http_sources.conftest import Answer, Asked, Service, build_types
from tests.postgres.test_type_corpus import pdf_cells, pdf_shown

# Two tenants' people, as the service holds them: every JSON type a column reads.
PEOPLE: dict[str, list[dict[str, Any]]] = {
    "acme": [
        {
            "id": f"P{number:03d}",
            "name": name,
            "balance": balance,
            "visits": visits,
            "score": 0.1 * number,
            "active": number % 2 == 0,
            "born": f"19{80 + number}-0{1 + number % 9}-1{number % 10}",
            "seen": seen,
            "address": {"city": city, "zip": f"0{number}"},
            "tags": ["a", {"b": [1, Decimal("2.50"), None]}],
        }
        for number, (name, balance, visits, city, seen) in enumerate(
            [
                ('王芳 "quoted"', Decimal("12345678901234567890.123456789"), 1, "上海", "2025-03-01T10:00:00+01:00"),
                ("=SUM(1)", Decimal("-0.10"), 9007199254740993, "Köln", "2025-03-01T09:00:00Z"),
                ("Emma 🎉", 0, 0, "New York", "2025-03-01T09:00:00.123456"),
                ("", "1E+3", -5, "", None),
            ]
        )
    ],
    "globex": [
        {
            "id": "G001",
            "name": "Globex person",
            "balance": "1",
            "visits": 1,
            "score": 1,
            "active": True,
            "born": "1990-01-01",
            "seen": None,
            "address": {"city": "Paris", "zip": "75001"},
            "tags": [],
        }
    ],
}
COLUMNS = """
[[types.{name}.columns]]
name = "person_id"
attribute = "id"
[[types.{name}.columns]]
name = "name"
[[types.{name}.columns]]
name = "balance"
kind = "decimal"
[[types.{name}.columns]]
name = "visits"
kind = "integer"
[[types.{name}.columns]]
name = "score"
kind = "float"
[[types.{name}.columns]]
name = "active"
kind = "boolean"
[[types.{name}.columns]]
name = "born"
kind = "date"
[[types.{name}.columns]]
name = "seen"
kind = "datetime"
[[types.{name}.columns]]
name = "city"
attribute = "/address/city"
[[types.{name}.columns]]
name = "tags"
kind = "json"
"""
DECLARATION = (
    """
[sources.people_service]
kind = "http"
base_url_env = "PEOPLE_URL"
hosts = ["127.0.0.1"]
timeout_sec = 5

[types.people]
description = "the caller's tenant's people, in cursor pages"
source = "people_service"
[types.people.caller]
tenant = { claim = "custom:tenant_id" }
[types.people.http]
path = "/tenants/{tenant}/people"
query = { limit = "{page_size}", active = "{active}" }
rows = "/data"
pagination = { style = "cursor", cursor_field = "/meta/next", cursor_param = "after" }
[types.people.parameters.page_size]
type = "integer"
default = 2
[types.people.parameters.active]
type = "boolean"
required = false
"""
    + COLUMNS.format(name="people")
    + """
[types.linked]
description = "people in pages that link to the next"
source = "people_service"
[types.linked.http]
path = "/linked"
rows = "/items"
pagination = { style = "next_link", next_field = "/links/next" }
"""
    + COLUMNS.format(name="linked")
    + """
[types.numbered]
description = "people in numbered pages"
source = "people_service"
[types.numbered.http]
path = "/numbered"
pagination = { style = "page", page_param = "p", first_page = 0 }
"""
    + COLUMNS.format(name="numbered")
)


def _people(asked: Asked) -> Answer:
    """Cursor pages of one tenant: the cursor is the position of the next row."""
    tenant = asked.path.split("/")[2]
    if asked.path != f"/tenants/{tenant}/people":
        return Answer(status=404)
    rows = [
        row
        for row in PEOPLE.get(tenant, [])
        if "active" not in asked.query or row["active"] == (asked.query["active"] == "true")
    ]
    start = int(asked.query.get("after", "0"))
    size = int(asked.query["limit"])
    following = start + size if start + size < len(rows) else None
    return Answer({"data": rows[start : start + size], "meta": {"next": None if following is None else str(following)}})


def _linked(asked: Asked) -> Answer:
    start = int(asked.query.get("from", "0"))
    rows = PEOPLE["acme"][start : start + 3]
    link = f"/linked?from={start + 3}" if start + 3 < len(PEOPLE["acme"]) else None
    return Answer({"items": rows, "links": {"next": link}})


def _numbered(asked: Asked) -> Answer:
    page = int(asked.query["p"])
    return Answer(PEOPLE["acme"][page : page + 1])


def _routes(asked: Asked) -> Answer:
    if asked.path.startswith("/tenants/"):
        return _people(asked)
    return _linked(asked) if asked.path == "/linked" else _numbered(asked)


@pytest.fixture
def types(service: Service, tmp_path: Path) -> dict[str, AnyExportType]:
    service.route = _routes
    return build_types(tmp_path, DECLARATION, {"PEOPLE_URL": service.url})


def _filters(export_type: AnyExportType, tenant: str = "acme", **raw: Any) -> Any:
    bound = export_type.bind_caller(Caller(f"user-{tenant}", {"custom:tenant_id": tenant}))
    return export_type.parse_filters(raw, bound)


def _rows(export_type: AnyExportType, filters: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for page in export_type.pages(filters) for row in page.rows]


EXPECTED = [
    (
        "P000",
        '王芳 "quoted"',
        Decimal("12345678901234567890.123456789"),
        1,
        0.0,
        True,
        datetime(1980, 1, 10).date(),
        datetime(2025, 3, 1, 9, 0),
        "上海",
        '["a",{"b":[1,2.50,null]}]',
    ),
    (
        "P001",
        "=SUM(1)",
        Decimal("-0.10"),
        9007199254740993,
        0.1,
        False,
        datetime(1981, 2, 11).date(),
        datetime(2025, 3, 1, 9, 0),
        "Köln",
        '["a",{"b":[1,2.50,null]}]',
    ),
    (
        "P002",
        "Emma 🎉",
        Decimal("0"),
        0,
        0.2,
        True,
        datetime(1982, 3, 12).date(),
        datetime(2025, 3, 1, 9, 0, 0, 123456),
        "New York",
        '["a",{"b":[1,2.50,null]}]',
    ),
    (
        "P003",
        "",
        Decimal("1E+3"),
        -5,
        0.30000000000000004,
        False,
        datetime(1983, 4, 13).date(),
        None,
        "",
        '["a",{"b":[1,2.50,null]}]',
    ),
]


def test_cursor_pages_give_every_row_typed_exactly(types: dict[str, AnyExportType], service: Service) -> None:
    people = types["people"]

    rows = _rows(people, _filters(people))

    assert rows == EXPECTED
    assert [asked.query.get("after") for asked in service.asked] == [None, "2"]
    assert service.asked[0].path == "/tenants/acme/people" and service.asked[0].query == {"limit": "2"}


def test_an_optional_query_value_is_sent_only_when_given(types: dict[str, AnyExportType], service: Service) -> None:
    people = types["people"]

    rows = _rows(people, _filters(people, active=True, page_size=10))

    assert [row[0] for row in rows] == ["P000", "P002"]
    assert service.asked[0].query == {"limit": "10", "active": "true"}


def test_next_links_and_numbered_pages_give_the_same_rows(types: dict[str, AnyExportType], service: Service) -> None:
    assert _rows(types["linked"], _filters(types["linked"])) == EXPECTED
    assert _rows(types["numbered"], _filters(types["numbered"])) == EXPECTED
    numbered = [asked.query["p"] for asked in service.asked if asked.path == "/numbered"]
    assert numbered == ["0", "1", "2", "3", "4"]  # the empty fifth page ends it


def test_each_tenant_reads_its_own_rows_and_a_tenant_value_never_adds_a_path_segment(
    types: dict[str, AnyExportType], service: Service
) -> None:
    people = types["people"]

    globex = _rows(people, _filters(people, "globex"))
    tricky = _rows(people, _filters(people, "../globex"))

    assert [row[0] for row in globex] == ["G001"]
    assert tricky == []  # the service saw one path segment, and no such tenant
    assert service.asked[-1].path == "/tenants/..%2Fglobex/people"
    with pytest.raises(ValueError, match="bound to the caller"):
        people.parse_filters({"tenant": "globex"}, {"tenant": "acme"})


def test_a_page_cursor_resumes_after_the_rows_written(types: dict[str, AnyExportType], service: Service) -> None:
    people, linked = types["people"], types["linked"]
    filters = _filters(people)
    first = next(iter(people.pages(filters)))

    rest = [row for page in people.pages(filters, first.cursor) for row in page.rows]
    linked_first = next(iter(linked.pages(_filters(linked))))
    linked_rest = [row for page in linked.pages(_filters(linked), linked_first.cursor) for row in page.rows]

    assert people.resumable and linked.resumable and not types["numbered"].resumable
    assert first.cursor == {"cursor": "2"} and [*first.rows, *rest] == EXPECTED
    assert [*linked_first.rows, *linked_rest] == EXPECTED
    assert list(people.pages(filters, {"cursor": None})) == []
    with pytest.raises(CursorInvalid):
        list(types["numbered"].pages(_filters(types["numbered"]), {"page": 2}))
    with pytest.raises(CursorInvalid):
        list(people.pages(filters, {"next": "http://127.0.0.1/elsewhere"}))


def _number_text(text: str) -> tuple[str, str]:
    return ("number", text)


def _digits(value: Any) -> str:
    return str(value[1] if isinstance(value, tuple) else value)


def test_every_format_writes_the_cells_the_service_sent(types: dict[str, AnyExportType]) -> None:
    people = types["people"]
    filters = _filters(people)
    columns = people.columns(filters)
    rows = _rows(people, filters)

    out = io.BytesIO()
    stream = csv_writer.CsvStream(columns, out, formula_guard=False)
    stream.write_rows(rows)
    stream.detach()
    cells = list(csv.reader(io.StringIO(out.getvalue().decode("utf-8"), newline="")))[1:]
    lines = io.BytesIO()
    jsonl_writer.write_jsonl(columns, iter(rows), lines)
    records = [
        json.loads(line, parse_float=_number_text, parse_int=_number_text) for line in lines.getvalue().splitlines()
    ]
    book = io.BytesIO()
    xlsx_engine.write_xlsx_stream(columns, iter(rows), book)
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(book.getvalue())).get_sheet_by_index(0).to_python()
    parquet = io.BytesIO()
    parquet_writer.write_parquet_stream(columns, iter(rows), parquet)
    table = pq.read_table(io.BytesIO(parquet.getvalue())).to_pylist()

    source = PEOPLE["acme"]
    assert [cell[0] for cell in cells] == [person["id"] for person in source]
    assert [cell[1] for cell in cells] == [person["name"] for person in source]
    assert [cell[2] for cell in cells] == ["12345678901234567890.123456789", "-0.10", "0", "1000"]
    assert [cell[3] for cell in cells] == ["1", "9007199254740993", "0", "-5"]
    assert [cell[7] for cell in cells] == [
        "2025-03-01 09:00:00",
        "2025-03-01 09:00:00",
        "2025-03-01 09:00:00.123456",
        "",
    ]
    assert [cell[9] for cell in cells] == ['["a",{"b":[1,2.50,null]}]'] * 4
    # JSON Lines: a number a double cannot hold is its digits as a string (docs/export-types.md).
    assert [Decimal(_digits(record["balance"])) for record in records] == [Decimal(p["balance"]) for p in source]
    assert [int(_digits(record["visits"])) for record in records] == [person["visits"] for person in source]
    assert records[0]["tags"] == ["a", {"b": [("number", "1"), ("number", "2.50"), None]}]
    assert [row[1] for row in sheet[1:]] == [person["name"] for person in source]
    assert [row[8] for row in sheet[1:]] == [person["address"]["city"] for person in source]
    # Parquet: a decimal column without precision and scale holds its digits' text.
    assert [Decimal(row["balance"]) for row in table] == [Decimal(person["balance"]) for person in source]
    assert [row["visits"] for row in table] == [person["visits"] for person in source]
    assert [row["active"] for row in table] == [person["active"] for person in source]


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (Answer({"rows": []}), "its rows (http.rows = '/data') are nothing, not an array"),
        (Answer({"data": {"id": "x"}}), "its rows (http.rows = '/data') are a JSON object"),
        (Answer({"data": [{**PEOPLE["acme"][0], "balance": "lots"}]}), "field 'balance' of row 0 is a string"),
        (Answer({"data": [{**PEOPLE["acme"][0], "visits": 1.5}]}), "field 'visits' of row 0 is a number"),
        (Answer({"data": [{**PEOPLE["acme"][0], "active": "yes"}]}), "field 'active' of row 0 is a string"),
        (Answer({"data": [{**PEOPLE["acme"][0], "address": "Paris"}]}), "row 0 has no field '/address/city'"),
        (Answer({"data": [{"id": "P9"}]}), "row 0 has no field 'name'"),
        (
            Answer({"data": [], "meta": {"next": {"page": 2}}}),
            "its cursor (http.pagination.cursor_field = '/meta/next') is a JSON object",
        ),
        (Answer(raw=b"<html>maintenance</html>"), "answered a page that is not JSON"),
    ],
)
def test_a_page_that_changes_shape_fails_the_export_naming_the_field(
    types: dict[str, AnyExportType], service: Service, answer: Answer, named: str
) -> None:
    service.route = lambda _asked: answer
    people = types["people"]

    with pytest.raises(ExportFailed) as failed:
        _rows(people, _filters(people))

    assert named in failed.value.message
    assert failed.value.code == SourceCode.DATA_INVALID
    assert "GET /tenants/" in failed.value.message


def test_a_cursor_that_repeats_itself_fails_instead_of_looping(
    types: dict[str, AnyExportType], service: Service
) -> None:
    service.route = lambda _asked: Answer({"data": [], "meta": {"next": "same"}})
    people = types["people"]

    with pytest.raises(ExportFailed, match="gives its own cursor 'same' as the next one"):
        _rows(people, _filters(people))
    assert len(service.asked) == 2


def _source_text(kind: ColumnKind, value: Any) -> str | None:
    """A value of the service's JSON as text, as the PDF rules take a database's: a boolean as
    PostgreSQL's t/f, a date-time with an offset in UTC, a JSON value as the service wrote it."""
    if value is None:
        return None
    if kind is ColumnKind.BOOLEAN:
        return "t" if value else "f"
    if kind is ColumnKind.DATETIME:
        moment = datetime.fromisoformat(value)
        return str(moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment)
    if kind is ColumnKind.JSON:
        return json_bytes(value).decode("utf-8")
    return repr(value) if isinstance(value, float) else str(value)


def test_every_cell_the_service_sent_shows_in_the_pdf_as_the_rules_say(types: dict[str, AnyExportType]) -> None:
    """Each column beside the id as a PDF, read back with pypdf (the PostgreSQL corpus's
    reading), against the service's own values as a PDF shows them (docs/formats.md, PDF)."""
    people = types["people"]
    filters = _filters(people)
    columns = people.columns(filters)
    rows = _rows(people, filters)
    source = PEOPLE["acme"]
    mismatches = []
    for position, column in enumerate(columns[1:], start=1):
        read = pdf_cells(list(columns), [list(row) for row in rows], position)
        assert len(read) == len(source)
        for person, cell in zip(source, read, strict=True):
            field = column.name if column.name != "city" else "address"
            value = person[field]["city"] if column.name == "city" else person[field]
            # Lines wrap at spaces: compared without white space.
            expected = "".join(pdf_shown(column.kind, _source_text(column.kind, value)).split())
            if "".join(cell.split()) != expected:
                mismatches.append((column.name, person["id"], cell, expected))
    assert mismatches == [], "\n".join(map(repr, mismatches))
