"""Exports in a time zone on a real PostgreSQL: ``timestamptz`` columns in the zone, ``timestamp``
and ``date`` unchanged; COPY's CSV byte-equal to the Python writer's in Berlin (both DST changes),
Kathmandu (+05:45), New York, Amsterdam (+00:19:32 until 1937), Lord Howe (30-minute DST) and
before 1900 (local mean time); the instants the file states are the database's own."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exports.core.export_type import ExportType, Unbounded
from exports.core.task import ExportFormat
from exports.running.formats.registry import format_spec
from exports.running.writers.csv_writer import CsvStream
from exports.running.writers.zones import ZonedExport
from tests.postgres.conftest import declared_types, write_declaration
from tests.postgres.test_type_corpus import corpus, corpus_copy_type  # noqa: F401  (the fixture)

ZONES = ["Europe/Berlin", "Asia/Kathmandu", "America/New_York", "Australia/Lord_Howe"]
INSTANTS = [
    "2026-03-29 00:59:59+00",  # Berlin: 01:59:59+01, the last second of winter time
    "2026-03-29 01:00:00+00",  # Berlin: 03:00:00+02
    "2026-10-25 00:30:00+00",  # Berlin: 02:30+02, then again
    "2026-10-25 01:30:00+00",  # Berlin: 02:30+01
    "2026-03-08 07:00:00+00",  # New York springs forward
    "2026-04-04 15:00:00+00",  # Lord Howe: +11 to +10:30
    "2026-06-01 12:00:00.123456+00",
    "2026-06-01 12:00:00.5+00",
    "1850-06-01 12:00:00+00",  # before 1900: local mean times, offsets with seconds
    "1893-03-31 23:00:00+00",  # Berlin: still local mean time (CET from 23:06:32 UTC)
    "1930-07-01 12:00:00+00",  # Amsterdam +00:19:32 (summer +01:19:32)
    "1899-12-30 00:00:00+00",
    "0001-01-01 00:00:00+00",  # New York's wall time would be year 0: written as in UTC
    "9999-12-31 23:59:59.999999+00",  # Berlin's would be year 10000: written as in UTC
    "10000-01-01 00:00:00+00",
    "0044-03-15 10:00:00+00 BC",
    "infinity",
    "-infinity",
]
TABLE = """
CREATE TABLE moments (id integer PRIMARY KEY, at timestamptz, wall timestamp, day date, note text);
"""
DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.moments]
description = "instants, wall times and dates"
source = "db"
query = "SELECT id, at, wall, day, note FROM moments"
order_key = ["id"]
allow = { groups = ["tests"] }

[types.declared]
description = "declared columns over the same"
source = "db"
query = "SELECT * FROM moments"
order_key = ["id"]
allow = { groups = ["tests"] }
columns = [
    { name = "id", header = "Id", kind = "integer" },
    { name = "at", header = "At (UTC)", kind = "datetime" },
    { name = "wall", header = "Wall", kind = "datetime" },
]

[types.as_text]
description = "the instant declared as text: still an instant"
source = "db"
query = "SELECT id, at, note FROM moments"
order_key = ["id"]
allow = { groups = ["tests"] }
columns = [
    { name = "id", header = "Id", kind = "integer" },
    { name = "at", header = "At", kind = "string" },
    { name = "note", header = "Note" },
]
"""


@pytest.fixture(scope="module")
def moments(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, ExportType]]:
    postgres.create_database("moments")
    uri = postgres.uri("moments")
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS moments")
        conn.execute(TABLE)
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO moments VALUES (%s, %s::timestamptz, '2026-03-29 02:30:00', '2026-03-29', '=1+1')",
                list(enumerate(INSTANTS)),
            )
            cursor.execute("INSERT INTO moments VALUES (%s, NULL, NULL, NULL, NULL)", [len(INSTANTS)])
    folder = tmp_path_factory.mktemp("moments")
    return uri, declared_types(write_declaration(folder, DECLARATION), {"DB_URL": uri})


