"""JSON Lines: one JSON object per row, keys the column names, values typed.

The value rules (docs/export-types.md, "JSON Lines and Parquet") follow the exact-cell rules of
XLSX (:mod:`exports.running.writers.cells`): a number is a JSON number, with the source's own digits,
when an IEEE double (what ``JSON.parse`` and most JSON readers make of a number) holds it;
otherwise, like a bigint past 2**53 or a numeric with more digits than a double keeps, it is a
JSON string of every digit, so no reader rounds it silently. NaN and the infinities are strings
as PostgreSQL spells them. Dates are ISO 8601 strings, times RFC 3339 in UTC (``Z``); a JSON
column's text is nested as JSON, its numbers exactly as the source wrote them; an array column's
text (``{vip,q3}``) is a JSON array, each element by the same rules.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Final

import orjson

from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.array_text import typed_array
from exports.running.writers.byte_sink import ByteStream, ChunkedBytes
from exports.running.writers.cells import MAX_EXACT_INTEGER, exact_double, plain_number

# JSON Lines has no registered media type; this is the one in common use.
CONTENT_TYPE = "application/jsonl; charset=utf-8"
GZIP_CONTENT_TYPE = "application/gzip"

_string = json.JSONEncoder(ensure_ascii=False).encode


class _Digits(str):
    """A JSON number's text exactly as the source wrote it (parsed, never converted)."""


class InvalidJson(ValueError):
    """A JSON column's value is not JSON text (a declared ``kind = "json"`` over other text)."""


def json_value(value: Any) -> str:
    """The JSON text of one typed value (the module's rules)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int | float | Decimal):
        return _number(value)
    if isinstance(value, datetime):
        moment = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return f'"{moment.isoformat()}Z"'
    if isinstance(value, date):
        return f'"{value.isoformat()}"'
    return _string(str(value))


def _number(value: int | float | Decimal) -> str:
    if value.__class__ is float and math.isfinite(value) and abs(value) >= _PLAIN_FLOAT_BELOW:
        # Every digit of 3.4e38 is an integer's text, which readers take for an int: an exponent
        # keeps it a float.
        return repr(value)
    text = plain_number(value)
    return text if exact_double(value) is not None else f'"{text}"'


# A float at least this large is written with an exponent (orjson's threshold too).
_PLAIN_FLOAT_BELOW: Final = 1e16


def nested_json(text: Any) -> str:
    """A JSON column's value nested: its JSON on one line (the ``json`` type keeps the input's
    line breaks), numbers with exactly their digits and objects with every key they have (the
    ``json`` type keeps duplicates); a value that is no JSON text raises :class:`InvalidJson`."""
    if text is None:
        return "null"
    if not isinstance(text, str):
        return json_value(text)
    try:
        parsed = json.loads(
            text, parse_float=_Digits, parse_int=_Digits, parse_constant=_no_constant, object_pairs_hook=_Pairs
        )
    except RecursionError:
        # Nested deeper than the parser's recursion goes: PostgreSQL's json and jsonb are
        # valid JSON already, so only the white space between tokens goes.
        return _BETWEEN_TOKENS.sub(lambda match: match.group(1) or "", text)
    except ValueError as error:
        raise InvalidJson(f"not JSON text: {text[:40]!r}") from error
    return _compact(parsed)


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's members in their order, duplicates kept (a dict would keep the last)."""


class _Raw(str):
    """A piece of JSON text already written (a bracket, a comma, a key)."""


