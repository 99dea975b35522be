"""CSV from PostgreSQL's COPY against the Python writer, byte for byte, on a real PostgreSQL: the
type corpus, a red-team table of the values whose text differs between the two (floats, times,
empty and quoted text, formula triggers), every demo type, tenancy sessions, hostile caller
values, the read-only guard's breakout corpus, and the keyset checkpoint of a long export."""

from __future__ import annotations

import gc
import gzip
import io
import math
import random
import struct
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exports.core.caller import Caller
from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import Cursor, ExportType, Unbounded
from exports.running.writers.csv_writer import CsvStream
from exports.running.writers.gzip_stream import GzipStream
from exports.sources.postgres.reader import PostgresReader
from exports.sources.sql.ports import SqlRead
from tests.postgres.conftest import declared_types, write_declaration
from tests.postgres.test_read_only_guard import PWNED, WRITES, guarded  # noqa: F401  (the fixture)
from tests.postgres.test_tenancy import ALICE, BOB, expected, invoices  # noqa: F401  (the fixture)
from tests.postgres.test_type_corpus import corpus, corpus_copy_type  # noqa: F401  (the fixture)

RED_TEAM_TABLE = """
CREATE TABLE red (
    id integer PRIMARY KEY, f8 double precision, f4 real, n numeric, t text, c char(4), v varchar,
    ts timestamp, tz timestamptz, d date, b boolean, j jsonb, a text[]
)
"""
RED_TEAM = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.red]
description = "values whose text differs between COPY and csv.writer"
source = "db"
query = "SELECT id, f8, n, t, c, v, ts, tz, d, b, j, a FROM red"
order_key = ["id"]
allow = { groups = ["tests"] }

[types.singles]
description = "real (float4) values: written in Python"
source = "db"
query = "SELECT id, f4 FROM red"
order_key = ["id"]
allow = { groups = ["tests"] }

