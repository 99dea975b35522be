"""JSON Lines: one object per row, typed values, numbers exact (docs/export-types.md)."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from exports.export_types.base import Column, ColumnKind
from exports.writers.jsonl_writer import InvalidJson, JsonlStream, json_value, line_encoder, nested_json, write_jsonl


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
