"""The MySQL type corpus: every MySQL type with the edge values the issue names (DECIMAL(65),
BIGINT UNSIGNED, TINYINT(1) and BOOLEAN, DATETIME and TIMESTAMP, negative and long TIME, YEAR, BIT,
ENUM, SET, JSON, binary strings, zero dates, utf8mb4 emoji, NULLs), exported in CSV, csv.gz, XLSX
(both writers), JSON Lines, Parquet and PDF and compared cell by cell with the server's values read by
an independent path: the ``mariadb`` client's batch output (``--binary-as-hex``, in a UTC
session), which the project never uses, through the rules of docs/export-your-own-data.md
("MySQL values") and of each format (the PostgreSQL corpus's expectations, imported)."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from exports.export_types.base import ColumnKind, ExportType
from exports.writers import jsonl_writer, parquet_writer
from exports.writers.gzip_stream import GzipStream
from exports.writers.pdf.layout import ELLIPSIS
from local_stack.embedded_mariadb import EmbeddedMariaDB
from tests.mysql.conftest import declared_types, run_as_root
from tests.postgres.test_type_corpus import (
    _number_text,
    expected_cell,
    export_rows,
    jsonl_cell,
    parquet_cell,
    pdf_cells,
    pdf_shown,
    read_back,
    write,
)

COLUMNS = """
    id INT PRIMARY KEY,
    c_tinyint TINYINT, c_tinyint1 TINYINT(1), c_bool BOOLEAN, c_smallint SMALLINT, c_mediumint MEDIUMINT,
    c_int INT, c_int_unsigned INT UNSIGNED, c_bigint BIGINT, c_bigint_unsigned BIGINT UNSIGNED,
    c_decimal DECIMAL(65, 30), c_decimal_2 DECIMAL(10, 2), c_decimal_65 DECIMAL(65, 0),
    c_float FLOAT, c_double DOUBLE,
    c_date DATE, c_datetime DATETIME, c_datetime6 DATETIME(6), c_timestamp TIMESTAMP(6) NULL DEFAULT NULL,
    c_time TIME, c_time6 TIME(6), c_year YEAR,
    c_bit4 BIT(4), c_bit64 BIT(64),
    c_enum ENUM('happy', 'sad'), c_set SET('a', 'b', 'c'), c_json JSON,
    c_char CHAR(5), c_varchar VARCHAR(50), c_text TEXT,
    c_binary BINARY(4), c_varbinary VARBINARY(10), c_blob BLOB