[types.chosen]
description = "a few columns, renamed and reordered"
source = "db"
query = "SELECT * FROM red"
order_key = ["id"]
allow = { groups = ["tests"] }
columns = [
    { name = "t", header = "Text, \\"quoted\\"" },
    { name = "id", header = "Id", kind = "integer" },
    { name = "f8", header = "Double", kind = "decimal" },
]
"""
FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    3.0,
    0.1,
    0.30000000000000004,
    1e15,
    1e16,
    9999999999999998.0,
    1e16 + 2,
    1e22,
    1e-4,
    1e-5,
    1.5e-7,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    123456789012345.6,
    1234567890123456.8,
    math.inf,
    -math.inf,
    math.nan,
    2.0**53,
    2.0**53 + 2,
    -123.456,
    100.0,
    1e100,
]
TEXTS = [
    "",
    " ",
    "plain",
    'with "quotes"',
    "comma, here",
    "line\nbreak",
    "carriage\rreturn",
    "crlf\r\n",
    "=1+1",
    "+1",
    "-1",
    "@SUM(A1)",
    "\tTab",
    "\rCR",
    "'already",
    "\\.",
    "\\",
    "王芳",
    "Zoë",
    "a\u2028b",
    "trailing space ",
    "x" * 5000,
    "_x0041_",
    "\x01ctrl",
    "NULL",
    '""',
    ",",
    "\n",
]
TIMESTAMPS = [
    "2025-03-01 12:30:05",
    "2025-03-01 12:30:05.5",
    "2025-03-01 12:30:05.000001",
    "2025-03-01 12:30:05.123456",
    "0001-01-01 00:00:00",
    "9999-12-31 23:59:59.999999",
    "10000-01-01 00:00:00",
    "0044-03-15 10:00:00 BC",
    "infinity",
    "-infinity",
    "1900-02-28 23:59:59.9",
]


def csv_bytes(
    export_type: ExportType, filters: Any, copy: bool, guard: bool = True, bom: bool = True, gzipped: bool = False
) -> bytes:
    """The export's CSV as the worker writes it: COPY's rows (copy) or the pages through the
    writer; ``gzipped``: through the csv.gz stream."""
    target = io.BytesIO()
    gzip_stream = GzipStream(target) if gzipped else None
    out: Any = gzip_stream or target
    columns = export_type.columns(filters)
    stream = CsvStream(columns, out, bom=bom, formula_guard=guard)
    if copy:
        copied = export_type.csv_rows(filters, None, Unbounded(), guard)
        assert copied is not None, "COPY declined"
        stream.flush()
        try:
            for chunk in copied.chunks():
                out.write(chunk)
        finally:
            copied.close()
    else:
        for page in export_type.stream(filters, None, Unbounded()):
            stream.write_rows(page.rows)
        stream.flush()
    stream.detach()
    if gzip_stream is not None:
        gzip_stream.finish()
    return target.getvalue()


def assert_same(export_type: ExportType, filters: Any, guard: bool = True) -> bytes:
    python = csv_bytes(export_type, filters, copy=False, guard=guard)
    copied = csv_bytes(export_type, filters, copy=True, guard=guard)
    if copied != python:  # the first differing line, not two megabytes
        for ours, theirs in zip(python.split(b"\r\n"), copied.split(b"\r\n"), strict=False):
            if theirs != ours:
                fields = zip(ours.split(b","), theirs.split(b","), strict=False)
                assert [pair for pair in fields if pair[0] != pair[1]] == []
            assert theirs == ours
    assert copied == python
    return python


def random_floats(count: int, seed: int) -> list[float]:
    """Floats of random bit patterns (every exponent, every digit count)."""
    generator = random.Random(seed)
    values: list[float] = []
    while len(values) < count:
        value = struct.unpack("<d", generator.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(value):
            values.append(value)
    return values


@pytest.fixture(scope="module")
def red(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ExportType]:
    postgres.create_database("red")
    uri = postgres.uri("red")
    floats = FLOATS + random_floats(3000, 25) + [float(n) for n in range(-50, 50)]
    rows = []
    for index, f8 in enumerate(floats):
        rows.append(
            (
                index,
                f8,
                None,
                TEXTS[index % len(TEXTS)] if index % 7 else None,
                TEXTS[(index * 3) % len(TEXTS)][:4],
                TEXTS[(index * 5) % len(TEXTS)],
                TIMESTAMPS[index % len(TIMESTAMPS)],
                TIMESTAMPS[(index + 3) % len(TIMESTAMPS)]
                + ("+00" if "infinity" not in TIMESTAMPS[(index + 3) % len(TIMESTAMPS)] else ""),
                [None, True, False][index % 3],
            )
        )
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS red")
        conn.execute(RED_TEAM_TABLE)
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO red (id, f8, f4, t, c, v, ts, tz, b, n, d, j, a) VALUES (%s, %s, %s, %s, %s, %s, %s, %s,"
                " %s, (%s::float8)::text::numeric, (%s::timestamp)::date, jsonb_build_object('t', %s::text),"
                " ARRAY[%s::text, NULL])",
                [(*row, row[1] if math.isfinite(row[1]) else None, row[6], row[3], row[5]) for row in rows],
            )
        # float4: the usual values, then random bit patterns.
        generator = random.Random(4)
        singles = [0.1, 3.0, -0.0, 0.0, 1e20, 1.5e-7, math.inf, -math.inf, math.nan, 16777217.0, 1e-45]
        while len(singles) < len(floats):
            single = struct.unpack("<f", generator.getrandbits(32).to_bytes(4, "little"))[0]
            if math.isfinite(single):
                singles.append(single)
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE red SET f4 = %s::float8::real WHERE id = %s",
                list(zip(singles, range(len(floats)), strict=True)),
            )
    folder = tmp_path_factory.mktemp("red")
    return declared_types(write_declaration(folder, RED_TEAM), {"DB_URL": uri})


TESTER = Caller("tester", {"sub": "tester", "cognito:groups": "[tests]"})


@pytest.mark.parametrize("guard", [True, False], ids=["guarded", "unguarded"])
def test_the_red_team_values_are_byte_equal_on_both_paths(red: dict[str, ExportType], guard: bool) -> None:
    export_type = red["red"]
    body = assert_same(export_type, export_type.parse_filters({}), guard)
    assert body.count(b"\r\n") > 3000


def test_csv_gz_from_copy_holds_the_same_csv(red: dict[str, ExportType]) -> None:
    export_type = red["red"]
    filters = export_type.parse_filters({})
    copied = csv_bytes(export_type, filters, copy=True, gzipped=True)
    assert gzip.decompress(copied) == csv_bytes(export_type, filters, copy=False)


def test_chosen_columns_and_headers_are_byte_equal_on_both_paths(red: dict[str, ExportType]) -> None:
    export_type = red["chosen"]
    body = assert_same(export_type, export_type.parse_filters({}))
    assert body.startswith(b'\xef\xbb\xbf"Text, ""quoted""",Id,Double\r\n')


