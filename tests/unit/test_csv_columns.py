"""The columnar CSV route: the bytes csv.writer writes for the row encoder, or None."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import mixed
from exports.export_types.base import Column, ColumnKind
from exports.writers.csv_columns import MIN_ROWS, page_bytes
from exports.writers.csv_writer import rows_encoder


def reference(columns: Sequence[Column], rows: Sequence[tuple[Any, ...]], guard: bool) -> bytes:
    text = io.StringIO()
    csv.writer(text, dialect="excel", lineterminator="\r\n").writerows(rows_encoder(columns, guard)(rows))
    return text.getvalue().encode()


def columnar(columns: Sequence[Column], rows: Sequence[tuple[Any, ...]], guard: bool) -> bytes | None:
    return page_bytes(columns, rows, rows_encoder(columns, guard), guard)


@pytest.mark.parametrize("guard", [True, False])
def test_the_bench_pages_are_csv_writers_bytes(guard: bool) -> None:
    for page in mixed.pages(5_000):
        assert columnar(mixed.COLUMNS, page, guard) == reference(mixed.COLUMNS, page, guard)


EDGES: list[Any] = [
    None,
    "",
    "plain",
    'a "quoted", text',
    "line\nbreak",
    "cr\rhere",
    "=1+2",
    "+49",
    "-5",
    "@x",
    "\tTab",
    "\rCR",
    "'already",
    " lead and trail ",
    "None",
    "王芳 😀 \x00\x1f\x7f",
    0,
    -(2**63),
    2**63 - 1,
    2**63,
    -(2**70),
    True,
    False,
    0.0,
    -0.0,
    1.5,
    1e16,
    1e-5,
    123456789.125,
    math.nan,
    math.inf,
    -math.inf,
    Decimal("12.50"),
    Decimal("1E+3"),
    Decimal("-0.00"),
    Decimal("NaN"),
    Decimal("-Infinity"),
    Decimal("12345678901234567890.123456789"),
    date(1, 1, 1),
    date(999, 12, 31),
    date(2025, 3, 1),
    datetime(1, 1, 1),
    datetime(2025, 3, 1, 8, 0, 0, 1),
    datetime(2025, 3, 1, 8, 0, 0),
    datetime(2025, 3, 1, 8, tzinfo=UTC),
    datetime(2025, 3, 1, 16, 30, tzinfo=timezone(timedelta(hours=-8))),
    "infinity",
]


def uniform_and_mixed(values: list[Any]) -> list[list[Any]]:
    """Columns of each value alone (with None), of one value class each, and of every value."""
    by_class: dict[type, list[Any]] = {}
    for value in values:
        by_class.setdefault(type(value), []).append(value)
    alone = [[value, None] * MIN_ROWS for value in values]
    return alone + [[*group, None] * MIN_ROWS for group in by_class.values()] + [values * 2]


@pytest.mark.parametrize("kind", list(ColumnKind))
@pytest.mark.parametrize("guard", [True, False])
def test_every_kind_of_value_in_every_kind_of_column_is_csv_writers_bytes(kind: ColumnKind, guard: bool) -> None:
    columns = [Column("k", "K", kind), Column("n", "N", ColumnKind.INTEGER)]
    for values in uniform_and_mixed(EDGES):
        rows = [(value, index) for index, value in enumerate(values)]
        written = columnar(columns, rows, guard)
        assert written is None or written == reference(columns, rows, guard), values[:3]


def test_usual_values_take_the_columnar_route_and_others_are_left_to_csv_writer() -> None:
    columns = [Column("t", "T"), Column("n", "N", ColumnKind.INTEGER)]
    rows = [("x", n) for n in range(MIN_ROWS)]

    assert columnar(columns, rows, True) is not None
    # An integer past 64 bits, a lone surrogate, one column, a short page: csv.writer's.
    assert columnar(columns, [*rows, ("x", 2**64)], True) is None
    assert columnar(columns, [*rows, ("\ud800", 1)], True) is None
    assert columnar(columns[:1], [row[:1] for row in rows], True) is None
    assert columnar(columns, rows[:-1], True) is None


def test_a_row_of_the_wrong_length_raises() -> None:
    columns = [Column("t", "T"), Column("n", "N", ColumnKind.INTEGER)]
    with pytest.raises(ValueError):
        columnar(columns, [("x", 1)] * MIN_ROWS + [("x",)], True)


ROW = st.tuples(
    st.one_of(st.none(), st.integers(-(2**64), 2**64)),
    st.one_of(st.none(), st.floats(), st.decimals()),
    st.one_of(st.none(), st.text()),
    st.one_of(st.none(), st.datetimes(), st.datetimes(timezones=st.just(UTC))),
    st.one_of(st.none(), st.booleans()),
    st.one_of(st.none(), st.dates()),
)
ROW_COLUMNS = [
    Column("i", "I", ColumnKind.INTEGER),
    Column("d", "D", ColumnKind.DECIMAL),
    Column("s", "S", ColumnKind.STRING),
    Column("t", "T", ColumnKind.DATETIME),
    Column("b", "B", ColumnKind.BOOLEAN),
    Column("a", "A", ColumnKind.DATE),
]


# No deadline: on the shared machine a first example (Arrow's and orjson's set-up) can take seconds.
@settings(deadline=None)
@given(st.lists(ROW, min_size=MIN_ROWS, max_size=MIN_ROWS * 3), st.booleans())
def test_any_page_is_csv_writers_bytes_or_left_to_it(rows: list[tuple[Any, ...]], guard: bool) -> None:
    try:
        expected = reference(ROW_COLUMNS, rows, guard)
    except UnicodeEncodeError:
        assert columnar(ROW_COLUMNS, rows, guard) is None
    else:
        written = columnar(ROW_COLUMNS, rows, guard)
        assert written is None or written == expected
