"""JSON Lines: one object per row, typed values, numbers exact (docs/export-types.md)."""

from __future__ import annotations

import io
import json
import math
import random
import struct
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exports.core.export_type import Column, ColumnKind
from exports.running.writers.jsonl_writer import (
    InvalidJson,
    JsonlStream,
    json_value,
    line_encoder,
    nested_json,
    rows_encoder,
    write_jsonl,
)


def lines(columns: list[Column], rows: list[tuple[object, ...]]) -> list[str]:
    out = io.BytesIO()
    assert write_jsonl(columns, iter(rows), out) == len(rows)
    text = out.getvalue().decode("utf-8")
    assert text.endswith("\n") or not rows
    return text.splitlines()


def test_keys_are_the_column_names_in_order_and_text_stays_unescaped() -> None:
    columns = [Column("b_name", "B header"), Column("a_name", "A header", ColumnKind.INTEGER)]

    written = lines(columns, [('王芳 "q"\n', 1), (None, None)])

    assert written == ['{"b_name":"王芳 \\"q\\"\\n","a_name":1}', '{"b_name":null,"a_name":null}']
    assert list(json.loads(written[0])) == ["b_name", "a_name"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2**53, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
        # Past 2**53 a double reader would round: every digit, as a string.
        (2**53 + 1, '"9007199254740993"'),
        (Decimal("12.50"), "12.50"),
        (Decimal("0.1"), "0.1"),
        (Decimal("1E+3"), "1000"),
        (Decimal("12345678901234567.89"), '"12345678901234567.89"'),
        (Decimal("NaN"), '"NaN"'),
        (Decimal("-Infinity"), '"-Infinity"'),
        (0.30000000000000004, "0.30000000000000004"),
        (float("inf"), '"Infinity"'),
        (True, "true"),
        (False, "false"),
    ],
)
def test_a_number_is_a_json_number_only_where_a_double_holds_it(value: object, text: str) -> None:
    assert json_value(value) == text
    parsed = json.loads(text)
    if isinstance(parsed, float | int) and not isinstance(parsed, bool):
        assert Decimal(repr(float(parsed))) == Decimal(str(value))


def test_dates_are_iso_8601_and_times_rfc_3339_in_utc() -> None:
    assert json_value(date(2025, 3, 1)) == '"2025-03-01"'
    assert json_value(datetime(2025, 3, 1, 8, 0, 0, 1)) == '"2025-03-01T08:00:00.000001Z"'
    aware = datetime(2025, 3, 1, 16, 30, tzinfo=timezone(timedelta(hours=8)))
    assert json_value(aware) == '"2025-03-01T08:30:00Z"'
    assert json_value(datetime(2025, 3, 1, tzinfo=UTC)) == '"2025-03-01T00:00:00Z"'
    # PostgreSQL's dates that Python cannot hold arrive as its text, and stay text.
    assert json_value("infinity") == '"infinity"'


def test_a_json_column_is_nested_on_one_line_with_the_sources_digits() -> None:
    columns = [Column("doc", "Doc", ColumnKind.JSON)]
    source = '{"a":\n  [1, 2.50, 1e400, 12345678901234567890123, "x\\ny"],\n "b": {"c": null, "d": true}}'

    (line,) = lines(columns, [(source,)])

    assert line == '{"doc":{"a":[1,2.50,1e400,12345678901234567890123,"x\\ny"],"b":{"c":null,"d":true}}}'
    assert json.loads(line, parse_float=Decimal)["doc"]["a"][1] == Decimal("2.50")
    assert nested_json('"a JSON string"') == '"a JSON string"' and nested_json("null") == "null"


@pytest.mark.parametrize("text", ["not json", "{'a': 1}", "NaN", '{"a": Infinity}', ""])
def test_a_json_column_holding_other_text_raises(text: str) -> None:
    with pytest.raises(InvalidJson):
        nested_json(text)


def test_a_row_of_the_wrong_length_raises() -> None:
    encode = line_encoder([Column("a", "A"), Column("b", "B")])
    with pytest.raises(ValueError):
        encode(("only one",))


def test_a_stream_continued_in_a_second_writer_gives_the_same_bytes_as_one_pass() -> None:
    columns = [Column("n", "N", ColumnKind.INTEGER), Column("t", "T")]
    rows = [(n, f"row {n} é") for n in range(5_000)]
    whole = io.BytesIO()
    write_jsonl(columns, iter(rows), whole)

    parts = io.BytesIO()
    for chunk in (rows[:1_234], rows[1_234:]):
        stream = JsonlStream(columns, parts)
        stream.write_rows(chunk)
        stream.detach()

    assert parts.getvalue() == whole.getvalue()


