"""PostgreSQL values as the files hold them: which types load natively, how the others reach a
file exactly, and the dates and timestamps Python cannot hold.

The rule (docs/export-your-own-data.md, "How values are typed"): integers, numerics, floats,
booleans, dates, timestamps, text and UUIDs load as Python values (binary, fast); ``money`` is
read as its ``numeric`` value; every other type (enums, json and jsonb, arrays, intervals,
composites, ranges, geometric and network types, ``bytea``, ...) is read as PostgreSQL's own
text output, the query turning it into text (intervals in ISO 8601, ``bytea`` in hex): never
a Python ``repr``, never through a float. Dates and timestamps Python's ``date`` cannot hold
(``infinity``, ``-infinity``, BC, years past 9999) arrive as PostgreSQL writes them, as text.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from exports.core.export_type import ColumnKind

if TYPE_CHECKING:
    from psycopg import sql

# Types that load as Python values, and the file's kind of each.
NATIVE_KINDS = {
    "int2": ColumnKind.INTEGER,
    "int4": ColumnKind.INTEGER,
    "int8": ColumnKind.INTEGER,
    "oid": ColumnKind.INTEGER,
    "numeric": ColumnKind.DECIMAL,
    "float4": ColumnKind.FLOAT,
    "float8": ColumnKind.FLOAT,
    "date": ColumnKind.DATE,
    "timestamp": ColumnKind.DATETIME,
    "timestamptz": ColumnKind.DATETIME,
    "bool": ColumnKind.BOOLEAN,
    "text": ColumnKind.STRING,
    "varchar": ColumnKind.STRING,
    "bpchar": ColumnKind.STRING,
    "name": ColumnKind.STRING,
    "uuid": ColumnKind.STRING,
}
# Types read through a cast to another: its SQL type and the file's kind.
# json and jsonb: their text, which JSON Lines and Parquet nest (ColumnKind.JSON).
CAST_TYPES = {
    "money": ("numeric", ColumnKind.DECIMAL),
    "json": ("text", ColumnKind.JSON),
    "jsonb": ("text", ColumnKind.JSON),
}
TEXT_CAST = ("text", ColumnKind.STRING)
# The session's output formats of the types read as text.
SESSION_FORMATS = (("IntervalStyle", "iso_8601"), ("bytea_output", "hex"))

# PostgreSQL's epoch (2000-01-01) in days of the proleptic Gregorian calendar from 1970-01-01,
# and its infinities in the binary formats of date and timestamp.
_PG_EPOCH_DAYS = 10_957
_DATE_INFINITY, _DATE_MINUS_INFINITY = 0x7FFFFFFF, -0x80000000
_TIMESTAMP_INFINITY, _TIMESTAMP_MINUS_INFINITY = 0x7FFFFFFFFFFFFFFF, -0x8000000000000000
_MICROS_PER_DAY = 86_400_000_000
_PG_EPOCH = datetime(2000, 1, 1)
_PG_EPOCH_ORDINAL = date(2000, 1, 1).toordinal()
# The loaders run once a value (two a row of the demo orders): bound once, positional arguments
# (docs/performance.md: a date in 110 ns instead of 370, a timestamp in 350 instead of 470).
_INT4 = struct.Struct("!i").unpack
_INT8 = struct.Struct("!q").unpack


# Array element types whose array text is not comma separated (box uses semicolons): their
# arrays stay text in every format.
_NOT_COMMA_SEPARATED = frozenset({"box"})


def array_element_kind(element_type: str) -> ColumnKind | None:
    """The kind a list's elements have in JSON Lines and Parquet for an array of
    ``element_type``: a type that loads natively keeps its kind (integers, numerics, floats,
    booleans, dates, timestamps, text), every other element is its text; None for an array
    written as text everywhere."""
    if element_type in _NOT_COMMA_SEPARATED:
        return None
    return NATIVE_KINDS.get(element_type, ColumnKind.STRING)


def read_as(type_name: str) -> tuple[str, ColumnKind] | None:
    """How a column of ``type_name`` is read: None natively, else the SQL type it is cast to and
    its kind in the file."""
    if type_name in NATIVE_KINDS:
        return None
    return CAST_TYPES.get(type_name, TEXT_CAST)


def projection(names: Sequence[str], type_names: Sequence[str]) -> sql.Composable | None:
    """The select list that reads every column as :func:`read_as` says, a ``timestamptz`` as its
    UTC wall time (a ``timestamp``: psycopg's C loader gives the naive UTC datetime the files
    hold); None when every column loads natively as it is (``*`` then)."""
    from psycopg import sql

    casts = [read_as(type_name) for type_name in type_names]
    if all(cast is None for cast in casts) and "timestamptz" not in type_names:
        return None
    items = []
    for name, type_name, cast in zip(names, type_names, casts, strict=True):
        column = sql.SQL("exported.{name}").format(name=sql.Identifier(name))
        if type_name == "timestamptz":
            column = sql.SQL("({column} AT TIME ZONE 'UTC') AS {name}").format(column=column, name=sql.Identifier(name))
        elif cast is not None and cast[0] == "text":
            # format's %s is the type's output function, what psql shows: ::text would differ for
            # a few types (it cuts char(n)'s padding, adds inet's /32). num_nulls: a composite of
            # NULL fields IS NULL, yet it is a value ("(,)").
            column = sql.SQL(
                "CASE WHEN num_nulls({column}) = 1 THEN NULL ELSE format('%%s', {column}) END AS {name}"
            ).format(column=column, name=sql.Identifier(name))
        elif cast is not None:
            column = sql.SQL("{column}::{type} AS {name}").format(
                column=column, type=sql.SQL(cast[0]), name=sql.Identifier(name)
            )
        items.append(column)
    return sql.SQL(", ").join(items)


def real_as_printed(value: Any) -> Any:
    """A ``real`` (float4) value as the double nearest the text PostgreSQL prints for it (its
    shortest form that reads back as the same float4), whose ``repr`` is that text: psycopg
    loads the float4 itself, widened (0.1 arrives as 0.10000000149011612). A ``double
    precision`` value needs nothing: its ``repr`` is PostgreSQL's text already."""
    if value.__class__ is not float or not math.isfinite(value):
        return value
    single = _float4(value)
    for digits in range(1, 10):  # 9 significant digits always round-trip a float4
        text = f"{value:.{digits}g}"
        if _float4(float(text)) == single:
            return float(text)
    return value


