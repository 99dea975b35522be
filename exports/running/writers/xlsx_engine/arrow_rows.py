"""Sheet rows from Arrow record batches: the XML :mod:`~exports.running.writers.xlsx_engine.rows` writes
for the same values, made a column at a time by ``pyarrow.compute`` (C++) instead of a cell at a
time in Python.

A PostgreSQL source read through ADBC (the PostgreSQL kind's ``arrow`` module) gives its rows as
arrays: no value becomes a Python object. Each column's cells are made at once for the values
``rows.py`` writes with a template (its ``_FAST_CELLS``): text with nothing to escape, integers a
double holds, decimals of at most 15 digits without exponent, finite floats whose shortest
text has no exponent, dates and whole-second date-times from 1900-03-01, booleans; None and empty
text give no cell, and the next cell its reference. A row holding any other value is written by
``rows.py``'s encoder itself, from the Python values the tuple reader would give
(:meth:`ArrowRows.python_rows`): every row is byte for byte what ``rows.py`` writes
(tests/unit/running/writers/xlsx_engine/test_arrow_rows.py, tests/postgres/test_xlsx_arrow.py).

A batch holds an array per column, then, per date and date-time column, the text of its values
no Python value holds (``record_batches(..., date_texts=True)``): those rows go to ``rows.py``
with that text, as the tuple reader gives it. The stream engine also turns groups of Python rows
into batches (:meth:`ArrowRows.batch_of`, no date texts) when every column holds only its
kind's own type: there the rows off the templates go to ``rows.py`` as they were given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from exports.core.csv_dialect import FORMULA_TRIGGERS
from exports.core.export_type import Column, ColumnKind, Row
from exports.running.writers.arrow_memory import use_system_allocator
from exports.running.writers.cells import MAX_CELL_TEXT, MAX_EXACT_INTEGER
from exports.running.writers.xlsx_engine.rows import COLUMN_STYLES, Style, column_letter, rows_encoder

if TYPE_CHECKING:
    import pyarrow as pa

# Serial numbers count days from 1899-12-30: 1970-01-01 (Arrow's day 0) is day 25,569; days
# before 1900-03-01 (serial 61) have none that is right (rows.py writes them as text).
_SERIAL_OF_EPOCH: Final = 25_569
_FIRST_SERIAL: Final = 61
_LAST_DAY: Final = (date(9999, 12, 31) - date(1970, 1, 1)).days
_MICROS_PER_DAY: Final = 86_400_000_000
_FIRST_MICROSECOND: Final = (_FIRST_SERIAL - _SERIAL_OF_EPOCH) * _MICROS_PER_DAY
_LAST_MICROSECOND: Final = (_LAST_DAY + 1) * _MICROS_PER_DAY - 1
# Text of at most this many UTF-8 bytes has at most this many characters: within rows.py's
# template length (half a cell's limit) whatever they are.
_SHORT_BYTES: Final = MAX_CELL_TEXT // 2
# A numeric's text that str(Decimal(text)) writes as it is: no exponent, and not below 1e-6
# where a fraction starts with six zeros (Python writes 0.0000001 and 0E-7 with an exponent; the
# few such texts it writes plainly go to rows.py too, which is only slower).
_PLAIN_DECIMAL: Final = r"^-?(?:[1-9][0-9]*(?:\.[0-9]+)?|0(?:\.(?:[0-9]{1,5}|[0-9]{0,5}[1-9][0-9]*))?)$"
# The formula triggers a template writes with the quotePrefix style (the printable ones).
_PRINTABLE_TRIGGERS: Final = "".join(trigger for trigger in FORMULA_TRIGGERS if trigger.isprintable())


@cache
def plain_text_pattern() -> str:
    """The regex of the text ``rows.py`` writes with a template: one or more characters, each
    printable by Python's own ``str.isprintable`` (the running interpreter's Unicode tables, over
    the Basic Multilingual Plane: text with any other character goes to ``rows.py``), none of
    ``&``, ``<``, ``>``, and no ``_`` followed by ``x`` (``rows.py`` escapes a literal ``_xHHHH_``)."""
    printable = [code for code in range(0x20, 0x10000) if chr(code).isprintable() and chr(code) not in "&<>"]
    other = _character_class(code for code in printable if chr(code) != "_")
    neither = _character_class(code for code in printable if chr(code) not in "_x")
    return f"^(?:{other}|_+(?:{neither}|$))+$"


def _character_class(codes: Iterable[int]) -> str:
    """A regex character class of ``codes`` (ascending), as ranges."""
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    members = "".join(
        f"\\x{{{first:x}}}" if first == last else f"\\x{{{first:x}}}-\\x{{{last:x}}}" for first, last in ranges
    )
    return f"[{members}]"


class ArrowRows:
    """The sheet rows of record batches of ``columns`` (then their date texts, see the module)."""

    def __init__(self, columns: Sequence[Column], date_texts: bool = True) -> None:
        use_system_allocator()
        self._columns = list(columns)
        self._encode = rows_encoder(self._columns)
        # Where each date and date-time column's texts are in a batch (batches of Python rows,
        # batch_of, have none).
        dated = [index for index, column in enumerate(self._columns) if column.kind in _DATED and date_texts]
        self._texts = {index: len(self._columns) + place for place, index in enumerate(dated)}

    def batch_of(self, rows: Sequence[Row]) -> pa.RecordBatch | None:
        """``rows`` (Python values) as a record batch :meth:`encode` takes, when every column
        holds only its kind's own type (or None: a ``str`` for text, an ``int`` for integers, a
        ``Decimal``, a ``float``, a ``date``, a naive ``datetime``, a ``bool``); None when one
        holds anything else, which the row encoder writes. Exact types: a ``bool`` is no integer
        here, an enum no text."""
        import pyarrow as pa

        arrays = []
        for column, given in zip(self._columns, zip(*rows, strict=True), strict=True):
            kind = _PYTHON_TYPES.get(column.kind)
            classes = set(map(type, given))
            classes.discard(type(None))
            if kind is None or not classes <= {kind[1]}:
                return None
            values: Sequence[Any] = given
            if column.kind is ColumnKind.DECIMAL:
                values = [None if value is None else str(value) for value in given]
            elif column.kind is ColumnKind.DATETIME and {getattr(value, "tzinfo", None) for value in given} != {None}:
                return None
            try:
                arrays.append(pa.array(values, pa.type_for_alias(kind[0])))
            except (pa.ArrowException, OverflowError):  # an integer past int64
                return None
        return pa.record_batch(arrays, names=[column.name for column in self._columns])

    def python_rows(self, batch: pa.RecordBatch) -> list[Row]:
        """The rows of ``batch`` as the tuple reader gives them (Python values)."""
        values = [self._python_values(batch, index) for index in range(len(self._columns))]
        return list(zip(*values, strict=True)) if values else [() for _ in range(batch.num_rows)]

    def encode(self, batch: pa.RecordBatch, last: int, rows: Sequence[Row] | None = None) -> EncodedRows:
        """The XML of the rows of ``batch`` numbered from ``last + 1``: what ``rows.py``'s
        encoder writes for :meth:`python_rows` (with the same ``last``), made column by column
        where it can. ``rows``: the batch's Python rows, when the caller has them."""
        import pyarrow as pa
        import pyarrow.compute as pc

        count = batch.num_rows
        if not self._columns or not count:
            written = [self._encode((row,), last + index) for index, row in enumerate(self.python_rows(batch))]
            return EncodedRows(pa.array(written, pa.string()))
        numbers = pc.cast(pa.array(range(last + 1, last + 1 + count), pa.int64()), pa.string())
        parts: list[Any] = ['<row r="', numbers, '">']
        plain = None
        texts = []
        gap_before = None  # the previous column gave no cell: this one's cell has its reference
        for index, column in enumerate(self._columns):
            values = batch.column(index)
            cells = _cells(column, values, self._date_texts(batch, index))
            pieces: list[Any] = ["<c"]
            if gap_before is not None and pc.any(gap_before).as_py():
                reference = pc.binary_join_element_wise(f' r="{column_letter(index)}', numbers, '"', "")
                pieces.append(pc.if_else(gap_before, reference, ""))
            pieces += cells.pieces
            if values.null_count == 0 and cells.blank is None:
                # A cell in every row: its pieces go straight into the row's join.
                parts += pieces
            else:
                # Where there is no cell, the join gives null (a null value) or is made null
                # (blank text), which the row's join leaves out.
                cell = pc.binary_join_element_wise(*pieces, "")
                if cells.blank is not None:
                    cell = pc.if_else(cells.blank, pa.scalar(None, pa.string()), cell)
                parts.append(cell)
            # A value neither present nor absent takes its row to rows.py, whatever its cell here.
            written = pc.or_(cells.present, cells.absent)
            plain = written if plain is None else pc.and_(plain, written)
            gap_before = cells.absent
            if column.kind in _TEXT and pa.types.is_string(values.type):
                texts.append(values)
        parts.append("</row>")
        xml = pc.binary_join_element_wise(*parts, "", null_handling="replace", null_replacement="")
        assert plain is not None
        if texts:
            # Every text of the row at once (one regex call a row, not a cell): a space between
            # them keeps a "_" at the end of one from meeting an "x" at the start of the next.
            joined = pc.binary_join_element_wise(*texts, " ", null_handling="replace", null_replacement="")
            plain = pc.and_(plain, pc.match_substring_regex(joined, plain_text_pattern()))
        others = pc.invert(plain)
        if pc.any(others).as_py():
            positions = pc.indices_nonzero(others)
            places = positions.to_pylist()
            others_rows = self.python_rows(batch.take(positions)) if rows is None else [rows[place] for place in places]
            written_rows = [self._encode((row,), last + place) for row, place in zip(others_rows, places, strict=True)]
            xml = pc.replace_with_mask(xml, others, pa.array(written_rows, pa.string()))
        return EncodedRows(xml)

    def _date_texts(self, batch: pa.RecordBatch, index: int) -> pa.Array | None:
        place = self._texts.get(index)
        return None if place is None else batch.column(place)

    def _python_values(self, batch: pa.RecordBatch, index: int) -> list[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        column, values = self._columns[index], batch.column(index)
        texts = self._date_texts(batch, index)
        if texts is not None and texts.null_count < len(texts):
            # A value no Python value holds: its text, as the tuple reader gives it.
            held = pc.if_else(pc.is_null(texts), values, pa.scalar(None, values.type))
            return [
                text if text is not None else value
                for value, text in zip(_pylist(held), texts.to_pylist(), strict=True)
            ]
        if column.kind is ColumnKind.DECIMAL and pa.types.is_string(values.type):
            return [None if text is None else Decimal(text) for text in values.to_pylist()]
        return _pylist(values)


_DATED: Final = (ColumnKind.DATE, ColumnKind.DATETIME)


def _pylist(values: pa.Array) -> list[Any]:
    """Python values; a date-time as the naive UTC ``datetime`` the tuple reader gives."""
    import pyarrow as pa

    if pa.types.is_timestamp(values.type) and values.type.tz is not None:
        values = values.cast(pa.timestamp(values.type.unit))
    listed: list[Any] = values.to_pylist()
    return listed


class _Cells:
    """One column's cells: where a template writes one (``present``; ``pieces`` join into the
    cell after ``<c`` and its reference, null where the value is), where there is none
    (``absent``: None, and ``blank`` text); any other value takes its row to rows.py."""

    def __init__(self, present: pa.Array, absent: pa.Array, pieces: list[Any], blank: pa.Array | None = None) -> None:
        self.present = present
        self.absent = absent
        self.pieces = pieces
        self.blank = blank


_TEXT: Final = (ColumnKind.STRING, ColumnKind.JSON)


def _cells(column: Column, values: pa.Array, date_texts: pa.Array | None) -> _Cells:
    import pyarrow as pa
    import pyarrow.compute as pc

    made = _MAKERS.get(column.kind)
    absent = pc.is_null(values)
    if made is None or not getattr(pa.types, _ARROW_TYPES[column.kind])(values.type):
        return _Cells(
            pc.fill_null(pa.nulls(len(values), pa.bool_()), False), absent, [pa.nulls(len(values), pa.string())]
        )
    present, pieces = made(values, int(COLUMN_STYLES.get(column.kind, Style.NONE)))
    blank = None
    if column.kind in _TEXT:
        lengths = pc.binary_length(values)
        if pc.min(lengths).as_py() == 0:
            blank = pc.fill_null(pc.equal(lengths, 0), False)
            absent = pc.or_(absent, blank)
    if date_texts is not None:
        present = pc.and_(present, pc.is_null(date_texts))
    return _Cells(pc.fill_null(present, False), absent, pieces, blank)


def _text(values: pa.Array, _style: int) -> tuple[pa.Array, list[Any]]:
    """Text rows.py writes with its templates (their printable characters are checked for the
    whole row at once, ArrowRows.encode): the quotePrefix style on a formula trigger,
    ``xml:space`` on a leading or trailing space."""
    import pyarrow.compute as pc

    present = pc.less_equal(pc.binary_length(values), _SHORT_BYTES)
    quoted = _any_start(values, _PRINTABLE_TRIGGERS)
    preserve = pc.or_(pc.starts_with(values, " "), pc.ends_with(values, " "))
    if not pc.any(pc.or_(quoted, preserve)).as_py():
        return present, [' t="inlineStr"><is><t>', values, "</t></is></c>"]
    style = pc.if_else(quoted, f' s="{int(Style.QUOTED)}"', "")
    space = pc.if_else(preserve, ' xml:space="preserve"', "")
    return present, [style, ' t="inlineStr"><is><t', space, ">", values, "</t></is></c>"]


def _any_start(values: pa.Array, starts: str) -> pa.Array:
    """Whether each value starts with one of the characters ``starts``."""
    import pyarrow.compute as pc

    found = pc.starts_with(values, starts[0])
    for start in starts[1:]:
        found = pc.or_(found, pc.starts_with(values, start))
    return found


def _integer(values: pa.Array, _style: int) -> tuple[pa.Array, list[Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    present = pc.and_(pc.greater_equal(values, -MAX_EXACT_INTEGER), pc.less_equal(values, MAX_EXACT_INTEGER))
    return present, ["><v>", pc.cast(values, pa.string()), "</v></c>"]


def _decimal(values: pa.Array, style: int) -> tuple[pa.Array, list[Any]]:
    import pyarrow.compute as pc

    # At most 15 digits (16 characters only with a sign or a point), as the row encoder's rule.
    length = pc.binary_length(values)
    short = pc.or_(pc.less_equal(length, 15), pc.and_(pc.equal(length, 16), pc.match_substring_regex(values, r"[.-]")))
    present = pc.and_(short, pc.match_substring_regex(values, _PLAIN_DECIMAL))
    return present, [f' s="{style}"><v>', values, "</v></c>"]


def _float(values: pa.Array, _style: int) -> tuple[pa.Array, list[Any]]:
    """repr(): Arrow's shortest text where it has no exponent (Python's has none from 1e-4 to
    1e16), with the ``.0`` Python gives an integral float."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.cast(values, pa.string())
    size = pc.abs(values)
    in_range = pc.or_(pc.equal(values, 0.0), pc.and_(pc.greater_equal(size, 1e-4), pc.less(size, 1e16)))
    present = pc.and_(in_range, pc.invert(pc.match_substring_regex(text, "[eEna]")))
    whole = pc.if_else(pc.match_substring(text, "."), text, pc.binary_join_element_wise(text, ".0", ""))
    return present, [f' s="{int(Style.FLOAT)}"><v>', whole, "</v></c>"]


def _date(values: pa.Array, style: int) -> tuple[pa.Array, list[Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    days = pc.cast(values, pa.int32())
    serial = pc.add(pc.cast(days, pa.int64()), _SERIAL_OF_EPOCH)
    present = pc.and_(pc.greater_equal(serial, _FIRST_SERIAL), pc.less_equal(days, _LAST_DAY))
    return present, [f' s="{style}"><v>', pc.cast(serial, pa.string()), "</v></c>"]


def _datetime(values: pa.Array, style: int) -> tuple[pa.Array, list[Any]]:
    """Whole seconds as rows.py writes them: the serial day, then the time of day in ten
    decimals, ``(seconds * 10**10 + 43200) // 86400``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if values.type.unit != "us":
        values = values.cast(pa.timestamp("us", values.type.tz))
    micros = pc.cast(values, pa.int64())
    whole = pc.equal(pc.multiply(pc.divide(micros, 1_000_000), 1_000_000), micros)
    in_range = pc.and_(pc.greater_equal(micros, _FIRST_MICROSECOND), pc.less_equal(micros, _LAST_MICROSECOND))
    # From 1899-12-30 on, so that the divisions (which truncate) are floor divisions.
    since = pc.add(micros, _SERIAL_OF_EPOCH * _MICROS_PER_DAY)
    days = pc.divide(since, _MICROS_PER_DAY)
    seconds = pc.divide(pc.subtract(since, pc.multiply(days, _MICROS_PER_DAY)), 1_000_000)
    fraction = pc.divide(pc.add(pc.multiply(seconds, 10_000_000_000), 43_200), 86_400)
    pieces = [
        f' s="{style}"><v>',
        pc.cast(days, pa.string()),
        ".",
        pc.utf8_lpad(pc.cast(fraction, pa.string()), 10, "0"),
        "</v></c>",
    ]
    return pc.and_(whole, in_range), pieces


def _boolean(values: pa.Array, _style: int) -> tuple[pa.Array, list[Any]]:
    import pyarrow.compute as pc

    return pc.is_valid(values), [pc.if_else(values, ' t="b"><v>1</v></c>', ' t="b"><v>0</v></c>')]


_MAKERS: Final[dict[ColumnKind, Callable[[Any, int], tuple[Any, list[Any]]]]] = {
    ColumnKind.STRING: _text,
    ColumnKind.JSON: _text,
    ColumnKind.INTEGER: _integer,
    ColumnKind.DECIMAL: _decimal,
    ColumnKind.FLOAT: _float,
    ColumnKind.DATE: _date,
    ColumnKind.DATETIME: _datetime,
    ColumnKind.BOOLEAN: _boolean,
}


# Per kind, the Arrow type made from a Python column (its alias) and the one Python type the
# column may hold for it (batch_of); a decimal is given as its text, as the ADBC reader gives a
# numeric.
_PYTHON_TYPES: Final[dict[ColumnKind, tuple[str, type]]] = {
    ColumnKind.STRING: ("string", str),
    ColumnKind.JSON: ("string", str),
    ColumnKind.INTEGER: ("int64", int),
    ColumnKind.DECIMAL: ("string", Decimal),
    ColumnKind.FLOAT: ("float64", float),
    ColumnKind.DATE: ("date32", date),
    ColumnKind.DATETIME: ("timestamp[us]", datetime),
    ColumnKind.BOOLEAN: ("bool", bool),
}


# The Arrow type (its pyarrow.types predicate) each kind's cells are made from; a column of
# another type takes its rows to rows.py.
_ARROW_TYPES: Final = {
    ColumnKind.STRING: "is_string",
    ColumnKind.JSON: "is_string",
    ColumnKind.INTEGER: "is_int64",
    ColumnKind.DECIMAL: "is_string",
    ColumnKind.FLOAT: "is_float64",
    ColumnKind.DATE: "is_date32",
    ColumnKind.DATETIME: "is_timestamp",
    ColumnKind.BOOLEAN: "is_boolean",
}


class EncodedRows:
    """Rows' XML, a row a value of a string array: any run of rows is one slice of its data."""

    def __init__(self, xml: pa.Array) -> None:
        self._xml = xml
        self._offsets = memoryview(xml.buffers()[1]).cast("i")
        self._data = xml.buffers()[2]

    def __len__(self) -> int:
        return len(self._xml)

    def between(self, start: int, stop: int) -> bytes:
        """The XML of rows ``start`` to ``stop - 1``."""
        base = self._xml.offset
        first, last = self._offsets[base + start], self._offsets[base + stop]
        return self._data[first:last].to_pybytes() if self._data is not None else b""