def zoned_csv(export_type: ExportType, zone: str, copy: bool, guard: bool = True) -> bytes:
    """The CSV the worker writes in ``zone``: COPY's rows (it must not decline), or the pages
    through the zone and the writer."""
    filters = export_type.parse_filters({})
    zoned = ZonedExport(zone, format_spec(ExportFormat.CSV).zone_style, export_type.zoned_columns(filters, Unbounded()))
    columns = zoned.columns(export_type.columns(filters))
    target = io.BytesIO()
    stream = CsvStream(columns, target, formula_guard=guard)
    if copy:
        copied = export_type.csv_rows(filters, None, Unbounded(), guard, zone)
        assert copied is not None, "COPY declined"
        stream.flush()
        try:
            for chunk in copied.chunks():
                target.write(chunk)
        finally:
            copied.close()
    else:
        for page in zoned.pages(columns, export_type.stream(filters, None, Unbounded())):
            stream.write_rows(page.rows)
        stream.flush()
    stream.detach()
    return target.getvalue()


def rows_of(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode())))


def test_a_zone_whose_history_the_database_tells_otherwise_is_written_in_python(
    moments: tuple[str, dict[str, ExportType]],
) -> None:
    """Amsterdam before 1937 (+00:19:32): tz databases built without the "backzone" data have
    it as Brussels's (+00:17:30). Where the database's differs from the worker's, COPY declines
    and the file is the Python writer's, whatever the database says."""
    uri, types = moments
    export_type = types["moments"]
    filters = export_type.parse_filters({})
    with psycopg.connect(uri) as conn:
        row = conn.execute(
            "SELECT ('1850-06-01 12:00+00'::timestamptz AT TIME ZONE 'Europe/Amsterdam')::text"
        ).fetchone()
    python = zoned_csv(export_type, "Europe/Amsterdam", copy=False)
    assert rows_of(python)[9][1] == "1850-06-01 12:19:32+00:19:32"
    copied = export_type.csv_rows(filters, None, Unbounded(), True, "Europe/Amsterdam")
    if copied is not None:
        copied.close()
    assert (copied is None) == (row is not None and row[0] != "1850-06-01 12:19:32")
    unknown = export_type.csv_rows(filters, None, Unbounded(), True, "Europe/Berlin")
    assert unknown is not None  # the same database agrees on Berlin
    unknown.close()


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("name", ["moments", "declared", "as_text"])
def test_copy_writes_the_python_writers_bytes_in_every_zone(
    moments: tuple[str, dict[str, ExportType]], zone: str, name: str
) -> None:
    export_type = moments[1][name]
    python = zoned_csv(export_type, zone, copy=False)
    copied = zoned_csv(export_type, zone, copy=True)
    for ours, theirs in zip(rows_of(python), rows_of(copied), strict=True):
        assert theirs == ours
    assert copied == python


def test_berlin_across_both_dst_changes_and_before_1900(moments: tuple[str, dict[str, ExportType]]) -> None:
    header, *rows = rows_of(zoned_csv(moments[1]["moments"], "Europe/Berlin", copy=True))

    assert header == ["id", "at", "wall", "day", "note"]
    assert [row[1] for row in rows[:4]] == [
        "2026-03-29 01:59:59+01:00",
        "2026-03-29 03:00:00+02:00",
        "2026-10-25 02:30:00+02:00",
        "2026-10-25 02:30:00+01:00",
    ]
    assert rows[6][1] == "2026-06-01 14:00:00.123456+02:00"
    assert rows[7][1] == "2026-06-01 14:00:00.500000+02:00"
    assert rows[8][1] == "1850-06-01 12:53:28+00:53:28"
    assert rows[9][1] == "1893-03-31 23:53:28+00:53:28"
    # Out of years 1 to 9999 in the zone or in UTC: PostgreSQL's UTC text, as without a zone.
    assert [row[1] for row in rows[13:18]] == [
        "9999-12-31 23:59:59.999999",
        "10000-01-01 00:00:00",
        "0044-03-15 10:00:00 BC",
        "infinity",
        "'-infinity",  # guarded, as in UTC
    ]
    assert {tuple(row[2:]) for row in rows[:-1]} == {("2026-03-29 02:30:00", "2026-03-29", "'=1+1")}
    assert rows[-1][1:] == ["", "", "", ""]


