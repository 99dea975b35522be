"""MySQL's values as the files hold them, and the result's columns typed for the files.

PyMySQL reads the text protocol: every value arrives as the server's text, and these decoders
decide what becomes of it (docs/export-your-own-data.md, "MySQL values"):

- ``DECIMAL`` as a :class:`~decimal.Decimal` of every digit (65 of them), with its precision and
  scale; ``BIGINT UNSIGNED`` as a decimal of 20 digits (no 64-bit signed integer holds 2⁶⁴-1);
  the other integers (``TINYINT(1)``, which ``BOOLEAN`` is an alias of, included) as integers;
  ``YEAR`` as an integer; ``FLOAT`` and ``DOUBLE`` as the double the server's text names.
- ``DATETIME`` as a wall time, ``TIMESTAMP`` as an instant (the session is pinned to UTC, so
  the value is UTC; reported as :data:`~exports.sources.sql.ports.INSTANT_TYPE`, an export in another zone
  converts it); ``DATE`` as a date. A zero or partly zero date (``0000-00-00``, ``2025-00-10``),
  which no calendar holds, is NULL: the decision documented for every format.
- ``TIME`` (a duration: negative, or past 24 h, up to ±838:59:59) as MySQL's own text.
- ``BIT(n)`` as its n binary digits (``0101``), as PostgreSQL's ``bit`` is exported.
- Binary strings (``BINARY``, ``VARBINARY``, ``BLOB``, spatial values) as ``0x`` and upper-case
  hex, as the ``mysql`` client's ``--binary-as-hex`` prints them.
- ``ENUM`` and ``SET`` (``a,b``) as their text; ``JSON`` as its text, of kind ``json`` when the
  server says JSON (MySQL 8; MariaDB's JSON is a LONGTEXT alias, a string unless declared).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Final

from exports.core.export_type import ColumnKind
from exports.sources.sql.ports import INSTANT_TYPE, ResultColumn

# MySQL's column types (the protocol's MYSQL_TYPE_*), by number.
_DECIMAL, _TINY, _SHORT, _LONG, _FLOAT, _DOUBLE, _NULL, _TIMESTAMP, _LONGLONG, _INT24 = range(10)
_DATE, _TIME, _DATETIME, _YEAR, _NEWDATE, _VARCHAR, _BIT = range(10, 17)
_JSON, _NEWDECIMAL, _ENUM, _SET, _TINY_BLOB, _MEDIUM_BLOB, _LONG_BLOB, _BLOB = range(245, 253)
_VAR_STRING, _STRING, _GEOMETRY = 253, 254, 255
# The character set number of binary strings.
BINARY_CHARSET: Final = 63
# Column flags.
_UNSIGNED_FLAG: Final = 32
_ENUM_FLAG: Final = 256
_SET_FLAG: Final = 2048

_INTEGERS: Final = {_TINY: "tinyint", _SHORT: "smallint", _INT24: "mediumint", _LONG: "int", _LONGLONG: "bigint"}
_STRINGS: Final = frozenset({_VARCHAR, _VAR_STRING, _STRING, _TINY_BLOB, _MEDIUM_BLOB, _LONG_BLOB, _BLOB})


def _date(text: str | bytes) -> datetime.date | None:
    """A DATE's text as a date; a zero date (or one with a zero month or day) as None."""
    value = text.decode("ascii") if isinstance(text, bytes) else text
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        return None


def _datetime(text: str | bytes) -> datetime.datetime | None:
    """A DATETIME's or TIMESTAMP's text as a naive datetime (microseconds kept); zero as None."""
    value = text.decode("ascii") if isinstance(text, bytes) else text
    try:
        return datetime.datetime.fromisoformat(value)
    except ValueError:
        return None


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


def decoders() -> dict[int, Callable[[Any], Any]]:
    """PyMySQL's ``conv``: how each type's text becomes a value (the rest are PyMySQL's own:
    integers as int, decimals as Decimal, floats as float, strings as str, binary as bytes)."""
    import pymysql.converters

    conv = dict(pymysql.converters.conversions)
    conv.update({_DATE: _date, _NEWDATE: _date, _DATETIME: _datetime, _TIMESTAMP: _datetime, _TIME: _text})
    return conv


def result_columns(fields: Sequence[Any]) -> list[ResultColumn]:
    """The columns of a result as the files type them, from PyMySQL's field descriptors."""
    return [_column(field) for field in fields]


def _column(field: Any) -> ResultColumn:
    code, flags, name = field.type_code, field.flags, field.name
    unsigned = bool(flags & _UNSIGNED_FLAG)
    if code in _INTEGERS:
        type_name = _INTEGERS[code] + (" unsigned" if unsigned else "")
        if code == _LONGLONG and unsigned:
            return ResultColumn(name, ColumnKind.DECIMAL, type_name, precision=20, scale=0)
        return ResultColumn(name, ColumnKind.INTEGER, type_name)
    if code in (_NEWDECIMAL, _DECIMAL):
        precision = field.length - (1 if field.scale else 0) - (0 if unsigned else 1)
        return ResultColumn(name, ColumnKind.DECIMAL, "decimal", precision=precision, scale=field.scale)
    simple = {
        _FLOAT: (ColumnKind.FLOAT, "float"),
        _DOUBLE: (ColumnKind.FLOAT, "double"),
        _YEAR: (ColumnKind.INTEGER, "year"),
        _DATE: (ColumnKind.DATE, "date"),
        _NEWDATE: (ColumnKind.DATE, "date"),
        _DATETIME: (ColumnKind.DATETIME, "datetime"),
        _TIMESTAMP: (ColumnKind.DATETIME, INSTANT_TYPE),
        _TIME: (ColumnKind.STRING, "time"),
        _BIT: (ColumnKind.STRING, "bit"),
        _JSON: (ColumnKind.JSON, "json"),
        _GEOMETRY: (ColumnKind.STRING, "geometry"),
        _NULL: (ColumnKind.STRING, "null"),
        _ENUM: (ColumnKind.STRING, "enum"),
        _SET: (ColumnKind.STRING, "set"),
    }
    if code in simple:
        kind, type_name = simple[code]
        return ResultColumn(name, kind, type_name)
    if code in _STRINGS:
        if flags & _ENUM_FLAG:
            return ResultColumn(name, ColumnKind.STRING, "enum")
        if flags & _SET_FLAG:
            return ResultColumn(name, ColumnKind.STRING, "set")
        binary = field.charsetnr == BINARY_CHARSET
        return ResultColumn(name, ColumnKind.STRING, "binary" if binary else "text")
    return ResultColumn(name, ColumnKind.STRING, f"type {code}")


def converter(fields: Sequence[Any]) -> Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    """Rows as files hold them: what PyMySQL's decoders cannot do alone, knowing the column
    (BIT's width, BIGINT UNSIGNED's decimals, binary strings' hex)."""
    changes: list[tuple[int, Callable[[Any], Any]]] = []
    for position, field in enumerate(fields):
        code = field.type_code
        if code == _BIT:
            changes.append((position, _bits(field.length)))
        elif code == _LONGLONG and field.flags & _UNSIGNED_FLAG:
            changes.append((position, Decimal))
        elif code == _GEOMETRY or (code in _STRINGS and field.charsetnr == BINARY_CHARSET):
            changes.append((position, _hex))
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


def _bits(width: int) -> Callable[[bytes], str]:
    def bits(value: bytes) -> str:
        return format(int.from_bytes(value, "big"), f"0{width}b")

    return bits


def _hex(value: bytes | str) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return "0x" + raw.hex().upper()