"""
ROWS = [
    # Typical values, the largest of each integer type, 65 digits.
    "(1, 127, 1, TRUE, -32768, 8388607, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615, "
    "12345678901234567890123456789012345.123456789012345678901234567890, 1234.56, "
    "99999999999999999999999999999999999999999999999999999999999999999, 0.1, 0.30000000000000004, "
    "'2025-03-01', '2025-03-01 12:30:05', '2025-03-01 12:30:05.123456', '2025-03-01 12:30:05.123456', "
    "'-01:30:00', '838:59:59.000000', 2025, b'0101', "
    "b'1111111111111111111111111111111111111111111111111111111111111111', "
    '\'happy\', \'c,a\', \'{"k": [1, 2], "s": "x", "big": 12345678901234567890.1}\', '
    "'ab', 'Zoë \"quoted\", 王芳', '😀 👩‍👩‍👧 ok 🇩🇪', 0xDEADBEEF, 0x00FF, 'blob')",
    # NULL in every column.
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    # The smallest values, TINYINT(1) holding neither 0 nor 1, zero dates, negative TIME.
    "(3, -128, 5, FALSE, 32767, -8388608, -2147483648, 0, -9223372036854775808, 0, "
    "-0.000000000000000000000000000001, -0.01, -99999999999999999999999999999999999999999999999999999999999999999, "
    "-1.5e10, 1e300, '0000-00-00', '0000-00-00 00:00:00', '1000-01-01 00:00:00.000001', '1970-01-01 00:00:01', "
    "'-838:59:59', '-00:00:00.5', 1901, b'0000', b'0', "
    "'sad', '', '[]', '', '', '', 0x00, '', '')",
    # A partly zero date, the last DATETIME and TIMESTAMP, text a spreadsheet would misread.
    "(4, 0, -1, 0, 0, 0, 0, 1, 1, 9007199254740993, 0.5, 99999999.99, 1, 3.0, 2.2250738585072014e-308, "
    "'2025-00-10', '2025-01-00 10:00:00', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', "
    "'100:00:00.5', '00:00:00', 2155, b'1000', b'1', "
    "'happy', 'a,b,c', '\"a JSON string\"', 'x', '=1+1', 'bell\\a tab\\t _x0041_ line\\nbreak', "
    "0x41, 0x00410042, 0x0102)",
]
# Binary string columns: their hex, as --binary-as-hex prints it.
BINARY = {"c_binary", "c_varbinary", "c_blob"}
# BIT columns and their width: their binary digits.
BITS = {"c_bit4": 4, "c_bit64": 64}
ZERO_DATES = ("0000-", "-00")


@pytest.fixture(scope="module")
def corpus(mariadb: EmbeddedMariaDB, tmp_path_factory: pytest.TempPathFactory) -> tuple[ExportType, list[str]]:
    """The corpus table (loaded with the zero dates MariaDB's default strict mode refuses) and a
    type reading all of it."""
    mariadb.admin("DROP DATABASE IF EXISTS corpus")
    mariadb.create_database("corpus")
    run_as_root(
        mariadb,
        "corpus",
        "SET SESSION sql_mode = ''",
        "SET SESSION time_zone = '+00:00'",
        f"CREATE TABLE corpus ({COLUMNS})",
        *(f"INSERT INTO corpus VALUES {row}" for row in ROWS),
    )
    names = [row[0] for row in run_as_root(mariadb, "corpus", "SHOW COLUMNS FROM corpus")]
    folder = tmp_path_factory.mktemp("mysql-corpus")
    declaration = (
        '[sources.db]\nkind = "mysql"\nurl_env = "DB_URL"\n[types.corpus]\ndescription = "every type"\n'
        'source = "db"\nmysql_query = "SELECT * FROM corpus"\norder_key = ["id"]\nallow = { groups = ["tests"] }\n'
    )
    path = folder / "exports.toml"
    path.write_text(declaration, encoding="utf-8")
    return declared_types(path, {"DB_URL": mariadb.url("corpus")})["corpus"], names


def client_text(server: EmbeddedMariaDB, names: list[str]) -> list[list[str | None]]:
    """Every cell as the ``mariadb`` client prints it in batch mode, in a UTC session (NULL as
    None, its escapes undone)."""
    columns = [_client_column(name) for name in names]
    query = f"SET time_zone = '+00:00'; SELECT {', '.join(columns)} FROM corpus ORDER BY id"
    output = subprocess.run(
        [
            "mariadb",
            "--no-defaults",
            f"--socket={server.socket}",
            "-uroot",
            "--batch",
            "--skip-column-names",
            "--binary-as-hex",
            "--default-character-set=utf8mb4",
            "corpus",
            "-e",
            query,
        ],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    return [[_unescaped(cell) for cell in line.split("\t")] for line in output.rstrip("\n").split("\n")]


def _client_column(name: str) -> str:
    """What the client reads of a column: BIT as the server's BIN(), binary strings as the
    server's HEX() (the 10.11 client's --binary-as-hex prints a NULL as ``0x``, as an empty
    string)."""
    if name in BITS:
        return f"LPAD(BIN({name}), {BITS[name]}, '0')"
    if name in BINARY:
        return f"CONCAT('0x', HEX({name}))"
    return name


def _unescaped(cell: str) -> str | None:
    if cell == "NULL":
        return None
    escapes = {"t": "\t", "n": "\n", "0": "\0", "\\": "\\"}
    out, position = [], 0
    while position < len(cell):
        if cell[position] == "\\" and position + 1 < len(cell):
            out.append(escapes.get(cell[position + 1], cell[position + 1]))
            position += 2
        else:
            out.append(cell[position])
            position += 1
    return "".join(out)


def by_rules(kinds: list[ColumnKind], texts: list[str | None]) -> list[str | None]:
    """The client's text as the MySQL rules make it: a zero date NULL."""
    return [
        None if text is not None and kind in (ColumnKind.DATE, ColumnKind.DATETIME) and _zero(text) else text
        for kind, text in zip(kinds, texts, strict=True)
    ]


def _zero(text: str) -> bool:
    return any(zero in text for zero in ZERO_DATES)


