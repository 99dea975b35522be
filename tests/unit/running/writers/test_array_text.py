"""PostgreSQL's array text read back as lists (exports/running/writers/array_text.py): the texts are the
server's own output (tests/postgres/test_arrays.py and the type corpus check them against psycopg's
parser); here, the edges of the syntax."""

from datetime import date, datetime

import pytest

from exports.core.export_type import ColumnKind
from exports.running.writers.array_text import ArrayTextInvalid, parse_array, typed_array


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("{}", []),
        ("{vip,q3}", ["vip", "q3"]),
        ('{"a b","c,d",NULL,"NULL",""}', ["a b", "c,d", None, "NULL", ""]),
        ('{"say \\"hi\\"","back\\\\slash","{braces}"}', ['say "hi"', "back\\slash", "{braces}"]),
        ("{{a,b},{c,d}}", [["a", "b"], ["c", "d"]]),
        ("{{NULL}}", [[None]]),
        ('{{"x,y"},{}}', [["x,y"], []]),
        ("[0:1]={1,2}", ["1", "2"]),  # a lower bound other than 1: lists have none
        ("[1:1][0:1]={{a,b}}", [["a", "b"]]),
        ('{"ソ\\\\"}', ["ソ\\"]),  # a backslash is quoted and escaped
    ],
)
def test_array_text_parses_to_nested_lists(text: str, items: list[object]) -> None:
    assert parse_array(text) == items


@pytest.mark.parametrize("text", ["vip,q3", "{vip", "{a}}", '{"open}', "", "{a}b"])
def test_other_text_is_refused(text: str) -> None:
    with pytest.raises(ArrayTextInvalid):
        parse_array(text)


def test_elements_take_their_kind_as_scalar_columns_do() -> None:
    assert typed_array("{1,NULL,-9223372036854775808}", ColumnKind.INTEGER) == [1, None, -9223372036854775808]
    assert [str(item) for item in typed_array("{1.50,NaN}", ColumnKind.DECIMAL)] == ["1.50", "NaN"]
    floats = typed_array("{0.1,Infinity,-Infinity}", ColumnKind.FLOAT)
    assert floats == [0.1, float("inf"), float("-inf")]
    assert typed_array("{t,f}", ColumnKind.BOOLEAN) == [True, False]
    assert typed_array('{2025-03-01,infinity,"0044-03-15 BC"}', ColumnKind.DATE) == [
        date(2025, 3, 1),
        "infinity",
        "0044-03-15 BC",
    ]
    # timestamptz in the session's UTC: naive UTC, as a timestamptz column loads.
    assert typed_array('{"2025-03-01 12:30:05+00","2025-03-01 12:30:05.5"}', ColumnKind.DATETIME) == [
        datetime(2025, 3, 1, 12, 30, 5),
        datetime(2025, 3, 1, 12, 30, 5, 500000),
    ]
    assert typed_array("{{1,2},{3,4}}", ColumnKind.INTEGER) == [[1, 2], [3, 4]]


def test_a_checkpoint_fits_only_an_export_with_the_same_array_columns() -> None:
    from exports.core.export_type import Column
    from exports.running.long_exports import export_fingerprint
    from tests.unit.builders import make_task

    task = make_task()
    text = [Column("n", "n", ColumnKind.INTEGER), Column("tags", "Tags")]
    lists = [Column("n", "n", ColumnKind.INTEGER), Column("tags", "Tags", array_of=ColumnKind.STRING)]

    # A JSON Lines export begun with the tags as text does not continue with them as lists.
    assert export_fingerprint(task, "t", text) != export_fingerprint(task, "t", lists)
    assert export_fingerprint(task, "t", lists) == export_fingerprint(task, "t", list(lists))
