"""Issue 36: a source whose connection asks for another client encoding (``client_encoding=SJIS``
in its URI or its options, or PGCLIENTENCODING) still talks UTF-8 to the server. In Shift JIS,
``ソ`` is 0x83 0x5C and 0x5C is a backslash: psycopg escaped that byte inside the character, so a
list item was split into several elements (the same export returned other rows by format), and a
value the encoding has no byte for (an emoji, U+202E) was accepted, then failed the export with
INTERNAL_ERROR "unexpected UnicodeEncodeError", retried three times."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from python_calamine import CalamineWorkbook

from exports.core.export_type import ExportType
from exports.core.task import ExportFormat
from exports.running.endings import Outcome
from exports.running.writers import jsonl_writer, xlsx_engine
from functions.worker import handler as worker
from local_stack.embedded_aws import Resources
from tests.postgres.conftest import declared_types, write_declaration
from tests.postgres.test_worker_postgres import body_of, create, run, worker_dependencies

DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.tags]
description = "each tag asked for, and a note, as the server received them"
source = "db"
query = '''
SELECT t.n, t.tag, octet_length(t.tag) AS tag_bytes, %(note)s::text AS note
FROM unnest(%(tags)s::text[]) WITH ORDINALITY AS t(tag, n)
'''
order_key = ["n"]

[types.tags.parameters.tags]
type = "list"
items = { type = "string" }

[types.tags.parameters.note]
type = "string"
"""
TAG = "ソ\\"  # KATAKANA LETTER SO (0x83 0x5C in Shift JIS) and a backslash
NOTES = ["😀 emoji", "\u202eright-to-left override", "王芳 Zoë"]


def _with(uri: str, parameter: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}{parameter}"


@pytest.fixture(params=["url", "options", "environment"])
def sjis_uri(postgres: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URI of a database as a source that asks for Shift JIS, one way or another."""
    uri = postgres.uri()
    if request.param == "url":
        return _with(uri, "client_encoding=SJIS")
    if request.param == "options":
        return _with(uri, "options=" + quote("-c client_encoding=SJIS"))
    monkeypatch.setenv("PGCLIENTENCODING", "SJIS")
    return uri


@pytest.fixture
def tags(sjis_uri: str, tmp_path: Path) -> ExportType[Any]:
    # The server really does answer in Shift JIS when asked this way (libpq's own connection).
    with psycopg.connect(sjis_uri) as conn:
        assert conn.execute("SHOW client_encoding").fetchone() == ("SJIS",)
    return declared_types(write_declaration(tmp_path, DECLARATION), {"DB_URL": sjis_uri})["tags"]


def exported(export_type: ExportType[Any], filters: dict[str, Any]) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """The export's JSON Lines records and XLSX rows, read back."""
    parsed = export_type.parse_filters(filters)
    columns = export_type.columns(parsed)
    rows = [row for page in export_type.pages(parsed) for row in page.rows]
    jsonl, xlsx = io.BytesIO(), io.BytesIO()
    jsonl_writer.write_jsonl(columns, iter(rows), jsonl)
    xlsx_engine.write_xlsx_stream(columns, iter(rows), xlsx)
    records = [json.loads(line) for line in jsonl.getvalue().decode("utf-8").splitlines()]
    sheet = CalamineWorkbook.from_filelike(io.BytesIO(xlsx.getvalue())).get_sheet_by_index(0).to_python()
    return records, sheet[1:]


def test_a_list_item_holding_a_shift_jis_backslash_byte_stays_one_element(tags: ExportType[Any]) -> None:
    records, cells = exported(tags, {"tags": [TAG, "q3"], "note": "x"})

    expected = [
        {"n": 1, "tag": TAG, "tag_bytes": len(TAG.encode()), "note": "x"},
        {"n": 2, "tag": "q3", "tag_bytes": 2, "note": "x"},
    ]
    assert records == expected
    assert cells == [[1.0, TAG, float(len(TAG.encode())), "x"], [2.0, "q3", 2.0, "x"]]


@pytest.mark.parametrize("note", NOTES)
def test_a_value_shift_jis_cannot_hold_exports_as_it_is(tags: ExportType[Any], note: str) -> None:
    records, cells = exported(tags, {"tags": ["a"], "note": note})

    assert records == [{"n": 1, "tag": "a", "tag_bytes": 1, "note": note}]
    assert cells == [[1.0, "a", 1.0, note]]


@pytest.mark.parametrize("fmt", [ExportFormat.CSV, ExportFormat.JSONL], ids=["csv (COPY)", "jsonl"])
def test_the_worker_completes_such_an_export_in_one_attempt(
    aws: Resources, postgres: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: ExportFormat
) -> None:
    deps = worker_dependencies(
        monkeypatch, write_declaration(tmp_path, DECLARATION), _with(postgres.uri(), "client_encoding=SJIS")
    )
    try:
        task = create(deps, {"tags": [TAG, "q3"], "note": NOTES[0]}, fmt=fmt, export_type="tags")

        assert run(deps, task) is Outcome.COMPLETED

        done = deps.tasks.get(task.task_id)
        body = body_of(aws, done.result.key)
    finally:
        worker.dependencies.cache_clear()
    assert (done.attempt, done.retry_count, done.result.rows) == (1, 0, 2)
    if fmt is ExportFormat.CSV:
        bytes_of_tag = str(len(TAG.encode()))
        assert list(csv.reader(io.StringIO(body)))[1:] == [
            ["1", TAG, bytes_of_tag, NOTES[0]],
            ["2", "q3", "2", NOTES[0]],
        ]
    else:
        assert [json.loads(line)["tag"] for line in body.splitlines()] == [TAG, "q3"]
        assert {json.loads(line)["note"] for line in body.splitlines()} == {NOTES[0]}
