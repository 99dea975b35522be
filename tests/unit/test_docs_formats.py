"""The docs name what the code has: every file format, every field of the request body, and the
push stream the console uses (issue 36: docs/formats.md listed 4 of 7 formats, the README said
`format` was "csv or xlsx" and left out `csv_formula_guard`, docs/console.md said push was not
available)."""

import re
from pathlib import Path

from exports.accepting.requests import ExportRequest
from exports.core.task import ExportFormat
from exports.running.formats.registry import every_format
from exports.sources.postgres.values import CAST_TYPES

ROOT = Path(__file__).resolve().parents[2]
FORMATS_DOC = ROOT / "docs" / "formats.md"
README = ROOT / "README.md"
CONSOLE_DOC = ROOT / "docs" / "console.md"


def _table_rows(text: str, first_cell: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header starts with ``first_cell``: first cell's first
    code span -> the row's cells."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(f"| {first_cell} |"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        name = re.match(r"`([^`]+)`", cells[0])
        assert name, line
        rows[name.group(1)] = cells
    return rows


def test_the_formats_doc_has_a_row_for_every_format_with_its_content_type() -> None:
    rows = _table_rows(FORMATS_DOC.read_text(encoding="utf-8"), "`format`")
    assert list(rows) == [fmt.value for fmt in ExportFormat]
    for fmt, spec in every_format().items():
        assert f"`{spec.content_type}`" in rows[fmt.value], fmt


def test_the_formats_doc_says_which_formats_show_labels_and_which_names() -> None:
    text = FORMATS_DOC.read_text(encoding="utf-8")
    section = text[text.index("## Column labels and column names") :].split("\n## ")[0]
    labels, names = (line for line in section.splitlines() if line.startswith(("- **labels**", "- **names**")))
    for fmt in ("csv", "csv.gz", "xlsx", "pdf"):
        assert f"`{fmt}`" in labels
    continued = section[section.index("- **names**") :]
    for fmt in ("jsonl", "jsonl.gz", "parquet"):
        assert f"`{fmt}`" in continued and f"`{fmt}`" not in labels
    assert names


def test_the_readme_body_table_has_every_request_field_and_every_format() -> None:
    rows = _table_rows(README.read_text(encoding="utf-8"), "Field")
    assert set(rows) == set(ExportRequest.model_fields)
    format_rule = rows["format"][2]
    assert re.findall(r"`([a-z.]+)`", format_rule) == [fmt.value for fmt in ExportFormat]


def test_the_console_doc_does_not_say_push_is_missing() -> None:
    text = CONSOLE_DOC.read_text(encoding="utf-8")
    assert "no such route yet" not in text
    assert "While the stack offers no push stream" not in text
    assert "Push is there" in text


def test_the_inferred_columns_table_gives_json_and_jsonb_the_kind_the_reader_gives_them() -> None:
    # It once listed them under "anything else: string" while the text below said kind json.
    doc = (ROOT / "docs" / "export-your-own-data.md").read_text(encoding="utf-8")
    section = doc[doc.index("##### Inferred columns") :]
    table = section[section.index("| PostgreSQL type |") :].split("\n\n")[0]
    for type_name, (_, kind) in CAST_TYPES.items():
        row = next(line for line in table.splitlines() if f"`{type_name}`" in line.split(" | ")[0])
        assert row.split(" | ")[1] == f"`{kind.value}`", type_name
