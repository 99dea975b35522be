"""Date-times of instants in an export's time zone (docs/formats.md, "Time zones").

A task in a zone other than UTC has its instant columns (the export type's
:meth:`~exports.export_types.base.ExportType.zoned_columns`) turned, before the writer, into
what each format writes:

- CSV, csv.gz: ISO 8601 with the zone's offset at that instant, ``2026-03-29 03:00:00+02:00``
  (the form of the UTC file plus the offset; microseconds when there are any);
- JSON Lines: RFC 3339 with the offset, ``"2026-03-29T03:00:00+02:00"`` (``Z`` in UTC);
- PDF: the XLSX display (``yyyy-mm-dd hh:mm:ss``, ``.000`` with milliseconds) plus the offset;
  before 1900-03-01 the CSV text, as for any date-time;
- XLSX: the zone's wall time (Excel has no zones), the header naming the zone;
- Parquet: the values as they are, UTC instants, the column typed ``timestamp(us, tz=<zone>)``;
  a date-time without zone (``wall_time``) is typed ``timestamp(us)`` with no zone, in every zone.

A header ending in ``(UTC)`` names the zone instead in every format. A value the zone cannot
hold (it would leave years 1 to 9999) and PostgreSQL's text of one Python cannot hold (BC,
infinity) stay as in UTC. Naive timestamps and dates are not instants and never change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from typing import Any, Final

from exports.domain.zones import is_utc, zone
from exports.export_types.base import Column, ColumnKind, Page, Row
from exports.writers.cells import FIRST_SERIAL_DAY

_UTC_SUFFIX = "(UTC)"


def offset_text(offset: timedelta) -> str:
    """An offset from UTC as ``datetime.isoformat`` writes it: ``+02:00``, ``-04:56:02``
    (seconds only when there are: the local mean times before standard time)."""
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


# An hour of the cache whose offset changes within it: its values are converted one by one.
_CHANGING: Final = (timedelta(0), "")
# The most hours the cache keeps (rows come roughly in order: a few hours are in use at a time).
_CACHED_HOURS: Final = 4096


class Localiser:
    """Instants as wall times in zone ``where`` with their offset's text. The offset is worked
    out once per UTC hour (``astimezone`` and ``replace`` cost several times the writing of the
    value): an hour with the same offset at its first and last microsecond has it throughout
    (no zone changes twice within an hour); any other hour is converted value by value."""

    def __init__(self, where: tzinfo) -> None:
        self._where = where
        self._hours: dict[int, tuple[timedelta, str]] = {}

    def local(self, value: Any) -> tuple[datetime, str] | None:
        """The instant ``value`` (a naive datetime is UTC) as the zone's wall time (naive) and
        its offset's text; None for any other value, or one the zone would carry out of years 1
        to 9999."""
        if value.__class__ is not datetime and not isinstance(value, datetime):
            return None
        try:
            if value.tzinfo is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            key = value.toordinal() * 24 + value.hour
            hour = self._hours.get(key)
            if hour is None:
                if len(self._hours) >= _CACHED_HOURS:
                    self._hours.clear()
                hour = self._hours[key] = self._hour(value)
            if hour is _CHANGING:
                moment = value.replace(tzinfo=UTC).astimezone(self._where)
                offset = moment.utcoffset() or timedelta(0)
                return moment.replace(tzinfo=None), offset_text(offset)
            return value + hour[0], hour[1]
        except OverflowError:
            return None

    def _hour(self, value: datetime) -> tuple[timedelta, str]:
        first = datetime(value.year, value.month, value.day, value.hour, tzinfo=UTC)
        try:
            offsets = {
                moment.astimezone(self._where).utcoffset()
                for moment in (first, first + timedelta(hours=1, microseconds=-1))
            }
        except OverflowError:
            return _CHANGING
        offset = offsets.pop() if len(offsets) == 1 else None
        return _CHANGING if offset is None else (offset, offset_text(offset))


# Where tz databases differ (versions, builds with or without the pre-1970 "backzone" data):
# before 1800 every zone is its local mean time, after 2100 its rules only repeat.
_PROBE_FROM = datetime(1800, 1, 1, tzinfo=UTC)
_PROBE_WEEKS = 301 * 53


def _offset_seconds(moment: datetime, where: tzinfo) -> int:
    offset = moment.astimezone(where).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


@cache
def offset_probes(name: str) -> tuple[tuple[datetime, ...], tuple[int, ...]]:
    """Instants that show zone ``name``'s history and rules (weekly from 1800 to 2100, and the
    seconds either side of every change of offset among them) and the offset in seconds the
    runtime's tz database gives at each. Another tz database that gives the same offsets has
    the same zone there: COPY writes a zone only when the database's does (postgres_copy)."""
    where = zone(name)
    weekly = [_PROBE_FROM + timedelta(weeks=week) for week in range(_PROBE_WEEKS)]
    offsets = [_offset_seconds(moment, where) for moment in weekly]
    instants, found = list(weekly), list(offsets)
    for before, after, offset in zip(weekly, weekly[1:], offsets, strict=False):
        if _offset_seconds(after, where) == offset:
            continue
        low, high = before, after  # the change is after low, at or before high
        while high - low > timedelta(seconds=1):
            middle = low + (high - low) / 2
            middle = middle.replace(microsecond=0)
            low, high = (middle, high) if _offset_seconds(middle, where) == offset else (low, middle)
        for moment in (low, high):
            instants.append(moment)
            found.append(_offset_seconds(moment, where))
    return tuple(instants), tuple(found)


