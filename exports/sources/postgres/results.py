"""The columns of a declared query's result: their PostgreSQL types and how the files type them.

A result's columns are known before any row is read (``LIMIT 0``, :func:`described`); each
becomes a :class:`~exports.sources.sql.ports.ResultColumn` (:func:`result_columns`), and :func:`converter`
makes the few values psycopg does not load as files hold them (``real``, ``uuid``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from exports.core.export_type import ColumnKind
from exports.sources.postgres.values import NATIVE_KINDS, array_element_kind, read_as, real_as_printed
from exports.sources.sql.ports import ResultColumn, SqlRead

if TYPE_CHECKING:
    import psycopg


def described(conn: psycopg.Connection[Any], read: SqlRead) -> list[Any]:
    """The result's columns (``LIMIT 0``, prepared: one statement, the extended protocol)."""
    from psycopg import sql

    statement = sql.SQL("SELECT * FROM ({query}) AS exported LIMIT 0").format(query=sql.SQL(read.query))
    return list(conn.execute(statement, read.params, prepare=True).description or [])


def type_name(conn: psycopg.Connection[Any], column: Any) -> str:
    """PostgreSQL's name of the column's type; an array's is its element's with ``[]`` (psycopg
    files an array's oid under its element type)."""
    info = conn.adapters.types.get(column.type_code)
    if info is None:
        return "unknown"
    return f"{info.name}[]" if column.type_code == info.array_oid else info.name


def result_columns(conn: psycopg.Connection[Any], description: Sequence[Any]) -> list[ResultColumn]:
    """The columns as the file types them (postgres_values.read_as), with PostgreSQL's type and,
    for an array, its element's kind (postgres_values.array_element_kind)."""
    # Arrays of types psycopg does not know (an enum's, a composite's): the catalog says.
    unknown = [column.type_code for column in description if conn.adapters.types.get(column.type_code) is None]
    unknown_arrays = _array_oids(conn, unknown) if unknown else set()
    columns = []
    for column in description:
        name = type_name(conn, column)
        cast = read_as(name)
        kind = NATIVE_KINDS[name] if cast is None else cast[1]
        # psycopg reads a numeric's precision and scale from its type modifier (None: unconstrained).
        precision, scale = (column.precision, column.scale) if name == "numeric" else (None, None)
        array_of = None
        if name.endswith("[]"):
            array_of = array_element_kind(name.removesuffix("[]"))
        elif column.type_code in unknown_arrays:  # an enum's or a composite's: its elements' text
            array_of = ColumnKind.STRING
        columns.append(ResultColumn(column.name, kind, name, precision, scale, array_of))
    return columns


def _array_oids(conn: psycopg.Connection[Any], oids: Sequence[int]) -> set[int]:
    """Which of the type ``oids`` are array types."""
    rows = conn.execute("SELECT oid::bigint FROM pg_type WHERE oid = ANY(%s) AND typcategory = 'A'", [list(oids)])
    return {int(row[0]) for row in rows.fetchall()}


def converter(columns: Sequence[ResultColumn]) -> Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    """Rows as files hold them: ``real`` values as the floats PostgreSQL prints, UUIDs as text.
    (Timestamps load as naive UTC and the other types arrive as text: see postgres_values.)"""
    changes: list[tuple[int, Callable[[Any], Any]]] = []
    for position, column in enumerate(columns):
        if column.type_name == "float4":
            changes.append((position, real_as_printed))
        elif column.type_name == "uuid":
            changes.append((position, str))
    if not changes:
        return lambda rows: rows

    def convert(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        converted = []
        for row in rows:
            values = list(row)
            for position, change in changes:
                value = values[position]
                if value is not None:
                    values[position] = change(value)
            converted.append(tuple(values))
        return converted

    return convert