SAMPLES = [
    None,
    "text",
    "",
    0,
    -(2**53),
    2**53 + 1,
    True,
    False,
    Decimal("12.50"),
    Decimal("NaN"),
    1.5,
    date(2025, 3, 1),
    datetime(2025, 3, 1, 8, 0, 0, 1),
    datetime(2025, 3, 1, 16, tzinfo=timezone(timedelta(hours=8))),
    "infinity",
]


@pytest.mark.parametrize("kind", [kind for kind in ColumnKind if kind is not ColumnKind.JSON])
def test_each_kinds_fast_path_writes_what_json_value_writes(kind: ColumnKind) -> None:
    encode = line_encoder([Column("c", "C", kind)])
    for value in SAMPLES:
        assert encode((value,)) == '{"c":' + json_value(value) + "}\n", value


def encoded(kind: ColumnKind, values: list[object]) -> tuple[list[bytes], list[bytes]]:
    """The lines of one-column rows by rows_encoder and by the per-value reference."""
    columns = [Column("c", "C", kind)]
    reference = line_encoder(columns)
    rows = [(value,) for value in values]
    return rows_encoder(columns)(rows), [reference(row).encode() for row in rows]


EDGE_VALUES: list[object] = [
    *SAMPLES,
    # Floats where orjson's text and ours part: an exponent below 1e-5 and from 1e16 on.
    *(sign * value for sign in (1, -1) for value in (1e16, 9999999999999998.0, 1e-5, 9.999999999999999e-06)),
    *(math.nextafter(1e-5, 0.0), math.nextafter(1e16, 0.0), 5e-324, 1.7976931348623157e308, -0.0, 0.0),
    math.nan,
    -math.inf,
    # Decimals around the 15-character plain-notation path.
    *(Decimal(text) for text in ("123456789012.34", "1234567890123.45", "-12345678901234", "-123456789012345")),
    Decimal("9007199254740993"),
    *(Decimal(text) for text in ("0.000001", "1E-7", "1E+3", "-0", "-0.00", "sNaN", "Infinity", "0.30000000000000004")),
    *(2**53, -(2**53), 2**53 + 1, -(2**53) - 1, 2**63, -(2**64)),
    '\x00\x1f\x7f\u2028\u2029\ufeff"\\/ 王芳 😀',
    datetime(1, 1, 1),
    datetime(999, 12, 31, 23, 59, 59, 999999),
    datetime(2025, 3, 1, tzinfo=UTC),
    date(1, 1, 1),
]


@pytest.mark.parametrize("kind", list(ColumnKind))
def test_the_generated_encoder_writes_the_bytes_of_the_reference(kind: ColumnKind) -> None:
    values = [value for value in EDGE_VALUES if kind is not ColumnKind.JSON or value is None]
    if kind is ColumnKind.JSON:
        values += ['{"a": [1, 2.50]}', "null", '"x"']
    fast, reference = encoded(kind, values)
    assert fast == reference


def test_floats_of_every_magnitude_are_written_as_the_reference_writes_them() -> None:
    rng = random.Random(34)
    doubles = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(20_000)]
    doubles += [mantissa * 10.0**exponent for exponent in range(-30, 30) for mantissa in (1.0, 1.5, 9.999999999999999)]
    for kind in (ColumnKind.FLOAT, ColumnKind.DECIMAL):
        fast, reference = encoded(kind, doubles)
        assert fast == reference


# No deadline: on the shared machine a first example (Arrow's and orjson's set-up) can take seconds.
@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(), st.decimals(), st.floats(), st.text(), st.datetimes(), st.booleans())))
def test_any_row_is_written_as_the_reference_writes_it(rows: list[tuple[object, ...]]) -> None:
    columns = [
        Column(name, name.upper(), kind)
        for name, kind in zip(
            "abcdef",
            [
                ColumnKind.INTEGER,
                ColumnKind.DECIMAL,
                ColumnKind.FLOAT,
                ColumnKind.STRING,
                ColumnKind.DATETIME,
                ColumnKind.BOOLEAN,
            ],
            strict=True,
        )
    ]
    reference = line_encoder(columns)
    try:
        expected = [reference(row).encode() for row in rows]
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            rows_encoder(columns)(rows)
    else:
        assert rows_encoder(columns)(rows) == expected


def test_columns_of_the_same_name_are_both_written() -> None:
    columns = [Column("a", "A", ColumnKind.INTEGER), Column("a", "A again", ColumnKind.INTEGER)]

    assert lines(columns, [(1, 2)]) == ['{"a":1,"a":2}']


def test_text_utf_8_cannot_carry_fails_as_it_always_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        lines([Column("t", "T")], [("fine",), ("lone \ud800 surrogate",)])
