"""PostgreSQL's array text (``{vip,q3}``, ``{{1,2},{3,4}}``, ``[0:1]={a,b}``) read back as lists,
for the formats that hold lists (JSON Lines and Parquet); the others write the text itself.

The text is the server's own output (array_out), so it is well formed: elements separated by
commas, nested arrays in braces, ``NULL`` unquoted for a null, and an element that is empty,
spells NULL, or holds a brace, comma, quote, backslash or white space in double quotes with
``"`` and ``\\`` escaped by a backslash. A lower bound other than 1 is written before the value
(``[0:1]=``): lists have none, so it is dropped. Each element's text becomes a value of the
array's element kind as a scalar column of that kind holds it (an integer, a float, a decimal,
a date, a naive UTC datetime, a boolean); a date or time Python cannot hold (``infinity``, BC)
stays its text, as in scalar columns.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from exports.core.export_type import ColumnKind

# A nested array's value: element values and nested arrays.
ArrayValue = list[Any]


class ArrayTextInvalid(ValueError):
    """A value of an array column that is not PostgreSQL's array text."""


def parse_array(text: str) -> ArrayValue:
    """The elements of ``text`` (PostgreSQL's array output) as nested lists of their texts, None
    for NULL. Raises :class:`ArrayTextInvalid` for any other text."""
    start = text.index("=") + 1 if text.startswith("[") and "=" in text else 0
    try:
        items, end = _array(text, start)
    except IndexError:
        raise ArrayTextInvalid(f"not an array: {text[:40]!r}") from None
    if end != len(text):
        raise ArrayTextInvalid(f"not an array: {text[:40]!r}")
    return items


def _array(text: str, start: int) -> tuple[ArrayValue, int]:
    """The array opening at ``text[start]`` and the position after its closing brace."""
    if text[start] != "{":
        raise ArrayTextInvalid(f"not an array: {text[:40]!r}")
    close = text.find("}", start)
    inner = text[start + 1 : close]
    if close > 0 and '"' not in inner and "{" not in inner:  # flat, nothing quoted: most arrays
        return ([] if not inner else [None if item == "NULL" else item for item in inner.split(",")]), close + 1
    items: ArrayValue = []
    position = start + 1
    if text[position] == "}":
        return items, position + 1
    while True:
        char = text[position]
        if char == "{":
            nested, position = _array(text, position)
            items.append(nested)
        elif char == '"':
            chars, position = [], position + 1
            while text[position] != '"':
                if text[position] == "\\":
                    position += 1
                chars.append(text[position])
                position += 1
            items.append("".join(chars))
            position += 1
        else:
            end = position
            while text[end] not in ",}":
                end += 1
            token = text[position:end]
            items.append(None if token == "NULL" else token)
            position = end
        if text[position] == "}":
            return items, position + 1
        if text[position] != ",":
            raise ArrayTextInvalid(f"not an array: {text[:40]!r}")
        position += 1


def _date(text: str) -> date | str:
    try:
        return date.fromisoformat(text)
    except ValueError:  # infinity, BC, a year past 9999
        return text


def _datetime(text: str) -> datetime | str:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    # timestamptz elements carry the session's offset (UTC): naive UTC, as scalar columns.
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


_ELEMENTS: dict[ColumnKind, Callable[[str], Any]] = {
    ColumnKind.INTEGER: int,
    ColumnKind.FLOAT: float,  # "NaN", "Infinity" and "-Infinity" too
    ColumnKind.DECIMAL: Decimal,
    ColumnKind.BOOLEAN: lambda text: text == "t",
    ColumnKind.DATE: _date,
    ColumnKind.DATETIME: _datetime,
}


def typed_array(text: str, kind: ColumnKind) -> ArrayValue:
    """The array ``text`` as nested lists of values of ``kind`` (text for any other kind)."""
    convert = _ELEMENTS.get(kind)
    items = parse_array(text)
    return items if convert is None else _converted(items, convert)


def _converted(items: ArrayValue, convert: Callable[[str], Any]) -> ArrayValue:
    return [
        None if item is None else _converted(item, convert) if isinstance(item, list) else convert(item)
        for item in items
    ]