def test_the_type_corpus_is_byte_equal_on_both_paths(corpus: tuple[str, ExportType], tmp_path: Path) -> None:  # noqa: F811
    uri, _ = corpus
    sources = RED_TEAM.split("[types.red]", maxsplit=1)[0]
    export_type, names = corpus_copy_type(uri, tmp_path, sources)
    assert len(names) > 50
    for guard in (True, False):
        assert_same(export_type, export_type.parse_filters({}), guard)


def test_a_real_column_is_written_in_python(red: dict[str, ExportType]) -> None:
    export_type = red["singles"]
    assert export_type.csv_rows(export_type.parse_filters({}), None, Unbounded(), True) is None


DEMO_FILTERS: dict[str, dict[str, Any]] = {
    "orders": {"date_from": "2025-01-01", "date_to": "2025-03-31"},
    "customers": {"signed_up_from": "2016-01-01", "signed_up_to": "2025-03-31"},
    "sales_report": {"date_from": "2025-01-01", "date_to": "2025-03-31", "currency": "EUR"},
    "generated_orders": {"rows": 5000},
    "orders_all_tenants": {"date_from": "2025-01-01", "date_to": "2025-03-31"},
    "order_changes": {"changed_from": "2025-03-01T00:00:00Z", "changed_to": "2025-03-31T00:00:00Z"},
}


@pytest.mark.parametrize("name", sorted(DEMO_FILTERS))
def test_every_demo_type_is_byte_equal_on_both_paths(demo_types: dict[str, ExportType], name: str) -> None:
    export_type = demo_types[name]
    filters = export_type.parse_filters(DEMO_FILTERS[name], export_type.bind_caller(ALICE))
    assert len(assert_same(export_type, filters).split(b"\r\n")) > 100


def test_every_postgresql_demo_type_is_in_the_differential_test(demo_types: dict[str, ExportType]) -> None:
    from exports.sources.sql.export import DeclaredSqlExport

    assert {name for name, kind in demo_types.items() if isinstance(kind, DeclaredSqlExport)} == set(DEMO_FILTERS)


def test_a_one_column_file_is_written_in_python(red: dict[str, ExportType], tmp_path: Path) -> None:
    # csv.writer writes a lone empty field as "", COPY a NULL as nothing: COPY declines.
    declaration = RED_TEAM.split("[types.red]", maxsplit=1)[0] + (
        '[types.one]\ndescription = "one"\nsource = "db"\nquery = "SELECT t FROM red"\n'
    )
    export_type = declared_types(write_declaration(tmp_path, declaration), {"DB_URL": _uri_of(red)})["one"]
    assert export_type.csv_rows(export_type.parse_filters({}), None, Unbounded(), True) is None


def _uri_of(types: dict[str, ExportType]) -> str:
    reader = types["red"]._reader  # type: ignore[attr-defined]
    return str(reader._settings()["conninfo"])


def test_the_checkpoint_continues_after_the_last_row_sent(red: dict[str, ExportType]) -> None:
    export_type = red["red"]
    filters = export_type.parse_filters({})
    whole = csv_bytes(export_type, filters, copy=True, bom=False)
    header = whole.split(b"\r\n", 1)[0] + b"\r\n"
    parts: list[bytes] = []
    cursor: Cursor | None = None
    while True:
        copied = export_type.csv_rows(filters, cursor, Unbounded(), True)
        assert copied is not None
        chunks = copied.chunks()
        got = [chunk for _, chunk in zip(range(2), chunks, strict=False)]
        parts.extend(got)
        if len(got) < 2:
            copied.close()
            break
        cursor = copied.checkpoint()
        copied.close()
        assert cursor is not None and 1000 < copied.rows <= 2000
    assert header + b"".join(parts) == whole
    assert len(parts) > 3


def test_tenancy_sessions_scope_the_copied_rows(invoices: tuple[str, dict[str, ExportType]]) -> None:  # noqa: F811
    _uri, types = invoices
    for name in ("rls", "postgrest", "teams"):
        for caller in (ALICE, BOB):
            export_type = types[name]
            filters = export_type.parse_filters({}, export_type.bind_caller(caller))
            body = assert_same(export_type, filters)
            tenant = caller.claims["custom:tenant_id"].encode()
            lines = body.split(b"\r\n")[1:-1]
            assert lines
            if name != "teams":
                assert all(line.split(b",")[1] == tenant for line in lines), name


