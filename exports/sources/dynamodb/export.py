"""An export type declared over the user's own DynamoDB table or index."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Unpack

from boto3.dynamodb.types import Binary

from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import SOURCE_PAGE_ROWS, Column, ColumnKind, Cursor, CursorInvalid, Page, Row
from exports.declared.common import DeclaredExport, DeclaredParts
from exports.declared.parameters import DeclaredFilters
from exports.declared.templates import render
from exports.sources.dynamodb.model import DAY_PLACEHOLDER, DynamoQueryDecl
from exports.sources.dynamodb.ports import ItemQuery, ItemsReader


class DeclaredDynamoExport(DeclaredExport):
    """Items of one partition (or one partition per day of a date range), optionally within a
    sort-key range and filtered on attributes; columns map attributes to typed cells. The
    cursor is the partition being read and DynamoDB's own continuation key, so a long CSV
    export resumes without reading anything twice. ``page_rows``: items per query page."""

    def __init__(
        self,
        *,
        reader: ItemsReader,
        table: str,
        query: DynamoQueryDecl,
        attributes: dict[str, str],
        page_rows: int = SOURCE_PAGE_ROWS,
        **common: Unpack[DeclaredParts],
    ) -> None:
        super().__init__(**common)
        self._reader = reader
        self._page_rows = page_rows
        self._table = table
        self._query = query
        self._attributes = attributes

    def columns(self, filters: DeclaredFilters) -> list[Column]:
        """The declared columns, or those the caller chose."""
        return self.chosen_columns(filters)

    def pages(self, filters: DeclaredFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """One page per query page; each partition ends with a page whose cursor is the next."""
        columns = self.columns(filters)
        convert = [(self._attributes[column.name], _CONVERTERS[column.kind]) for column in columns]
        values = {name: getattr(filters, name) for name in type(filters).model_fields}
        partitions = self._partitions(values)
        start, key = _parse_cursor(cursor, len(partitions))
        for position in range(start, len(partitions)):
            day = partitions[position]
            query = self._item_query(values if day is None else {**values, DAY_PLACEHOLDER: day})
            while True:
                items, key = self._reader.page(query, key, self._page_rows)
                rows = _rows(items, convert, self._table)
                done = position + (0 if key else 1)
                yield Page(rows, {"partition": done, "key": key}, done / len(partitions))
                if key is None:
                    break

    def _partitions(self, values: dict[str, Any]) -> list[date | None]:
        each_day = self._query.each_day
        if each_day is None:
            return [None]
        first, last = values[each_day.start], values[each_day.end]
        first = first.date() if isinstance(first, datetime) else first
        last = last.date() if isinstance(last, datetime) else last
        return [first + timedelta(days=offset) for offset in range((last - first).days + 1)]

    def _item_query(self, values: dict[str, Any]) -> ItemQuery:
        declared = self._query
        sort = declared.sort_key
        low = high = begins = None
        if sort is not None:
            if sort.between is not None:
                low, high = (render(part, values) for part in sort.between)
            low = render(sort.start, values) if sort.start is not None else low
            high = render(sort.end, values) if sort.end is not None else high
            begins = render(sort.begins_with, values) if sort.begins_with is not None else None
        filters = []
        for item_filter in declared.filters:
            chosen = values.get(item_filter.parameter)
            if chosen is not None:
                allowed = chosen if isinstance(chosen, list) else [chosen]
                filters.append((item_filter.attribute, [render("{v}", {"v": value}) for value in allowed]))
        return ItemQuery(
            table=self._table,
            index=declared.index,
            partition_name=declared.partition_key.name,
            partition_value=render(declared.partition_key.value, values),
            sort_name=sort.name if sort else None,
            sort_from=low,
            sort_to=high,
            sort_begins_with=begins,
            filters=filters,
        )


def _rows(items: list[dict[str, Any]], convert: list[tuple[str, Callable[[Any], Any]]], table: str) -> list[Row]:
    try:
        return [tuple(to_cell(item.get(name)) for name, to_cell in convert) for item in items]
    except (ValueError, TypeError, ArithmeticError) as error:
        raise ExportFailed(
            f"an item of table {table!r} holds a value its declared column kind cannot read ({error})",
            code=SourceCode.DATA_INVALID,
        ) from None


def _parse_cursor(cursor: Cursor | None, partitions: int) -> tuple[int, dict[str, Any] | None]:
    if cursor is None:
        return 0, None
    position, key = cursor.get("partition"), cursor.get("key")
    if type(position) is not int or not 0 <= position <= partitions or not (key is None or isinstance(key, dict)):
        raise CursorInvalid(f"not a DynamoDB cursor: {cursor!r}")
    return position, key


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Binary | bytes | bytearray):
        return _base64(value)
    return item_json(value)


def _base64(value: Binary | bytes | bytearray) -> str:
    # boto3's stubs lack Binary.value (the bytes it wraps).
    return base64.b64encode(bytes(value.value if isinstance(value, Binary) else value)).decode("ascii")  # type: ignore[attr-defined]


def item_json(value: Any) -> str:
    """A DynamoDB map, list, set or binary value as canonical JSON text: map keys sorted, sets
    sorted (numbers by value, binary by bytes), numbers with exactly their digits (never through
    a binary float), binary as base64; the same bytes on every run."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal | int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Binary | bytes | bytearray):
        return json.dumps(_base64(value))
    if isinstance(value, dict):
        members = (f"{json.dumps(key, ensure_ascii=False)}:{item_json(value[key])}" for key in sorted(value))
        return "{" + ",".join(members) + "}"
    if isinstance(value, set | frozenset):
        ordered = sorted(value, key=lambda item: bytes(item.value) if isinstance(item, Binary) else item)  # type: ignore[attr-defined]
        return "[" + ",".join(item_json(item) for item in ordered) + "]"
    if isinstance(value, list | tuple):
        return "[" + ",".join(item_json(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} is not a DynamoDB value")


def _json(value: Any) -> str | None:
    return None if value is None else item_json(value)


def _integer(value: Any) -> int | None:
    return None if value is None else int(value)


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(value)


def _float(value: Any) -> float | None:
    # DynamoDB numbers are exact decimals: a column declared float holds the nearest double.
    return None if value is None else float(Decimal(value))


def _date(value: Any) -> date | None:
    return None if value is None else date.fromisoformat(str(value)[:10])


def _datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(str(value))
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _boolean(value: Any) -> bool | None:
    return None if value is None else bool(value)


_CONVERTERS: dict[ColumnKind, Callable[[Any], Any]] = {
    ColumnKind.STRING: _text,
    ColumnKind.INTEGER: _integer,
    ColumnKind.DECIMAL: _decimal,
    ColumnKind.FLOAT: _float,
    ColumnKind.DATE: _date,
    ColumnKind.DATETIME: _datetime,
    ColumnKind.BOOLEAN: _boolean,
    ColumnKind.JSON: _json,
}
