"""MySQL 8 / Aurora MySQL and MariaDB, told apart without a MySQL 8 server (Debian ships only
MariaDB): which flavour a handshake's version string is, the statements each flavour's session
opens with, and how a column MySQL 8 types as JSON (which MariaDB never sends) is read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from exports.adapters.mysql_session import is_mariadb, session_statements
from exports.adapters.mysql_values import BINARY_CHARSET, converter, result_columns
from exports.export_types.base import ColumnKind

MARIADB = ["10.11.6-MariaDB-0+deb12u1", "5.5.5-10.6.14-MariaDB-log", "11.4.2-MariaDB"]
MYSQL = ["8.0.36", "8.4.3", "8.0.28", "5.7.44-log", "8.0.40-0ubuntu0.22.04.1"]
OPENING = "SET SESSION time_zone = '+00:00'"
SNAPSHOT: list[tuple[str, list[object]]] = [
    ("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", []),
    ("START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT", []),
]


@pytest.mark.parametrize("version", MARIADB)
def test_mariadb_limits_each_statement_in_seconds(version: str) -> None:
    assert is_mariadb(version)
    assert session_statements(version, 12.5) == [
        (OPENING, []),
        ("SET SESSION max_statement_time = %s", [12.5]),
        *SNAPSHOT,
    ]


@pytest.mark.parametrize("version", MYSQL)
def test_mysql_and_aurora_limit_each_select_in_milliseconds(version: str) -> None:
    assert not is_mariadb(version)
    assert session_statements(version, 12.5) == [
        (OPENING, []),
        ("SET SESSION max_execution_time = %s", [12500]),
        *SNAPSHOT,
    ]


@pytest.mark.parametrize(
    ("version", "statement", "least"), [(MARIADB[0], "max_statement_time", 1.0), (MYSQL[0], "max_execution_time", 1000)]
)
def test_a_limit_under_a_second_is_one_second_never_zero_which_means_none(
    version: str, statement: str, least: float
) -> None:
    (limit,) = [args for sql, args in session_statements(version, 0.2) if statement in sql]

    assert limit == [least]


@pytest.mark.parametrize("version", [MARIADB[0], MYSQL[0]])
def test_an_unbounded_run_sets_no_limit_but_still_reads_one_snapshot(version: str) -> None:
    assert session_statements(version, None) == [(OPENING, []), *SNAPSHOT]


@dataclass(frozen=True)
class Field:
    """What PyMySQL's field descriptor tells of a result column (the attributes read)."""

    name: str
    type_code: int
    charsetnr: int
    flags: int = 0
    length: int = 0
    scale: int = 0


def test_mysql_8s_json_is_a_json_column_read_as_its_text_not_as_binary() -> None:
    # MySQL 8 sends JSON as type 245 with the binary character set; PyMySQL decodes its text in
    # the connection's encoding. MariaDB's JSON is LONGTEXT (252, utf8mb4): a string.
    fields = [Field("doc", 245, BINARY_CHARSET), Field("maria_doc", 252, 45), Field("raw", 252, BINARY_CHARSET)]

    (doc, maria_doc, raw) = result_columns(fields)
    rows = converter(fields)([('{"k": [1, 2]}', '{"k": 1}', b"\x00\xff")])

    assert (doc.kind, maria_doc.kind, raw.kind) == (ColumnKind.JSON, ColumnKind.STRING, ColumnKind.STRING)
    assert rows == [('{"k": [1, 2]}', '{"k": 1}', "0x00FF")]