@pytest.mark.parametrize(
    "hostile",
    [
        "acme'); DELETE FROM invoices; --",
        "acme' OR '1'='1",
        "\\'; SELECT pg_sleep(10); --",
        "acme\\",
        "$$; DROP TABLE invoices; $$",
        "王'芳",
    ],
)
def test_hostile_caller_values_stay_values(invoices: tuple[str, dict[str, ExportType]], hostile: str) -> None:  # noqa: F811
    uri, types = invoices
    export_type = types["teams"]
    caller = Caller("eve", {"sub": "eve", "custom:tenant_id": "acme", "cognito:groups": f"[{hostile} north]"})
    filters = export_type.parse_filters({}, export_type.bind_caller(caller))
    body = assert_same(export_type, filters)
    north = expected(uri, "SELECT count(*) FROM invoices WHERE tenant_id = 'acme' AND team = 'north'")[0][0]
    assert body.count(b"\r\n") == 1 + north
    assert expected(uri, "SELECT count(*) FROM invoices")[0][0] == 300


@pytest.mark.parametrize("query", WRITES)
def test_no_declared_query_writes_through_copy(guarded: tuple[str, PostgresReader], query: str) -> None:  # noqa: F811
    admin, reader = guarded
    PWNED.unlink(missing_ok=True)
    two_columns = query.replace("AS x", "AS x, 2 AS y")  # COPY writes files of two columns or more
    with pytest.raises(ExportFailed) as refused:
        copied = reader.copy_csv(SqlRead(two_columns, {}, ("x",)), None, True, Unbounded())
        assert copied is not None
        try:
            list(copied.chunks())
        finally:
            copied.close()
    assert refused.value.code == "SOURCE_QUERY_FAILED"
    with psycopg.connect(admin) as conn:
        assert conn.execute("SELECT count(*) FROM victims").fetchone() == (0,)
        assert conn.execute("SELECT last_value, is_called FROM victim_ids").fetchone() == (1, False)
    assert not PWNED.exists()


def test_an_error_in_the_middle_of_the_copy_fails_the_read_after_the_rows_before_it(
    red: dict[str, ExportType], tmp_path: Path
) -> None:
    # The rows before the failing one and the server's error arrive in one read: the error is
    # found among buffered rows, where the reader takes them without psycopg's Copy.read(). (No
    # order key: a sort would compute every row before sending the first.)
    declaration = RED_TEAM.split("[types.red]", maxsplit=1)[0] + (
        '[types.failing]\ndescription = "fails at row 2500"\nsource = "db"\n'
        'query = "SELECT n, 1 / (n - 2500) AS x FROM generate_series(1, 3000) AS n"\n'
    )
    export_type = declared_types(write_declaration(tmp_path, declaration), {"DB_URL": _uri_of(red)})["failing"]
    copied = export_type.csv_rows(export_type.parse_filters({}), None, Unbounded(), True)
    assert copied is not None
    chunks: list[bytes] = []
    try:
        with pytest.raises(ExportFailed) as failed:
            chunks.extend(copied.chunks())
    finally:
        copied.close()
    assert failed.value.code == SourceCode.QUERY_FAILED
    assert "division by zero (SQLSTATE 22012)" in failed.value.message
    assert copied.rows == 2000 and b"".join(chunks).split(b"\r\n")[-2] == b"2000,0"


def test_the_rows_of_a_copy_leave_the_garbage_collector_idle(red: dict[str, ExportType], tmp_path: Path) -> None:
    # A row's buffer kept until its chunk is joined made a collection every 700 rows, each over
    # the worker's whole heap: the rows are copied out as they come, their objects freed at once.
    declaration = RED_TEAM.split("[types.red]", maxsplit=1)[0] + (
        '[types.many]\ndescription = "many rows"\nsource = "db"\n'
        'query = "SELECT n, md5(n::text) AS digest FROM generate_series(1, 100000) AS n"\n'
    )
    export_type = declared_types(write_declaration(tmp_path, declaration), {"DB_URL": _uri_of(red)})["many"]
    copied = export_type.csv_rows(export_type.parse_filters({}), None, Unbounded(), True)
    assert copied is not None
    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's own (the suite raises them)
    before = gc.get_stats()[0]["collections"]
    try:
        size = sum(len(chunk) for chunk in copied.chunks())
        collections = gc.get_stats()[0]["collections"] - before
    finally:
        gc.set_threshold(*thresholds)
        copied.close()
    assert copied.rows == 100_000 and size == 3_988_895
    assert collections < 10, collections