def test_kathmandu_and_the_declared_header(moments: tuple[str, dict[str, ExportType]]) -> None:
    header, *rows = rows_of(zoned_csv(moments[1]["declared"], "Asia/Kathmandu", copy=True))

    assert header == ["Id", "At (Asia/Kathmandu)", "Wall"]
    assert rows[1][1] == "2026-03-29 06:45:00+05:45"
    assert rows[1][2] == "2026-03-29 02:30:00"


@pytest.mark.parametrize("zone", ZONES)
def test_the_instants_are_the_databases_own(moments: tuple[str, dict[str, ExportType]], zone: str) -> None:
    uri, types = moments
    _, *rows = rows_of(zoned_csv(types["moments"], zone, copy=True))
    with psycopg.connect(uri) as conn:
        conn.execute("SELECT set_config('TimeZone', %s, false)", [zone])
        expected = {
            row[0]: row[1]
            for row in conn.execute(
                "SELECT id, at FROM moments WHERE at > '0002-01-01' AND at < '9999-01-01' ORDER BY id"
            )
        }
    written = {int(row[0]): datetime.fromisoformat(row[1]) for row in rows if int(row[0]) in expected}
    # psycopg's aware datetimes in the session's zone: the same instants (compared in UTC: an
    # ambiguous wall time in another tzinfo never compares equal, PEP 495) and the same offsets.
    assert {key: moment.astimezone(UTC) for key, moment in written.items()} == {
        key: moment.astimezone(UTC) for key, moment in expected.items()
    }
    assert all(moment.utcoffset() == expected[key].utcoffset() for key, moment in written.items())


def test_only_timestamptz_columns_are_zoned(moments: tuple[str, dict[str, ExportType]]) -> None:
    for export_type in moments[1].values():
        assert export_type.zoned_columns(export_type.parse_filters({}), Unbounded()) == {"at"}


def test_utc_is_the_file_of_before_zones(moments: tuple[str, dict[str, ExportType]]) -> None:
    export_type = moments[1]["moments"]
    filters = export_type.parse_filters({})
    before = io.BytesIO()
    stream = CsvStream(export_type.columns(filters), before)
    for page in export_type.stream(filters, None, Unbounded()):
        stream.write_rows(page.rows)
    stream.detach()
    assert zoned_csv(export_type, "Etc/UTC", copy=True) == zoned_csv(export_type, "UTC", copy=False)
    assert zoned_csv(export_type, "Etc/UTC", copy=False) == before.getvalue()
    assert rows_of(before.getvalue())[2][1] == "2026-03-29 01:00:00"


def test_the_type_corpus_is_byte_equal_on_both_paths_in_berlin(corpus: tuple[str, ExportType], tmp_path: Path) -> None:  # noqa: F811
    uri, _ = corpus
    sources = DECLARATION.split("[types.moments]", maxsplit=1)[0]
    export_type, names = corpus_copy_type(uri, tmp_path, sources)
    assert "c_timestamptz" in names
    column = names.index("c_timestamptz")
    instants = {}
    for zone in ("Europe/Berlin", "Asia/Kathmandu"):
        python = zoned_csv(export_type, zone, copy=False)
        assert zoned_csv(export_type, zone, copy=True) == python
        instants[zone] = {row[column] for row in rows_of(python)[1:]}
    # The corpus's instant before 1900 and one with microseconds.
    assert {"1899-12-30 01:00:00+01:00", "2025-01-01 11:00:00.123456+01:00"} <= instants["Europe/Berlin"]
    assert {"1899-12-30 05:41:16+05:41:16", "2025-01-01 15:45:00.123456+05:45"} <= instants["Asia/Kathmandu"]
