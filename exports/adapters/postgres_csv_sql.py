"""The select list that makes ``COPY ... TO STDOUT (FORMAT csv)`` write the bytes of our CSV writer.

:mod:`exports.writers.csv_writer` writes what psycopg loads (:mod:`exports.adapters.postgres_values`)
as ``csv.writer`` does. COPY writes PostgreSQL's text output. Per type, the expression below turns
the one into the other, in the server:

- integers, ``numeric`` (``money`` as ``numeric``), ``uuid``: the output functions already agree;
- ``float8``: Python writes ``Decimal(repr(x))`` without exponent, and an integral float below
  1e16 with ``.0`` (``repr(3.0)``); PostgreSQL's shortest text read as ``numeric`` gives the same
  digits without exponent, ``.0`` is added where ``repr`` has one, ``-0.0`` kept;
- ``bool``: ``True`` / ``False`` (``str(bool)``);
- ``date``: ISO (the session's ``DateStyle``); ``timestamp`` and ``timestamptz`` (UTC) as
  ``str(datetime)``: microseconds as six digits when there are any, none otherwise; the dates
  and times Python cannot hold as PostgreSQL writes them (text, so guarded); ``timestamptz`` in
  another zone as :mod:`exports.writers.zones` writes it (wall time there and the offset);
- text types: as they are (``char(n)`` with its padding), the formula guard's apostrophe when
  on; every other type as its output function's text, as ``projection`` reads it.

An empty text is written as NULL: ``csv.writer`` writes ``""`` as nothing, COPY as ``""``.

Not made by COPY (:func:`copy_supported`, the worker writes these in Python): a one-column file
(``csv.writer`` writes a lone empty field as ``""``, COPY a NULL as nothing and a lone ``\\.``
quoted), and a ``real`` (float4) column: PostgreSQL's shortest ``real`` text and ours (the fewest
``%g`` digits that read back as the same ``real``) differ on values halfway between two
``real`` neighbours (``115817776`` is ``1.15817776e+08`` there, ``115817780`` here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from exports.adapters.postgres_values import CAST_TYPES, NATIVE_KINDS
from exports.domain.zones import UTC_ZONE, is_utc
from exports.ports import INSTANT_TYPE

if TYPE_CHECKING:
    from psycopg import sql

# Text starting with one of these gets a leading apostrophe (exports.writers.cells.FORMULA_TRIGGERS).
_TRIGGERS_SQL = "('=', '+', '-', '@', E'\\t', E'\\r')"
_INTEGERS = frozenset({"int2", "int4", "int8", "oid", "numeric", "uuid"})
_TEXTS = frozenset({"text", "varchar", "name"})
_TIMESTAMPS = frozenset({"timestamp", "timestamptz"})
# repr() writes an integral float below this without exponent and with ".0".
_REPR_PLAIN_BELOW = "1e16"


def copy_supported(type_names: Sequence[str]) -> bool:
    """Whether COPY writes a file of columns of ``type_names`` byte for byte as the CSV writer
    does: a file of two or more columns and no ``real`` (float4) column."""
    return len(type_names) >= 2 and "float4" not in type_names


def csv_select(
    names: Sequence[str], type_names: Sequence[str], guard: bool, timezone: str = UTC_ZONE
) -> sql.Composable:
    """The select list over the subquery ``exported`` whose COPY CSV text is the CSV writer's
    for the columns ``names`` of PostgreSQL types ``type_names``, with or without the guard,
    ``timestamptz`` columns in ``timezone`` (a name exports.domain.zones accepted)."""
    from psycopg import sql

    items = [
        sql.SQL("{value} AS {name}").format(value=_value(name, type_name, guard, timezone), name=sql.Identifier(name))
        for name, type_name in zip(names, type_names, strict=True)
    ]
    return sql.SQL(", ").join(items)


def _value(name: str, type_name: str, guard: bool, timezone: str) -> sql.Composable:
    from psycopg import sql

    column = sql.SQL("exported.{name}").format(name=sql.Identifier(name))
    if type_name == INSTANT_TYPE and not is_utc(timezone):
        return _zoned(column, timezone, guard)
    if type_name in _INTEGERS:
        return column
    if type_name in CAST_TYPES:
        return sql.SQL("{column}::{type}").format(column=column, type=sql.SQL(CAST_TYPES[type_name][0]))
    if type_name in _NUMBERS:
        return _NUMBERS[type_name](column)
    if type_name in _TIMESTAMPS:
        return _timestamp(column, type_name, guard)
    if type_name in _TEXTS:
        return _text(column, guard)
    if type_name == "date":
        return _text(sql.SQL("{c}::text").format(c=column), guard)
    if type_name in NATIVE_KINDS and type_name != "bpchar":
        raise ValueError(f"no CSV text for PostgreSQL type {type_name!r}")
    # char(n) keeps its padding only through its output function (a cast to text cuts it);
    # num_nulls: a composite of NULL fields IS NULL, yet it is a value ("(,)").
    text = sql.SQL("CASE WHEN num_nulls({c}) = 1 THEN NULL ELSE format('%%s', {c}) END").format(c=column)
    return _text(text, guard)


def _float8(column: sql.Composable) -> sql.Composable:
    from psycopg import sql

    return sql.SQL(
        "CASE WHEN {c} = 0 THEN CASE WHEN {c}::text = '-0' THEN '-0.0' ELSE '0.0' END "
        "WHEN {c} = trunc({c}) AND abs({c}) < {plain} THEN {c}::text::numeric::text || '.0' "
        "ELSE {c}::text::numeric::text END"
    ).format(c=column, plain=sql.SQL(_REPR_PLAIN_BELOW))


def _boolean(column: sql.Composable) -> sql.Composable:
    from psycopg import sql

    return sql.SQL("CASE WHEN {c} THEN 'True' WHEN NOT {c} THEN 'False' END").format(c=column)


_NUMBERS: dict[str, Callable[[sql.Composable], sql.Composable]] = {
    "float8": _float8,
    "bool": _boolean,
}


def _timestamp(column: sql.Composable, type_name: str, guard: bool) -> sql.Composable:
    """str() of the naive UTC datetime psycopg loads, or PostgreSQL's text (no offset) of one
    Python cannot hold (years 1 to 9999 only), which the file holds as text."""
    from psycopg import sql

    wall = column if type_name == "timestamp" else sql.SQL("({c} AT TIME ZONE 'UTC')").format(c=column)
    return sql.SQL(
        "CASE WHEN {t} >= '0001-01-01' AND {t} < '10000-01-01' "
        "THEN replace(to_char({t}, 'YYYY-MM-DD HH24:MI:SS.US'), '.000000', '') ELSE {text} END"
    ).format(t=wall, text=_text(sql.SQL("{t}::text").format(t=wall), guard))


def _zoned(column: sql.Composable, timezone: str, guard: bool) -> sql.Composable:
    """exports.writers.zones.csv_text of the instant in ``timezone``: its wall time there as
    ``str(datetime)`` writes it, then the offset at that instant as ``datetime.isoformat`` does
    (``+05:45``; seconds only when there are, ``+00:53:28``). A value that is not in years 1 to
    9999 both in UTC and in the zone is written as in UTC, as the Python path does."""
    from psycopg import sql

    local = sql.SQL("({c} AT TIME ZONE {zone})").format(c=column, zone=sql.Literal(timezone))
    utc = sql.SQL("({c} AT TIME ZONE 'UTC')").format(c=column)
    seconds = sql.SQL("abs(extract(epoch FROM {local} - {utc})::int)").format(local=local, utc=utc)
    offset = sql.SQL(
        "CASE WHEN {local} < {utc} THEN '-' ELSE '+' END || to_char({s} / 3600, 'FM00') || ':' "
        "|| to_char(mod({s} / 60, 60), 'FM00') "
        "|| CASE WHEN mod({s}, 60) = 0 THEN '' ELSE ':' || to_char(mod({s}, 60), 'FM00') END"
    ).format(local=local, utc=utc, s=seconds)
    return sql.SQL(
        "CASE WHEN {utc} >= '0001-01-01' AND {utc} < '10000-01-01' AND {local} >= '0001-01-01' "
        "AND {local} < '10000-01-01' "
        "THEN replace(to_char({local}, 'YYYY-MM-DD HH24:MI:SS.US'), '.000000', '') || {offset} ELSE {in_utc} END"
    ).format(utc=utc, local=local, offset=offset, in_utc=_timestamp(column, INSTANT_TYPE, guard))


def _text(value: sql.Composable, guard: bool) -> sql.Composable:
    """A text value as the CSV writer writes a ``str``: guarded when ``guard``, empty as NULL."""
    from psycopg import sql

    if guard:
        value = sql.SQL("CASE WHEN left({v}, 1) IN {triggers} THEN '''' || {v} ELSE {v} END").format(
            v=value, triggers=sql.SQL(_TRIGGERS_SQL)
        )
    return sql.SQL("NULLIF({v}, '')").format(v=value)