# A JSON string (kept as it is), or white space between tokens (dropped).
_BETWEEN_TOKENS: Final = re.compile(r'("(?:[^"\\]|\\.)*")|\s+')


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _compact(value: Any) -> str:
    """The JSON text of a parsed value, on one line; a loop over a stack rather than recursion,
    so that a document nested hundreds of levels deep takes no Python frame per level."""
    parts: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is _Raw or item.__class__ is _Digits:
            parts.append(str.__str__(item))
        elif isinstance(item, _Pairs):
            stack.append(_Raw("}"))
            for index in range(len(item) - 1, -1, -1):
                key, inner = item[index]
                stack.append(inner)
                stack.append(_Raw(("," if index else "") + _string(key) + ":"))
            stack.append(_Raw("{"))
        elif isinstance(item, list):
            stack.append(_Raw("]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(_Raw(","))
            stack.append(_Raw("["))
        else:
            parts.append(json.dumps(item, ensure_ascii=False))
    return "".join(parts)


# Per kind, a test for the usual value and its text, else json_value: fewer calls per cell on the
# hot path, the same text (tests/unit/running/writers/test_jsonl_writer.py compares them).
def _string_value(value: Any) -> str:
    return _string(value) if value.__class__ is str else json_value(value)


def _integer_value(value: Any) -> str:
    exact = value.__class__ is int and -MAX_EXACT_INTEGER <= value <= MAX_EXACT_INTEGER
    return str(value) if exact else json_value(value)


def _date_value(value: Any) -> str:
    return f'"{value.isoformat()}"' if value.__class__ is date else json_value(value)


def _datetime_value(value: Any) -> str:
    return f'"{value.isoformat()}Z"' if value.__class__ is datetime and value.tzinfo is None else json_value(value)


_ENCODERS: dict[ColumnKind, Callable[[Any], str]] = {
    ColumnKind.STRING: _string_value,
    ColumnKind.INTEGER: _integer_value,
    ColumnKind.DECIMAL: json_value,
    ColumnKind.FLOAT: json_value,
    ColumnKind.DATE: _date_value,
    ColumnKind.DATETIME: _datetime_value,
    ColumnKind.BOOLEAN: json_value,
    ColumnKind.JSON: nested_json,
}


def _array_encoder(kind: ColumnKind) -> Callable[[Any], str]:
    """An array column's values (PostgreSQL's array text) as JSON arrays of values of ``kind``,
    each as a scalar column of that kind writes it; nested arrays nested."""

    def encode(value: Any) -> str:
        if value.__class__ is not str:
            return json_value(value)
        return _json_array(typed_array(value, kind))

    return encode


def _json_array(items: list[Any]) -> str:
    return "[" + ",".join(_json_array(item) if isinstance(item, list) else json_value(item) for item in items) + "]"


def line_encoder(columns: Sequence[Column]) -> Callable[[Row], str]:
    """A function turning a row into its JSON Lines line (with its ``\\n``), a call per value: the
    reference :func:`rows_encoder` gives the same bytes as, and what it falls back to."""
    keys = [_string(column.name) + ":" for column in columns]
    encoders = [
        _ENCODERS[column.kind] if column.array_of is None else _array_encoder(column.array_of) for column in columns
    ]
    pairs = list(zip(keys, encoders, strict=True))

    def encode(row: Row) -> str:
        # strict: a row of the wrong length raises ValueError.
        values = zip(pairs, row, strict=True)
        return "{" + ",".join(key + encode_value(value) for (key, encode_value), value in values) + "}\n"

    return encode


# orjson writes a value of these classes, so tested, exactly as json_value does (compared over
# every code point, 800,000 floats and 200,000 datetimes; tests/unit/running/writers/test_jsonl_writer.py): text
# escaped as json's ensure_ascii=False, a naive datetime as UTC with "Z" (these options), a date
# as ISO 8601, an integer within 2**53, and a finite float from 1e-5 to 1e16 (outside, orjson
# writes an exponent where json_value writes every digit). Every other value is a Fragment of
# json_value's text; a Decimal of at most 15 characters in plain notation is its own text (15
# digits at most, which a double holds exactly: json_value's number).
_OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE
_PLAIN_FLOAT = "(1e-05 <= {c} < 1e16 or -1e16 < {c} <= -1e-05 or {c} == 0.0)"
_FAST_PATHS: dict[ColumnKind, str] = {
    ColumnKind.STRING: "({c} if {c}.__class__ is str or {c} is None else _slow({c}))",
    ColumnKind.INTEGER: "({c} if {c}.__class__ is int and -_MAX <= {c} <= _MAX or {c} is None else _slow({c}))",
    ColumnKind.FLOAT: f"({{c}} if {{c}}.__class__ is float and {_PLAIN_FLOAT} or {{c}} is None else _slow({{c}}))",
    ColumnKind.DECIMAL: "(_Fragment(_t) if {c}.__class__ is Decimal and len(_t := str({c})) <= 15 and 'E' not in _t"
    f" and _t[-1] <= '9' else {{c}} if {{c}}.__class__ is float and {_PLAIN_FLOAT} or {{c}} is None"
    " else _slow({c}))",
    ColumnKind.DATE: "({c} if {c}.__class__ is date or {c} is None else _slow({c}))",
    ColumnKind.DATETIME: "({c} if {c}.__class__ is datetime and {c}.tzinfo is None or {c} is None else _slow({c}))",
    ColumnKind.BOOLEAN: "({c} if {c} is True or {c} is False or {c} is None else _slow({c}))",
    ColumnKind.JSON: "(None if {c} is None else _Fragment(_nested({c})))",
}
_ARRAY_PATH = "(None if {c} is None else _Fragment({array}({c})))"


def _slow(value: Any) -> orjson.Fragment:
    return orjson.Fragment(json_value(value))


def rows_encoder(columns: Sequence[Column]) -> Callable[[Iterable[Row]], list[bytes]]:
    """A function turning rows into their lines as UTF-8 (each with its ``\\n``), the bytes of
    :func:`line_encoder`: per row a dict of the values orjson writes as our rules do, generated
    with one inline test per column and no Python call on the usual values. A row of the wrong
    length raises ``ValueError``."""
    reference = line_encoder(columns)
    if len({column.name for column in columns}) < len(columns):
        # A dict keeps one of two equal keys; the reference writes both.
        return lambda rows: [reference(row).encode() for row in rows]
    names = [f"c{index}" for index in range(len(columns))]
    namespace: dict[str, Any] = {
        "_dumps": orjson.dumps,
        "_OPTIONS": _OPTIONS,
        "_Fragment": orjson.Fragment,
        "_slow": _slow,
        "_nested": nested_json,
        "_MAX": MAX_EXACT_INTEGER,
        "Decimal": Decimal,
        "date": date,
        "datetime": datetime,
    }
    values = []
    for index, (name, column) in enumerate(zip(names, columns, strict=True)):
        namespace[f"_k{index}"] = column.name
        if column.array_of is None:
            value = _FAST_PATHS[column.kind].format(c=name)
        else:
            namespace[f"_a{index}"] = _array_encoder(column.array_of)
            value = _ARRAY_PATH.format(c=name, array=f"_a{index}")
        values.append(f"_k{index}: {value}")
    source = (
        "def encode_rows(rows):\n"
        f"    return [_dumps({{{', '.join(values)}}}, None, _OPTIONS) for ({', '.join(names)},) in rows]\n"
    )
    exec(compile(source, "<jsonl row encoder>", "exec"), namespace)  # fixed templates, no input in the code
    fast: Callable[[Sequence[Row]], list[bytes]] = namespace["encode_rows"]

    def encode_rows(rows: Iterable[Row]) -> list[bytes]:
        page = rows if isinstance(rows, Sequence) else list(rows)
        try:
            return fast(page)
        except orjson.JSONEncodeError:
            # Text orjson refuses (a lone surrogate): the page through the reference, which
            # fails on it as the UTF-8 encoding always did.
            return [reference(row).encode() for row in page]

    return encode_rows


class JsonlStream:
    """JSON Lines into a binary stream, rows at a time (the interface of
    :class:`exports.running.writers.csv_writer.CsvStream`, so a long export continues the same way)."""

    def __init__(self, columns: Sequence[Column], out: ByteStream) -> None:
        self._out = ChunkedBytes(out)
        self._encode_rows = rows_encoder(columns)

    def write_rows(self, rows: Iterable[Row]) -> None:
        """Write ``rows``, a line each."""
        self._out.write(b"".join(self._encode_rows(rows)))

    def flush(self) -> None:
        """Push every row written so far into the byte stream."""
        self._out.flush()

    def detach(self) -> None:
        """Flush, then let go of the byte stream without closing it."""
        self.flush()


def write_jsonl(columns: Sequence[Column], rows: Iterable[Row], out: ByteStream) -> int:
    """Stream ``rows`` as JSON Lines into ``out``; returns the number of rows."""
    stream = JsonlStream(columns, out)
    count = 0
    try:
        for row in rows:
            stream.write_rows((row,))
            count += 1
        stream.flush()
    finally:
        stream.detach()
    return count