def test_the_inferred_kinds_follow_the_rules(corpus: tuple[ExportType, list[str]]) -> None:
    export_type, _ = corpus
    columns, _ = export_rows(export_type)
    kinds = {column.name: column.kind for column in columns}

    assert {name for name, kind in kinds.items() if kind is ColumnKind.DECIMAL} == {
        "c_decimal",
        "c_decimal_2",
        "c_decimal_65",
        "c_bigint_unsigned",
    }
    assert {name for name, kind in kinds.items() if kind is ColumnKind.INTEGER} == {
        "id",
        "c_tinyint",
        "c_tinyint1",
        "c_bool",
        "c_smallint",
        "c_mediumint",
        "c_int",
        "c_int_unsigned",
        "c_bigint",
        "c_year",
    }
    assert {name for name, kind in kinds.items() if kind is ColumnKind.FLOAT} == {"c_float", "c_double"}
    assert kinds["c_date"] is ColumnKind.DATE
    assert kinds["c_datetime"] is kinds["c_timestamp"] is ColumnKind.DATETIME
    shapes = {column.name: (column.precision, column.scale) for column in columns}
    assert shapes["c_decimal"] == (65, 30) and shapes["c_decimal_2"] == (10, 2) and shapes["c_decimal_65"] == (65, 0)
    assert shapes["c_bigint_unsigned"] == (20, 0)


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "xlsx", "xlsx-openpyxl"])
def test_every_cell_of_every_type_is_the_servers_value(
    mariadb: EmbeddedMariaDB, corpus: tuple[ExportType, list[str]], fmt: str
) -> None:
    export_type, names = corpus
    columns, rows = export_rows(export_type)
    kinds = [column.kind for column in columns]
    database = [by_rules(kinds, texts) for texts in client_text(mariadb, names)]

    cells = read_back(fmt, write(fmt, columns, rows))

    assert [column.name for column in columns] == names
    assert len(cells) == len(database) == len(ROWS)
    mismatches = [
        (names[position], texts[0], cell, expected_cell(kinds[position], text, fmt))
        for texts, read in zip(database, cells, strict=True)
        for position, (cell, text) in enumerate(zip(read, texts, strict=True))
        if cell != expected_cell(kinds[position], text, fmt)
    ]
    assert mismatches == [], "\n".join(map(repr, mismatches))


def test_every_value_of_every_type_reads_back_from_json_lines(
    mariadb: EmbeddedMariaDB, corpus: tuple[ExportType, list[str]]
) -> None:
    export_type, names = corpus
    columns, rows = export_rows(export_type)
    kinds = [column.kind for column in columns]
    database = [by_rules(kinds, texts) for texts in client_text(mariadb, names)]
    out = io.BytesIO()
    gzipped = GzipStream(out)
    jsonl_writer.write_jsonl(columns, iter(rows), gzipped)
    gzipped.finish()

    lines = gzip.decompress(out.getvalue()).decode("utf-8").split("\n")
    objects = [json.loads(line, parse_float=_number_text, parse_int=_number_text) for line in lines[:-1]]

    assert len(objects) == len(database) == len(ROWS)
    mismatches = [
        (name, texts[0], record[name], jsonl_cell(column.kind, text))
        for texts, record in zip(database, objects, strict=True)
        for name, column, text in zip(names, columns, texts, strict=True)
        if record[name] != jsonl_cell(column.kind, text)
    ]
    assert mismatches == [], "\n".join(map(repr, mismatches))


def test_every_value_of_every_type_reads_back_from_parquet(
    mariadb: EmbeddedMariaDB, corpus: tuple[ExportType, list[str]], tmp_path: Path
) -> None:
    export_type, names = corpus
    columns, rows = export_rows(export_type)
    kinds = [column.kind for column in columns]
    database = [by_rules(kinds, texts) for texts in client_text(mariadb, names)]
    path = tmp_path / "corpus.parquet"
    with path.open("wb") as out:
        written = parquet_writer.write_parquet_stream(columns, iter(rows), out)

    expected = [[parquet_cell(column, text) for column, text in zip(columns, texts, strict=True)] for texts in database]
    read = [list(record.values()) for record in pq.read_table(path).to_pylist()]

    assert written == len(ROWS)
    mismatches = [
        (names[position], row[0], got, want)
        for row, want_row in zip(read, expected, strict=True)
        for position, (got, want) in enumerate(zip(row, want_row, strict=True))
        if got != want
    ]
    assert mismatches == [], "\n".join(map(repr, mismatches))


def test_every_value_of_every_type_shows_in_the_pdf_as_the_rules_say(
    mariadb: EmbeddedMariaDB, corpus: tuple[ExportType, list[str]]
) -> None:
    """Each column written beside the id as a PDF, read back with pypdf (the PostgreSQL corpus's
    reading), against the client's text as a PDF shows it (docs/formats.md, PDF)."""
    export_type, names = corpus
    columns, rows = export_rows(export_type)
    kinds = [column.kind for column in columns]
    database = [by_rules(kinds, texts) for texts in client_text(mariadb, names)]
    mismatches = []
    for position in range(1, len(columns)):
        read = pdf_cells(columns, rows, position)
        assert len(read) == len(database) == len(ROWS)
        for texts, cell in zip(database, read, strict=True):
            # Lines wrap at spaces: compared without white space; a cut cell ends with an ellipsis.
            expected = "".join(pdf_shown(kinds[position], texts[position]).split())
            got = "".join(cell.split())
            if got != expected and not (got.endswith(ELLIPSIS) and expected.startswith(got[:-1])):
                mismatches.append((names[position], texts[0], got, expected))
    assert mismatches == [], "\n".join(map(repr, mismatches))