def _float4(value: float) -> float | None:
    """``value`` rounded to a float4, or None past its range: a short text of a value near
    FLT_MAX rounds above it (``3.403e+38``), which is no float4 (struct refuses to pack it)."""
    try:
        single: float = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return None
    return single


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` since 1970-01-01 in the proleptic Gregorian calendar, any
    year (astronomical: 0 is 1 BC); Howard Hinnant's civil_from_days."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    year = year_of_era + era * 400
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return year + (month <= 2), month, day


def _day_text(days_since_pg_epoch: int) -> str:
    year, month, day = _civil(days_since_pg_epoch + _PG_EPOCH_DAYS)
    if year <= 0:
        return f"{1 - year:04d}-{month:02d}-{day:02d} BC"
    return f"{year:04d}-{month:02d}-{day:02d}"


def date_text(days: int) -> str:
    """A binary ``date`` Python cannot hold, as PostgreSQL writes it."""
    if days == _DATE_INFINITY:
        return "infinity"
    if days == _DATE_MINUS_INFINITY:
        return "-infinity"
    return _day_text(days)


def timestamp_text(micros: int) -> str:
    """A binary ``timestamp`` (or ``timestamptz`` in UTC) Python cannot hold, as PostgreSQL
    writes it without its offset (the file's times are UTC)."""
    if micros == _TIMESTAMP_INFINITY:
        return "infinity"
    if micros == _TIMESTAMP_MINUS_INFINITY:
        return "-infinity"
    days, in_day = divmod(micros, _MICROS_PER_DAY)
    seconds, fraction = divmod(in_day, 1_000_000)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if fraction:
        clock += f".{fraction:06d}".rstrip("0")
    text = _day_text(days)
    return f"{text[:-3]} {clock} BC" if text.endswith(" BC") else f"{text} {clock}"


def register_loaders(conn: Any) -> None:
    """On ``conn``: dates and timestamps that Python cannot hold load as PostgreSQL's text
    instead of failing the export; ``timestamptz`` loads as a naive UTC datetime (the session
    is in UTC), what a spreadsheet cell holds."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class DateOrText(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> date | str:
            days = _INT4(data)[0]
            try:
                return date.fromordinal(_PG_EPOCH_ORDINAL + days)
            except (ValueError, OverflowError):  # out of 1..9999, or an infinity
                return date_text(days)

    class TimestampOrText(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> datetime | str:
            micros = _INT8(data)[0]
            try:
                return _PG_EPOCH + timedelta(0, 0, micros)
            except OverflowError:
                return timestamp_text(micros)

    conn.adapters.register_loader("date", DateOrText)
    conn.adapters.register_loader("timestamp", TimestampOrText)
    conn.adapters.register_loader("timestamptz", TimestampOrText)
