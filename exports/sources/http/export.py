"""An export type declared over the pages of a JSON API: rows from each page's array, typed
by the declared columns, pages followed by cursor, ``next`` link or page number."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Unpack
from urllib.parse import quote, urlencode, urljoin

from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import Column, ColumnKind, Cursor, CursorInvalid, Page, Row, RunControl, Unbounded
from exports.declared.common import DeclaredExport, DeclaredParts
from exports.declared.parameters import DeclaredFilters
from exports.declared.templates import placeholders, render
from exports.sources.http.model import HttpReadDecl, PaginationDecl, PaginationStyle
from exports.sources.http.ports import JsonPages

# What a JSON pointer finds where the document has nothing.
_MISSING: Final = object()


class DeclaredHttpExport(DeclaredExport):
    """Rows of the declared request's pages. With cursor or ``next``-link pagination each
    page's cursor is the next page's cursor or URL, so a long CSV export resumes where it
    stopped; numbered pages shift as rows come and go, so such a type does not resume."""

    def __init__(
        self,
        *,
        reader: JsonPages,
        source: str,
        base_url: str,
        read: HttpReadDecl,
        fields: Mapping[str, str],
        **common: Unpack[DeclaredParts],
    ) -> None:
        super().__init__(**common)
        self._reader = reader
        self._source = source
        self._base_url = base_url.rstrip("/")
        self._read = read
        # Column name -> the row's field (a key, or a JSON pointer into the row).
        self._fields = dict(fields)

    def columns(self, filters: DeclaredFilters) -> list[Column]:
        """The declared columns, or those the caller chose."""
        return self.chosen_columns(filters)

    @property
    def resumable(self) -> bool:
        """With a cursor or ``next`` links: a page's cursor says where the rest is."""
        pagination = self._read.pagination
        return pagination is not None and pagination.style is not PaginationStyle.PAGE

    def pages(self, filters: DeclaredFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """:meth:`stream` with nothing bounding the run."""
        return self.stream(filters, cursor, Unbounded())

    def stream(self, filters: DeclaredFilters, cursor: Cursor | None, control: RunControl) -> Iterator[Page]:
        """One page of rows per page of the service, in its order."""
        if cursor is not None and not self.resumable:
            raise CursorInvalid(f"export type {self.name} pages by number and cannot resume")
        values = {name: getattr(filters, name) for name in type(filters).model_fields}
        convert = [(self._fields[column.name], _CONVERTERS[column.kind]) for column in self.columns(filters)]
        pagination = self._read.pagination
        first = self._url(values)
        url: str | None = first if cursor is None else self._resumed(first, cursor)
        number = pagination.first_page if pagination is not None else 0
        if pagination is not None and pagination.style is PaginationStyle.PAGE:
            url = _with_param(first, pagination.page_param, str(number))
        while url is not None:
            body = self._reader.get(url, control)
            items = _pointed(body, self._read.rows)
            if not isinstance(items, list):
                found = "nothing" if items is _MISSING else f"a JSON {_json_type(items)}"
                raise self._shape(f"its rows (http.rows = {self._read.rows!r}) are {found}, not an array")
            rows = self._rows(items, convert)
            if pagination is None:
                yield Page(rows)
                return
            url, page_cursor = self._next(pagination, body, url, first, number, bool(items))
            number += 1
            yield Page(rows, page_cursor)

    def _url(self, values: Mapping[str, Any]) -> str:
        """The base URL, the path with each value percent-encoded (it never adds a segment)
        and the query: a template whose values are all absent is left out, one that is just
        a list parameter repeats its name for each item."""
        path = self._read.path
        for name in dict.fromkeys(placeholders(path)):
            path = path.replace("{" + name + "}", quote(render("{" + name + "}", values), safe=""))
        query: list[tuple[str, str]] = []
        for key, template in self._read.query.items():
            names = placeholders(template)
            if names and all(values.get(name) is None for name in names):
                continue
            value = values.get(names[0]) if names == [template[1:-1]] else None
            if isinstance(value, list):
                query.extend((key, render("{v}", {"v": item})) for item in value)
            else:
                query.append((key, render(template, values)))
        return self._base_url + path + (f"?{urlencode(query)}" if query else "")

    def _resumed(self, first: str, cursor: Cursor) -> str | None:
        """The URL a saved cursor goes on from (None: the pages were all read)."""
        pagination = self._read.pagination
        assert pagination is not None  # resumable
        if pagination.style is PaginationStyle.CURSOR and set(cursor) == {"cursor"}:
            token = cursor["cursor"]
            if token is None or isinstance(token, str):
                return None if token is None else _with_param(first, pagination.cursor_param, token)
        if pagination.style is PaginationStyle.NEXT_LINK and set(cursor) == {"next"}:
            link = cursor["next"]
            if link is None or isinstance(link, str):
                return link
        raise CursorInvalid(f"not a cursor of export type {self.name}: {cursor!r}")

    def _next(
        self, pagination: PaginationDecl, body: Any, url: str, first: str, number: int, had_rows: bool
    ) -> tuple[str | None, Cursor | None]:
        """The next page's URL (None: this was the last) and the cursor to resume there."""
        if pagination.style is PaginationStyle.PAGE:
            if not had_rows:
                return None, None
            return _with_param(first, pagination.page_param, str(number + 1)), None
        if pagination.style is PaginationStyle.CURSOR:
            field = pagination.cursor_field or ""
            token = _pointed(body, field)
            if token is _MISSING or token is None or token == "":
                return None, {"cursor": None}
            if isinstance(token, bool) or not isinstance(token, str | int):
                found = _json_type(token)
                raise self._shape(f"its cursor (http.pagination.cursor_field = {field!r}) is a JSON {found}")
            text = str(token)
            following = _with_param(first, pagination.cursor_param, text)
            if following == url:
                raise self._shape(f"it gives its own cursor {text!r} as the next one (the pages would not end)")
            return following, {"cursor": text}
        field = pagination.next_field or ""
        link = _pointed(body, field)
        if link is _MISSING or link is None or link == "":
            return None, {"next": None}
        if not isinstance(link, str):
            found = _json_type(link)
            raise self._shape(f"its next link (http.pagination.next_field = {field!r}) is a JSON {found}")
        following = urljoin(url, link)
        if following == url:
            raise self._shape("its next link is the page itself (the pages would not end)")
        return following, {"next": following}

    def _rows(self, items: list[Any], convert: list[tuple[str, Callable[[Any], Any]]]) -> list[Row]:
        rows: list[Row] = []
        for position, item in enumerate(items):
            row = []
            for field, to_cell in convert:
                value = _field(item, field)
                if value is _MISSING:
                    raise self._shape(f"row {position} has no field {field!r}")
                try:
                    row.append(to_cell(value))
                except (ValueError, TypeError, ArithmeticError) as error:
                    found = _json_type(value)
                    raise self._shape(f"field {field!r} of row {position} is a {found}: {error}") from None
            rows.append(tuple(row))
        return rows

    def _shape(self, problem: str) -> ExportFailed:
        """A page unlike the declaration: final, naming the field (a service that changed its
        answers needs a new declaration, not a retry), and the declared path, not the values in it."""
        return ExportFailed(
            f"a page of data source {self._source!r} (GET {self._read.path}) does not have the declared shape: "
            f"{problem}",
            code=SourceCode.DATA_INVALID,
        )


def _with_param(url: str, name: str | None, value: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}{urlencode({name or '': value})}"


def _pointed(document: Any, pointer: str) -> Any:
    """What the JSON pointer (RFC 6901) ``pointer`` finds in ``document``, or :data:`_MISSING`."""
    if pointer == "":
        return document
    found = document
    for escaped in pointer[1:].split("/"):
        token = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict):
            found = found.get(token, _MISSING)
        elif isinstance(found, list) and token.isdigit() and (token == "0" or not token.startswith("0")):
            index = int(token)
            found = found[index] if index < len(found) else _MISSING
        else:
            return _MISSING
        if found is _MISSING:
            return _MISSING
    return found


def _field(item: Any, field: str) -> Any:
    """A row's field: a JSON pointer into it, or one of its keys."""
    if field.startswith("/"):
        return _pointed(item, field)
    return item.get(field, _MISSING) if isinstance(item, dict) else _MISSING


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def json_text(value: Any) -> str:
    """A JSON value as compact JSON text, in the service's own order, numbers with exactly the
    digits it sent (never through a binary float)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        members = (f"{json.dumps(key, ensure_ascii=False)}:{json_text(item)}" for key, item in value.items())
        return "{" + ",".join(members) + "}"
    return "[" + ",".join(json_text(item) for item in value) + "]"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json_text(value)


def _integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    raise ValueError("not an integer")


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ValueError("not a number")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError("not a number") from None
    if not number.is_finite():
        raise ValueError("not a finite number")
    return number


def _float(value: Any) -> float | None:
    number = _decimal(value)
    return None if number is None else float(number)


def _date(value: Any) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("not an ISO 8601 date")
    return date.fromisoformat(value)


def _datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("not an ISO 8601 date-time")
    moment = datetime.fromisoformat(value)
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _boolean(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError("not true or false")


def _json(value: Any) -> str | None:
    return None if value is None else json_text(value)


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