def csv_text(wall: datetime, offset: str) -> str:
    """A local date-time as CSV writes it in a zone (``str()`` of the aware datetime)."""
    return wall.isoformat(" ") + offset


def jsonl_text(wall: datetime, offset: str) -> str:
    """A local date-time as JSON Lines writes it in a zone (a JSON string of RFC 3339)."""
    return wall.isoformat() + offset


def pdf_text(wall: datetime, offset: str) -> str:
    """A local date-time as the PDF table shows it in a zone."""
    if wall.date() < FIRST_SERIAL_DAY:
        return csv_text(wall, offset)
    milliseconds = wall.microsecond // 1000
    shown = f"{wall:%Y-%m-%d %H:%M:%S}" + (f".{milliseconds:03d}" if milliseconds else "")
    return shown + offset


def xlsx_value(wall: datetime, _offset: str) -> datetime:
    """A local date-time as an XLSX cell holds it: the wall time."""
    return wall


@dataclass(frozen=True)
class ZoneStyle:
    """How a format writes an instant in a zone: ``show`` turns the wall time and the offset's
    text into the value written (None: the values stay UTC instants, the column's type carries
    the zone, as Parquet's); ``label``: the header names the zone (cells that carry no offset)."""

    show: Callable[[datetime, str], Any] | None
    label: bool = False
    # The format types a wall time (a date-time without zone) apart from an instant, so its
    # columns are marked ``wall_time`` in every zone, UTC included (Parquet).
    types_wall_times: bool = False


def zoned_header(header: str, name: str, label: bool) -> str:
    """A zoned column's header: ``(UTC)`` at its end becomes the zone; otherwise, with ``label``
    (XLSX, whose cells carry no offset), `` (<zone>)`` is added."""
    if header.endswith(_UTC_SUFFIX):
        return header[: -len(_UTC_SUFFIX)] + f"({name})"
    return f"{header} ({name})" if label else header


class ZonedExport:
    """How an export in zone ``name`` changes its columns and rows, given its format's
    :class:`ZoneStyle` and the names of its instant columns; in UTC (or with no instant column)
    nothing changes at all."""

    def __init__(self, name: str, style: ZoneStyle, instants: Collection[str]) -> None:
        self.name = name
        self._style = style
        self._all_instants = frozenset(instants)
        self._instants = self._all_instants if not is_utc(name) else frozenset()
        self._zone = zone(name)

    def _wall_time(self, column: Column) -> bool:
        # ``instants`` were asked of the type for such a format in every zone (task_zone).
        return (
            self._style.types_wall_times
            and column.kind is ColumnKind.DATETIME
            and column.name not in self._all_instants
        )

    @property
    def changes(self) -> bool:
        """Whether any column is written otherwise than in UTC."""
        return bool(self._instants)

    def _zoned(self, column: Column) -> bool:
        # By name, whatever kind a declaration gave it: COPY zones a timestamptz column too.
        return column.name in self._instants

    def columns(self, columns: Sequence[Column]) -> list[Column]:
        """The file's columns: the zone on each instant column, its header naming the zone; a
        wall-time column marked so where the format types it apart."""
        columns = [replace(column, wall_time=True) if self._wall_time(column) else column for column in columns]
        if not self.changes:
            return columns
        return [
            replace(column, header=zoned_header(column.header, self.name, self._style.label), timezone=self.name)
            if self._zoned(column)
            else column
            for column in columns
        ]

    def row_converter(self, columns: Sequence[Column]) -> Callable[[Sequence[Row]], Sequence[Row]] | None:
        """What turns a page's rows into the format's zoned values; None when nothing changes
        (no instant column, UTC, or Parquet, whose column type carries the zone)."""
        positions = [index for index, column in enumerate(columns) if self._zoned(column)]
        show = self._style.show
        if not positions or show is None:
            return None
        local = Localiser(self._zone).local

        def convert_value(value: Any) -> Any:
            found = local(value) if value is not None else None
            return value if found is None else show(*found)

        def convert(rows: Sequence[Row]) -> Sequence[Row]:
            converted = []
            for row in rows:
                values = list(row)
                for position in positions:
                    values[position] = convert_value(values[position])
                converted.append(values)
            return converted

        return convert

    def pages(self, columns: Sequence[Column], pages: Iterable[Page]) -> Iterator[Page]:
        """``pages`` with their rows converted (:meth:`row_converter`)."""
        convert = self.row_converter(columns)
        for page in pages:
            yield page if convert is None else replace(page, rows=convert(page.rows))
