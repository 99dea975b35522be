"""The select list that makes ``COPY ... TO STDOUT (FORMAT csv)`` write the bytes of our CSV writer.

:mod:`exports.running.writers.csv_writer` writes what psycopg loads (:mod:`exports.sources.postgres.values`)
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
  another zone as :mod:`exports.running.writers.zones` writes it (wall time there and the offset);
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

from exports.core.csv_dialect import FORMULA_TRIGGERS
from exports.core.zones import UTC_ZONE, is_utc
from exports.sources.postgres.values import CAST_TYPES, NATIVE_KINDS
from exports.sources.sql.ports import INSTANT_TYPE

if TYPE_CHECKING:
    from psycopg import sql

# Text starting with one of these gets a leading apostrophe: their code points, and the first
# character above them all (text from there on needs no look at its first character).
_TRIGGER_CODES = ", ".join(str(ord(trigger)) for trigger in FORMULA_TRIGGERS)
_ABOVE_TRIGGERS = chr(max(ord(trigger) for trigger in FORMULA_TRIGGERS) + 1)
_INTEGERS = frozenset({"int2", "int4", "int8", "oid", "numeric", "uuid"})
_TEXTS = frozenset({"text", "varchar", "name"})
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
    ``timestamptz`` columns in ``timezone`` (a name exports.core.zones accepted)."""
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
    if type_name in _WRITTEN_BY:
        return _WRITTEN_BY[type_name](column, guard)
    if type_name in NATIVE_KINDS:
        raise ValueError(f"no CSV text for PostgreSQL type {type_name!r}")
    # The output function's text; num_nulls: a composite of NULL fields IS NULL, yet it is a
    # value ("(,)").
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


def _timestamp(column: sql.Composable, type_name: str, guard: bool) -> sql.Composable:
    """str() of the naive UTC datetime psycopg loads, or PostgreSQL's text (no offset) of one
    Python cannot hold (years 1 to 9999 only), which the file holds as text.

    In those years PostgreSQL's ISO text is str()'s but for a fraction's trailing zeros, which
    it drops: a value with a fraction is padded to six digits (26 characters), one without is
    its text as it is (both cheaper than ``to_char``). The column itself is compared, not its
    UTC wall time: the bounds (with their offset, for an instant) and the cast to whole seconds
    (``::timestamp(0)`` rounds the microseconds, equal only when there are none; an offset has
    no fraction of a second) are integer work, and the wall time is computed once, for its
    text (docs/performance.md, "Fourth round: PostgreSQL to CSV")."""
    from psycopg import sql

    offset = "" if type_name == "timestamp" else "+00"
    wall = column if type_name == "timestamp" else sql.SQL("({c} AT TIME ZONE 'UTC')").format(c=column)
    return sql.SQL(
        "CASE WHEN {c} >= {first} AND {c} < {past} "
        "THEN CASE WHEN {c}::{type}(0) = {c} THEN {t}::text ELSE rpad({t}::text, 26, '0') END "
        "ELSE {text} END"
    ).format(
        c=column,
        first=sql.Literal(f"0001-01-01 00:00:00{offset}"),
        past=sql.Literal(f"10000-01-01 00:00:00{offset}"),
        type=sql.SQL(type_name),
        t=wall,
        text=_text(sql.SQL("{t}::text").format(t=wall), guard),
    )


def _zoned(column: sql.Composable, timezone: str, guard: bool) -> sql.Composable:
    """exports.running.writers.zones.csv_text of the instant in ``timezone``: its wall time there as
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


def _text_column(column: sql.Composable, guard: bool) -> sql.Composable:
    """A text column as :func:`_text` writes a text, cheaper: a text whose first character is
    above every trigger (compared byte by byte, ``COLLATE "C"``: most text) as it is, the rest
    looked at by its first code point (``ascii``). ``column`` is read several times: a column,
    not an expression to compute each time."""
    from psycopg import sql

    if not guard:
        return sql.SQL("NULLIF({c}, '')").format(c=column)
    return sql.SQL(
        "CASE WHEN {c} COLLATE \"C\" >= {above} THEN {c} WHEN ascii({c}) IN ({codes}) THEN '''' || {c} "
        "ELSE NULLIF({c}, '') END"
    ).format(c=column, above=sql.Literal(_ABOVE_TRIGGERS), codes=sql.SQL(_TRIGGER_CODES))


def _padded(column: sql.Composable, guard: bool) -> sql.Composable:
    """A ``char(n)`` column with its padding, which only its output function keeps (a cast to
    text cuts it): the column itself, guarded as :func:`_text_column` guards a text, empty as
    NULL (``octet_length`` counts the padding; comparisons and ``char_length`` ignore it)."""
    from psycopg import sql

    if not guard:
        return sql.SQL("CASE WHEN octet_length({c}) > 0 THEN {c} END").format(c=column)
    # concat() writes the value with the output function; back to bpchar without a length, the
    # padding stays as it is.
    return sql.SQL(
        'CASE WHEN {c} COLLATE "C" >= {above} THEN {c} WHEN octet_length({c}) = 0 THEN NULL '
        "WHEN ascii({c}::text) IN ({codes}) THEN ('''' || concat({c}))::bpchar ELSE {c} END"
    ).format(c=column, above=sql.Literal(_ABOVE_TRIGGERS), codes=sql.SQL(_TRIGGER_CODES))


def _date(column: sql.Composable, guard: bool) -> sql.Composable:
    """A date as its ISO text (the session's ``DateStyle``), which is never empty and starts
    with a trigger only as ``-infinity`` (a BC date ends with `` BC``)."""
    from psycopg import sql

    if not guard:
        return column
    return sql.SQL("CASE WHEN {c} = '-infinity' THEN '''-infinity' ELSE {c}::text END").format(c=column)


def _text(value: sql.Composable, guard: bool) -> sql.Composable:
    """A text value as the CSV writer writes a ``str``: guarded when ``guard``, empty as NULL."""
    from psycopg import sql

    if guard:
        value = sql.SQL("CASE WHEN ascii({v}) IN ({codes}) THEN '''' || {v} ELSE {v} END").format(
            v=value, codes=sql.SQL(_TRIGGER_CODES)
        )
    return sql.SQL("NULLIF({v}, '')").format(v=value)


# The expression of each type written by a function of its own (column, guard).
_WRITTEN_BY: dict[str, Callable[[sql.Composable, bool], sql.Composable]] = {
    "float8": lambda column, _: _float8(column),
    "bool": lambda column, _: _boolean(column),
    "timestamp": lambda column, guard: _timestamp(column, "timestamp", guard),
    "timestamptz": lambda column, guard: _timestamp(column, "timestamptz", guard),
    "date": _date,
    "bpchar": _padded,
    **dict.fromkeys(_TEXTS, _text_column),
}
