"""CSV: RFC 4180 quoting, UTF-8 with an optional BOM so Excel reads non-ASCII text right."""

from __future__ import annotations

import codecs
import csv
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from typing import Any

from exports.core.csv_dialect import DEFAULT_DIALECT, FORMULA_TRIGGERS, CsvDialect, CsvEncoding
from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.byte_sink import ByteStream, utf8_text
from exports.running.writers.cells import neutralise, plain_number

CONTENT_TYPE = "text/csv; charset=utf-8"
# RFC 6713. Not Content-Encoding: the download is the .csv.gz file itself, not CSV in transit.
GZIP_CONTENT_TYPE = "application/gzip"


def csv_text(value: Any, guard: bool = True) -> str:
    """How a typed value is written in CSV: ISO 8601 dates and times (four-digit years,
    microseconds when there are any, the wall time of an aware one), numbers with every digit
    and no exponent (NaN, Infinity, -Infinity as PostgreSQL spells them), nothing for None; with
    ``guard`` (the default), text starting with ``= + - @`` tab or CR gets a leading ``'``."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat(" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal | float):
        return plain_number(value)
    return str(neutralise(value)) if guard else str(value)


def _unguarded(value: Any) -> str:
    return csv_text(value, guard=False)


# Fast paths for the type a column declares; any other value goes through csv_text, so every
# string is neutralised whatever its column says. Each gives exactly csv_text's text.
# ``text`` is csv_text, or without the guard _unguarded.
def _string(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    if value.__class__ is str:
        return "'" + value if text is csv_text and value.startswith(FORMULA_TRIGGERS) else value
    return text(value)


def _integer(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    return value if value.__class__ is int else text(value)


def _decimal(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    return format(value, "f") if value.__class__ is Decimal else text(value)


def _date(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    return value.isoformat() if value.__class__ is date else text(value)


def _datetime(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    return text(value)


def _boolean(value: Any, text: Callable[[Any], str] = csv_text) -> Any:
    return value if value.__class__ is bool else text(value)


# Per column kind, an expression for value ``{c}``: a cheap test for the usual value, which
# csv.writer then writes as csv_text would (it writes None as "" and other values with str(),
# and str() of these types is their csv_text), else the converter above.
_FAST_PATHS: dict[ColumnKind, str] = {
    ColumnKind.STRING: "({c} if {c}.__class__ is str and (not {c} or {c}[0] not in _TRIGGERS) or {c} is None"
    " else _string({c}))",
    ColumnKind.INTEGER: "({c} if {c}.__class__ is int or {c} is None else _integer({c}))",
    # A finite float (x - x is NaN for NaN and the infinities) whose repr has no exponent: that
    # repr is plain_number's text (Decimal(repr(x)) keeps its digits as they are).
    ColumnKind.DECIMAL: "((_t if 'E' not in (_t := str({c})) else _decimal({c})) if {c}.__class__ is Decimal"
    " else (_t if 'e' not in (_t := repr({c})) and {c} - {c} == 0.0 else _decimal({c})) if {c}.__class__ is float"
    " else None if {c} is None else _decimal({c}))",
    # The same two paths, the float's first.
    ColumnKind.FLOAT: "((_t if 'e' not in (_t := repr({c})) and {c} - {c} == 0.0 else _decimal({c}))"
    " if {c}.__class__ is float else (_t if 'E' not in (_t := str({c})) else _decimal({c})) if {c}.__class__ is Decimal"
    " else None if {c} is None else _decimal({c}))",
    ColumnKind.DATE: "({c} if {c}.__class__ is date or {c} is None else _date({c}))",
    # str() of a naive datetime is its ISO 8601 form, microseconds included when there are any.
    ColumnKind.DATETIME: "({c} if {c}.__class__ is datetime and {c}.tzinfo is None or {c} is None else _datetime({c}))",
    ColumnKind.BOOLEAN: "({c} if {c}.__class__ is bool or {c} is None else _boolean({c}))",
}
# JSON is text in CSV (guarded like any text).
_FAST_PATHS[ColumnKind.JSON] = _FAST_PATHS[ColumnKind.STRING]
_NAMESPACE: dict[str, Any] = {
    "_TRIGGERS": "".join(FORMULA_TRIGGERS),
    "Decimal": Decimal,
    "date": date,
    "datetime": datetime,
    "_string": _string,
    "_integer": _integer,
    "_decimal": _decimal,
    "_date": _date,
    "_datetime": _datetime,
    "_boolean": _boolean,
}


def _generated(columns: Sequence[Column], guard: bool = True) -> dict[str, Any]:
    """``encode(row)`` and ``encode_rows(rows)`` for ``columns``, generated: one inline test
    per column and no call per cell. This is the hot loop of every CSV export, and per-cell
    function calls would cost more than the writing itself. Without ``guard`` no text is
    changed (nothing is a trigger, and the converters write text as it is)."""
    names = [f"c{index}" for index in range(len(columns))]
    values = ", ".join(_FAST_PATHS[column.kind].format(c=name) for name, column in zip(names, columns, strict=True))
    unpack = f"({', '.join(names)},)"
    source = (
        f"def encode(row):\n    {unpack} = row\n    return ({values},)\n"
        f"def encode_rows(rows):\n    return [({values},) for {unpack} in rows]\n"
    )
    namespace = _namespace(guard)
    exec(compile(source, "<csv row encoder>", "exec"), namespace)  # fixed templates, no input in the code
    return namespace


def _namespace(guard: bool) -> dict[str, Any]:
    """The names a generated encoder uses; without ``guard`` no text is a trigger and the
    converters write text as it is."""
    namespace = dict(_NAMESPACE)
    if not guard:
        namespace["_TRIGGERS"] = ""
        for name in ("_string", "_integer", "_decimal", "_date", "_datetime", "_boolean"):
            namespace[name] = partial(namespace[name], text=_unguarded)
    return namespace


# Per column kind, the expression of value ``{c}``'s CSV field in a line: the usual value's text
# with a cheap test (f-string formatting of int, bool, date and naive datetime is their str()),
# text that needs no quoting as it is, None as nothing; anything else is what csv.writer makes
# of the fast path's value (_field). Written inside an f-string, so the special characters are
# locals (3.11: no backslash, no double quote in an f-string's expressions).
# A decimal's and a finite float's text without exponent (the fast paths' own tests).
_DECIMAL_TEXT = "_t if {c}.__class__ is Decimal and 'E' not in (_t := str({c}))"
_FLOAT_TEXT = "_t if {c}.__class__ is float and 'e' not in (_t := repr({c})) and {c} - {c} == 0.0"
_FIELDS: dict[ColumnKind, str] = {
    ColumnKind.STRING: "({c} if {c}.__class__ is str and (not {c} or {c}[0] not in _TRIGGERS) and _COMMA not in {c}"
    " and _QUOTE not in {c} and _LF not in {c} and _CR not in {c} else '' if {c} is None else _field(_string({c})))",
    ColumnKind.INTEGER: "({c} if {c}.__class__ is int else '' if {c} is None else _field(_integer({c})))",
    ColumnKind.DECIMAL: f"({_DECIMAL_TEXT} else {_FLOAT_TEXT} else '' if {{c}} is None else _field(_decimal({{c}})))",
    # The same two paths, the float's first.
    ColumnKind.FLOAT: f"({_FLOAT_TEXT} else {_DECIMAL_TEXT} else '' if {{c}} is None else _field(_decimal({{c}})))",
    ColumnKind.DATE: "({c} if {c}.__class__ is date else '' if {c} is None else _field(_date({c})))",
    ColumnKind.DATETIME: "({c} if {c}.__class__ is datetime and {c}.tzinfo is None"
    " else '' if {c} is None else _field(_datetime({c})))",
    ColumnKind.BOOLEAN: "({c} if {c}.__class__ is bool else '' if {c} is None else _field(_boolean({c})))",
}
_FIELDS[ColumnKind.JSON] = _FIELDS[ColumnKind.STRING]
# What makes csv.writer (QUOTE_MINIMAL, the excel dialect, "\r\n" lines) quote a field.
_NEEDS_QUOTES = (",", '"', "\r", "\n")


def _dialect_field(expression: str, kind: ColumnKind, dialect: CsvDialect) -> str:
    """A column's field expression in ``dialect``: a decimal comma replaces the point of decimal
    and float numbers (their text has no other point; NaN and the infinities have none)."""
    if dialect.decimal_separator != "." and kind in (ColumnKind.DECIMAL, ColumnKind.FLOAT):
        return f"{expression}.replace('.', '{dialect.decimal_separator}')"
    return expression


def _field(value: Any, special: tuple[str, ...] = _NEEDS_QUOTES) -> str:
    """The CSV field ``csv.writer`` writes for ``value`` (None as nothing, other values as their
    str()), quoted when it holds a delimiter, a quote or a line break (``special``)."""
    text = "" if value is None else value if value.__class__ is str else str(value)
    if any(character in text for character in special):
        return '"' + text.replace('"', '""') + '"'
    return text


def lines_encoder(
    columns: Sequence[Column], guard: bool = True, dialect: CsvDialect = DEFAULT_DIALECT
) -> Callable[[Iterable[Row]], str]:
    """``encode(rows)``: the CSV lines (``\r\n`` ended) of ``rows``, what ``csv.writer``
    (excel dialect) writes for :func:`rows_encoder`'s values, byte for byte, generated as one
    f-string a row: ``csv.writer``'s conversion and quoting of each field, in C, cost more
    than the whole line made here (docs/performance.md, "CSV lines without csv.writer"). Two
    or more columns (``csv.writer`` writes a lone empty field as ``""``). A row of the wrong
    length raises ``ValueError``.

    Another ``dialect`` changes the delimiter (the one character besides quotes and line breaks
    that makes a field quoted), the line end and, with a decimal comma, the point of decimal
    and float numbers; it also takes one column, whose empty field is written ``""``."""
    if len(columns) < 2 and dialect.is_default:
        raise ValueError("lines are made for two or more columns")
    names = [f"c{index}" for index in range(len(columns))]
    expressions = [_dialect_field(_FIELDS[column.kind], column.kind, dialect) for column in columns]
    if len(columns) == 1:
        # A line holding nothing would be no row to a reader: csv.writer quotes a lone empty field.
        expressions = [f"(_f if (_f := {expressions[0]}) else _QUOTE + _QUOTE)"]
    fields = (
        dialect.delimiter.encode("unicode_escape")
        .decode("ascii")
        .join("{" + expression.format(c=name) + "}" for name, expression in zip(names, expressions, strict=True))
    )
    # The delimiter and the line end as the generated code's literals (a tab as \t).
    delimiter, end = (text.encode("unicode_escape").decode("ascii") for text in (dialect.delimiter, dialect.line_end))
    source = (
        "def encode(rows):\n"
        f"    _COMMA, _QUOTE, _LF, _CR = '{delimiter}', '\"', '\\n', '\\r'\n"
        "    lines = []\n"
        "    add = lines.append\n"
        f"    for ({', '.join(names)},) in rows:\n"
        f'        add(f"{fields}{end}")\n'
        "    return ''.join(lines)\n"
    )
    namespace = _namespace(guard)
    namespace["_field"] = (
        _field if dialect.is_default else partial(_field, special=(dialect.delimiter, '"', "\r", "\n"))
    )
    exec(compile(source, "<csv line encoder>", "exec"), namespace)  # fixed templates, no input in the code
    encode: Callable[[Iterable[Row]], str] = namespace["encode"]
    return encode


def row_encoder(columns: Sequence[Column], guard: bool = True) -> Callable[[Row], tuple[Any, ...]]:
    """A function turning a row into values that ``csv.writer`` writes as :func:`csv_text` would
    (with the same ``guard``). A row of the wrong length raises ``ValueError``."""
    if not columns:
        return lambda row: ()
    encode: Callable[[Row], tuple[Any, ...]] = _generated(columns, guard)["encode"]
    return encode


def rows_encoder(columns: Sequence[Column], guard: bool = True) -> Callable[[Iterable[Row]], list[tuple[Any, ...]]]:
    """:func:`row_encoder` for many rows at once (a page)."""
    if not columns:
        return lambda rows: [() for _ in rows]
    encode_rows: Callable[[Iterable[Row]], list[tuple[Any, ...]]] = _generated(columns, guard)["encode_rows"]
    return encode_rows


class CsvStream:
    """CSV into a binary stream, rows at a time. ``header=False`` and ``bom=False`` continue a
    file another process started; ``formula_guard=False`` writes text exactly as it is."""

    def __init__(
        self,
        columns: Sequence[Column],
        out: ByteStream,
        bom: bool = False,
        header: bool = True,
        formula_guard: bool = True,
    ) -> None:
        if bom:
            # The BOM as bytes, then plain UTF-8: TextIOWrapper encodes "utf-8" in C but calls the
            # Python "utf-8-sig" codec on every write (every row), several times slower.
            out.write(codecs.BOM_UTF8)
        self._text = utf8_text(out)
        self._writer = csv.writer(self._text, dialect="excel", lineterminator="\r\n")
        self._encode_rows = rows_encoder(columns, formula_guard)
        self._encode_lines = lines_encoder(columns, formula_guard) if len(columns) >= 2 else None
        if header:
            self._writer.writerow([column.header for column in columns])

    def write_rows(self, rows: Iterable[Row]) -> None:
        """Write ``rows``."""
        if self._encode_lines is not None:
            self._text.write(self._encode_lines(rows))
        else:
            self._writer.writerows(self._encode_rows(rows))

    def flush(self) -> None:
        """Push every row written so far into the byte stream."""
        self._text.flush()

    def detach(self) -> None:
        """Flush, then let go of the byte stream without closing it."""
        # Detached, the wrapper cannot close the caller's stream when it is collected.
        self._text.detach()


class UnencodableValue(ValueError):
    """A value the file's encoding cannot hold: its column's header, its row in the page being
    written (``index``, from 0; None: the header row) and the first character that does not fit."""

    def __init__(self, column: str, index: int | None, character: str, encoding: CsvEncoding) -> None:
        super().__init__(
            f"column {column!r}: {character!r} (U+{ord(character):04X}) cannot be written in {encoding.value}"
        )
        self.column = column
        self.index = index
        self.character = character
        self.encoding = encoding

    def message(self, rows_before: int) -> str:
        """What the export's error says, the row counted in the file (``rows_before``: the data
        rows before the page)."""
        where = "the header" if self.index is None else f"row {rows_before + self.index + 1:,}"
        return (
            f"column {self.column!r}, {where}: {self.character!r} (U+{ord(self.character):04X}) cannot be"
            f" written in {self.encoding.value}; choose utf-8 or gb18030, or csv_dialect.unencodable = replace"
        )


class DialectCsvStream:
    """CSV in another dialect than RFC 4180 in UTF-8 (exports.core.csv_dialect): the lines are
    made as :class:`CsvStream` makes them, in the dialect's spelling, and encoded a page at a
    time (:class:`UnencodableValue` names the first value that does not fit)."""

    def __init__(
        self,
        columns: Sequence[Column],
        out: ByteStream,
        dialect: CsvDialect,
        bom: bool = False,
        header: bool = True,
        formula_guard: bool = True,
    ) -> None:
        self._columns = list(columns)
        self._out = out
        self._dialect = dialect
        self._codec = dialect.encoding.codec
        self._errors = "replace" if dialect.unencodable == "replace" else "strict"
        self._encode_lines = lines_encoder(columns, formula_guard, dialect) if columns else None
        if bom:
            out.write("\ufeff".encode(self._codec))
        if header and columns:
            # Headers are the declaration's text: written as they are, never guarded.
            labels = [column.header for column in columns]
            self._write(lines_encoder([Column(c.name, c.header) for c in columns], False, dialect)([labels]), [labels])

    def write_rows(self, rows: Iterable[Row]) -> None:
        """Write ``rows``."""
        if self._encode_lines is None:
            return
        page = rows if isinstance(rows, list) else list(rows)
        self._write(self._encode_lines(page), page, header=False)

    def _write(self, text: str, rows: Sequence[Row], header: bool = True) -> None:
        try:
            data = text.encode(self._codec, self._errors)
        except UnicodeEncodeError:
            raise self._unencodable(rows, header) from None
        self._out.write(data)

    def _unencodable(self, rows: Sequence[Row], header: bool) -> UnencodableValue:
        """The first value of ``rows`` that does not encode."""
        encode_line = lines_encoder(self._columns, False, self._dialect)
        for index, row in enumerate(rows):
            for column, value in zip(self._columns, row, strict=True):
                text = encode_line([[value if other is column else None for other in self._columns]])
                try:
                    text.encode(self._codec)
                except UnicodeEncodeError as error:
                    character = error.object[error.start]
                    return UnencodableValue(column.header, None if header else index, character, self._dialect.encoding)
        raise AssertionError("a page did not encode, yet each of its values does")

    def flush(self) -> None:
        """Nothing is buffered: each page is written as it is encoded."""

    def detach(self) -> None:
        """Nothing to let go of: the byte stream is the caller's."""


def csv_stream(
    columns: Sequence[Column],
    out: ByteStream,
    dialect: CsvDialect = DEFAULT_DIALECT,
    bom: bool = False,
    header: bool = True,
    formula_guard: bool = True,
) -> CsvStream | DialectCsvStream:
    """The stream that writes ``dialect``: the default's own fast one (RFC 4180 in UTF-8), else
    the dialect's."""
    if dialect.is_default:
        return CsvStream(columns, out, bom=bom, header=header, formula_guard=formula_guard)
    return DialectCsvStream(columns, out, dialect, bom, header, formula_guard)


def write_csv(
    columns: list[Column],
    rows: Iterable[Row],
    out: ByteStream,
    bom: bool = False,
    on_row: Callable[[int], None] | None = None,
    formula_guard: bool = True,
    dialect: CsvDialect = DEFAULT_DIALECT,
) -> int:
    """Stream ``rows`` as CSV (in ``dialect``) into ``out``; returns the number of data rows."""
    stream = csv_stream(columns, out, dialect, bom=bom, formula_guard=formula_guard)
    count = 0
    try:
        for row in rows:
            stream.write_rows((row,))
            count += 1
            if on_row:
                on_row(count)
        stream.flush()
    finally:
        stream.detach()
    return count
