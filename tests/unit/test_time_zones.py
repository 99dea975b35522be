"""An export in a time zone, every format through run_export, read back with real readers (csv,
json, openpyxl, pyarrow, pypdf): instants in the zone across Berlin's DST changes, in Kathmandu
(+05:45) and before 1900 (local mean time); wall-clock date-times and dates unchanged; UTC as
before zones."""

import csv
import gzip
import io
import json
import random
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq
import pytest
from openpyxl import load_workbook

from exports.config.settings import XlsxEngine
from exports.domain.spec import ExportSpec
from exports.domain.task import ExportFormat, Task
from exports.domain.zones import UTC_ZONE, UnknownZone, canonical_zone
from exports.export_types.base import Column, ColumnKind, ExportType, Row, RunControl
from exports.formats.registry import format_spec
from exports.services.export_run import run_export
from exports.services.progress import ProgressReporter
from exports.writers.zones import Localiser, ZonedExport, offset_probes, offset_text, zoned_header
from tests.pdf_reading import page_lines, reader
from tests.unit.builders import make_task
from tests.unit.export_fakes import NoFilters, make_world, running_task

# Instants (naive: UTC, as the PostgreSQL loader gives them) and their text in Berlin.
BERLIN = [
    (datetime(2026, 3, 29, 0, 59, 59), "2026-03-29 01:59:59+01:00"),  # the last second of winter time
    (datetime(2026, 3, 29, 1, 0, 0), "2026-03-29 03:00:00+02:00"),  # 02:00 never happens
    (datetime(2026, 10, 25, 0, 30), "2026-10-25 02:30:00+02:00"),  # 02:30 twice: summer time...
    (datetime(2026, 10, 25, 1, 30), "2026-10-25 02:30:00+01:00"),  # ...then winter time
    (datetime(2026, 6, 1, 12, 0, 0, 123456), "2026-06-01 14:00:00.123456+02:00"),
    (datetime(1850, 6, 1, 12, 0), "1850-06-01 12:53:28+00:53:28"),  # Berlin's local mean time
]
AWARE = datetime(2026, 1, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 2026-01-02 04:30 UTC
WALL = datetime(2026, 3, 29, 2, 30)  # a timestamp without time zone: never changed
UTC_OFFSET = timedelta(0)
DAY = date(2026, 3, 29)
COLUMNS = [
    Column("id", "Id", ColumnKind.INTEGER),
    Column("at", "At (UTC)", ColumnKind.DATETIME),
    Column("seen", "Seen", ColumnKind.DATETIME),
    Column("wall", "Wall clock", ColumnKind.DATETIME),
    Column("day", "Day", ColumnKind.DATE),
]


def moment_rows(text_row: bool) -> list[Row]:
    rows: list[Row] = [(index, moment, AWARE, WALL, DAY) for index, (moment, _) in enumerate(BERLIN)]
    if text_row:  # PostgreSQL's text of a date-time Python cannot hold (Parquet refuses it, in UTC too)
        rows.append((len(rows), None, "infinity", None, None))
    return rows


class Moments(ExportType):
    """Instants in ``at`` and ``seen``; ``wall`` is a wall-clock date-time (no instant)."""

    name = "moments"
    description = "Moments"
    filters_model = NoFilters

    def __init__(self, text_row: bool = True) -> None:
        self.text_row = text_row

    def columns(self, filters: Any) -> list[Column]:
        return list(COLUMNS)

    def rows(self, filters: Any, on_fraction: Any = None) -> Any:
        return iter(moment_rows(self.text_row))

    def zoned_columns(self, filters: Any, control: RunControl) -> frozenset[str]:
        return frozenset({"at", "seen"})

    def file_stem(self, filters: Any) -> str:
        return "moments"


def export(fmt: ExportFormat, zone: str = "Europe/Berlin", **settings: Any) -> bytes:
    world = make_world(Moments(text_row=fmt is not ExportFormat.PARQUET), **settings)
    task = running_task(world, "moments", fmt=fmt, timezone=zone)
    result = run_export(task, ProgressReporter(task, world.deps), world.deps)
    body: bytes = world.files.objects[result.key]["body"]
    return body


def berlin(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC).astimezone(ZoneInfo("Europe/Berlin"))


@pytest.mark.parametrize("fmt", [ExportFormat.CSV, ExportFormat.CSV_GZ])
def test_csv_writes_instants_in_the_zone_with_the_offset_at_each_instant(fmt: ExportFormat) -> None:
    body = export(fmt)
    text = (gzip.decompress(body) if fmt is ExportFormat.CSV_GZ else body).decode()
    header, *rows = list(csv.reader(io.StringIO(text)))

    assert header == ["Id", "At (Europe/Berlin)", "Seen", "Wall clock", "Day"]
    assert [row[1] for row in rows] == [shown for _, shown in BERLIN] + [""]
    assert {row[2] for row in rows[:-1]} == {"2026-01-02 05:30:00+01:00"}
    assert rows[-1][2] == "infinity"  # PostgreSQL's text of what Python cannot hold: as in UTC
    assert {row[3] for row in rows} == {"2026-03-29 02:30:00", ""}
    assert {row[4] for row in rows} == {"2026-03-29", ""}
    for (moment, _), row in zip(BERLIN, rows, strict=False):
        assert datetime.fromisoformat(row[1]) == moment.replace(tzinfo=UTC)


def test_kathmandu_is_five_hours_forty_five_ahead() -> None:
    rows = list(csv.reader(io.StringIO(export(ExportFormat.CSV, "Asia/Kathmandu").decode())))
    assert rows[0][1] == "At (Asia/Kathmandu)"
    assert rows[2][1] == "2026-03-29 06:45:00+05:45"
    assert rows[5][1] == "2026-06-01 17:45:00.123456+05:45"


@pytest.mark.parametrize("fmt", [ExportFormat.JSONL, ExportFormat.JSONL_GZ])
def test_json_lines_write_rfc_3339_with_the_offset(fmt: ExportFormat) -> None:
    body = export(fmt)
    lines = [
        json.loads(line) for line in (gzip.decompress(body) if fmt is ExportFormat.JSONL_GZ else body).splitlines()
    ]

    assert [line["at"] for line in lines] == [shown.replace(" ", "T") for _, shown in BERLIN] + [None]
    assert lines[1] == {
        "id": 1,
        "at": "2026-03-29T03:00:00+02:00",
        "seen": "2026-01-02T05:30:00+01:00",
        "wall": "2026-03-29T02:30:00Z",  # a wall time is written as it always was
        "day": "2026-03-29",
    }


def workbook_cells(body: bytes) -> list[list[Any]]:
    sheet = load_workbook(io.BytesIO(body), read_only=True).worksheets[0]
    return [[cell.value for cell in row] for row in sheet.iter_rows()]


def test_xlsx_holds_the_zones_wall_time_and_both_engines_agree() -> None:
    stream = workbook_cells(export(ExportFormat.XLSX, xlsx_engine=XlsxEngine.STREAM))
    library = workbook_cells(export(ExportFormat.XLSX, xlsx_engine=XlsxEngine.OPENPYXL))

    assert stream == library
    header, *rows = stream
    assert header == ["Id", "At (Europe/Berlin)", "Seen (Europe/Berlin)", "Wall clock", "Day"]
    expected = [berlin(moment).replace(tzinfo=None) for moment, _ in BERLIN]
    # Cells hold milliseconds (cut), before 1900-03-01 the text: the rules of every date-time cell.
    expected[4] = expected[4].replace(microsecond=123000)
    assert [row[1] for row in rows[:5]] == expected[:5]
    assert rows[5][1] == "1850-06-01 12:53:28"
    assert rows[1][2] == datetime(2026, 1, 2, 5, 30)
    assert rows[1][3] == WALL
    assert rows[-1][1:3] == [None, "infinity"]


def test_parquet_keeps_utc_instants_and_names_the_zone_in_the_column_type() -> None:
    table = pq.read_table(io.BytesIO(export(ExportFormat.PARQUET)))

    assert str(table.schema.field("at").type) == "timestamp[us, tz=Europe/Berlin]"
    assert str(table.schema.field("seen").type) == "timestamp[us, tz=Europe/Berlin]"
    # A wall time (a timestamp without zone) is no instant: no zone, in any export's zone.
    assert str(table.schema.field("wall").type) == "timestamp[us]"
    assert table.column("wall").to_pylist()[0] == WALL
    at = table.column("at").to_pylist()
    assert at == [berlin(moment) for moment, _ in BERLIN]
    assert at[1].isoformat() == "2026-03-29T03:00:00+02:00"
    utc = pq.read_table(io.BytesIO(export(ExportFormat.PARQUET, UTC_ZONE)))
    assert table.column("at").cast("int64") == utc.column("at").cast("int64")  # the same instants
    assert str(utc.schema.field("wall").type) == "timestamp[us]"
    assert str(utc.schema.field("at").type) == "timestamp[us, tz=UTC]"


def test_pdf_shows_the_zones_time_with_its_offset_and_names_the_zone() -> None:
    text = [line.text for page in reader(export(ExportFormat.PDF)).pages for line in page_lines(page)]
    joined = "\n".join(text)

    assert "Time zone: Europe/Berlin" in text[:4]
    assert "At (Europe/Berlin)" in joined
    for shown in ("2026-03-29 01:59:59+01:00", "2026-03-29 03:00:00+02:00", "2026-10-25 02:30:00+01:00"):
        assert shown in joined
    assert "2026-06-01 14:00:00.123+02:00" in joined  # milliseconds, as XLSX shows them
    assert "1850-06-01 12:53:28+00:53:28" in joined  # before 1900: the CSV text
    assert "2026-03-29 02:30:00" in joined  # the wall clock, unchanged


@pytest.mark.parametrize("fmt", list(ExportFormat))
def test_utc_and_its_aliases_write_the_file_of_before_zones(fmt: ExportFormat) -> None:
    before = export(fmt, UTC_ZONE)
    assert export(fmt, canonical_zone("UTC")) == before
    assert b"+00:00" not in (gzip.decompress(before) if fmt.value.endswith(".gz") else before)


def test_a_file_in_a_zone_differs_from_the_utc_file_only_in_its_instants() -> None:
    utc = list(csv.reader(io.StringIO(export(ExportFormat.CSV, UTC_ZONE).decode())))
    zoned = list(csv.reader(io.StringIO(export(ExportFormat.CSV).decode())))
    assert utc[0] == ["Id", "At (UTC)", "Seen", "Wall clock", "Day"]
    assert [[row[0], *row[3:]] for row in utc] == [[row[0], *row[3:]] for row in zoned]
    assert utc[2][1] == "2026-03-29 01:00:00"


def test_a_zone_that_would_leave_year_9999_keeps_the_utc_value() -> None:
    convert = ZonedExport("Asia/Kathmandu", format_spec(ExportFormat.CSV).zone_style, {"at"}).row_converter(COLUMNS)
    assert convert is not None
    last = datetime(9999, 12, 31, 23, 0)
    assert convert([(1, last, None, None, None)]) == [[1, last, None, None, None]]


def test_zone_names_and_offsets() -> None:
    assert canonical_zone("Zulu") == canonical_zone("Etc/UTC") == UTC_ZONE
    assert canonical_zone("Australia/Lord_Howe") == "Australia/Lord_Howe"
    for name in ("europe/berlin", "Local", "localtime", "Factory", "", "Europe/Berlin/"):
        with pytest.raises(UnknownZone, match="IANA time zone name"):
            canonical_zone(name)
    assert offset_text(timedelta(hours=-3, minutes=-30)) == "-03:30"
    assert (
        offset_text(datetime(1850, 1, 1, tzinfo=ZoneInfo("America/New_York")).utcoffset() or UTC_OFFSET) == "-04:56:02"
    )
    assert zoned_header("Created at (UTC)", "Asia/Kathmandu", label=False) == "Created at (Asia/Kathmandu)"
    assert zoned_header("created_at", "Asia/Kathmandu", label=False) == "created_at"
    assert zoned_header("created_at", "Asia/Kathmandu", label=True) == "created_at (Asia/Kathmandu)"


def test_a_type_by_default_zones_its_date_time_columns() -> None:
    class Plain(Moments):
        zoned_columns = ExportType.zoned_columns

    assert Plain().zoned_columns(NoFilters(), None) == {"at", "seen", "wall"}  # type: ignore[arg-type]


def test_a_retry_asks_for_the_same_zone() -> None:
    assert ExportSpec.of_task(make_task(timezone="Asia/Kathmandu")).timezone == "Asia/Kathmandu"
    assert ExportSpec.of_task(make_task()).timezone == UTC_ZONE


def test_a_task_stored_before_zones_reads_as_utc() -> None:
    stored = make_task().model_dump(mode="json")
    del stored["timezone"]
    assert Task.model_validate(stored).timezone == UTC_ZONE


@pytest.mark.parametrize(
    "zone",
    ["Europe/Berlin", "Asia/Kathmandu", "Australia/Lord_Howe", "America/New_York", "Asia/Tehran", "Africa/Casablanca"],
)
def test_the_hourly_offsets_are_astimezones_at_every_change_and_at_random(zone: str) -> None:
    """The localiser works an offset out once an hour: it must give what ``astimezone`` gives,
    at both sides of every change of offset from 1800 to 2100 and at random instants."""
    where = ZoneInfo(zone)
    generator = random.Random(zone)
    changes, _ = offset_probes(zone)
    instants = [
        moment.replace(tzinfo=None) + timedelta(microseconds=shift) for moment in changes for shift in (-1, 0, 1)
    ]
    instants += [datetime(2, 1, 1) + timedelta(seconds=generator.randrange(315_400_000_000)) for _ in range(5_000)]
    localiser = Localiser(where)
    for instant in instants:
        exact = instant.replace(tzinfo=UTC).astimezone(where)
        assert localiser.local(instant) == (exact.replace(tzinfo=None), offset_text(exact.utcoffset() or UTC_OFFSET)), (
            instant
        )
        assert localiser.local(exact) == localiser.local(instant)  # an aware value: the same instant
