"""Files in the customer's language and dialect (issue 49, section 2): headers per locale in CSV,
XLSX and PDF (names in JSON Lines), the CSV dialect's delimiter, line ending, decimal comma and
encoding, a value the encoding cannot hold named by column and row, PDF line breaks and tabs."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import openpyxl
import pytest
from pydantic import ValidationError

from exports.accepting.admission_rules import dedup_key
from exports.accepting.requests import ExportRequest
from exports.core.csv_dialect import CsvDialect, CsvEncoding
from exports.core.errors import ExportFailed
from exports.core.export_type import Column, ColumnKind
from exports.core.locales import UnknownLocale, canonical_locale, pick
from exports.core.task import ExportFormat
from exports.running.export_run import run_export
from exports.running.formats.pdf import heading
from exports.running.progress import ProgressReporter
from exports.running.writers.csv_writer import UnencodableValue, csv_stream
from exports.running.writers.pdf import write_pdf_stream
from exports.running.writers.pdf.font import font_metrics
from tests.pdf_reading import page_lines, reader
from tests.unit.export_fakes import NumbersExport, make_world, running_task

HEADERS = {
    "n": {"zh-CN": "编号", "ja": "番号", "de": "Nr."},
    "day": {"zh-CN": "日期", "de": "Tag"},
    "amount": {"zh-CN": "金额", "de": "Betrag"},
    "text": {"zh-CN": "文本", "de": "Text"},
}


class LocalizedNumbers(NumbersExport):
    """The numbered rows with headers and a title in Chinese and German."""

    titles = MappingProxyType({"zh-CN": "编号的行", "de": "Nummerierte Zeilen"})
    pdf_footers = MappingProxyType({"en": "Acme Ltd · confidential", "zh-CN": "Acme 有限公司 · 机密"})

    def columns(self, filters: Any) -> list[Column]:
        return [
            Column(column.name, column.header, column.kind, headers=HEADERS[column.name])
            for column in super().columns(filters)
        ]


def run(world: Any, task: Any) -> Any:
    return run_export(task, ProgressReporter(task, world.deps), world.deps)


def exported(fmt: ExportFormat, rows_total: int = 3, **fields: Any) -> tuple[Any, bytes]:
    world = make_world(LocalizedNumbers(rows_total=rows_total, page_rows=2), upload_part_bytes=5 * 2**20)
    result = run(world, running_task(world, fmt=fmt, **fields))
    return result, world.files.objects[result.key]["body"]


# Headers per locale


def test_zh_cn_headers_are_the_header_row_of_csv_and_xlsx_and_the_header_band_and_title_of_pdf() -> None:
    _, csv_body = exported(ExportFormat.CSV, locale="zh-CN")
    assert csv_body.decode().splitlines()[0] == "编号,日期,金额,文本"

    _, xlsx_body = exported(ExportFormat.XLSX, locale="zh-CN")
    sheet = openpyxl.load_workbook(io.BytesIO(xlsx_body)).active
    assert [cell.value for cell in sheet[1]] == ["编号", "日期", "金额", "文本"]

    _, pdf_body = exported(ExportFormat.PDF, locale="zh-CN")
    lines = [line.text for line in page_lines(reader(pdf_body).pages[0])]
    assert lines[0] == "编号的行"
    assert lines[1] == "筛选条件: 无"
    assert any(all(header in line for header in ("编号", "日期", "金额", "文本")) for line in lines)


def test_json_lines_keep_the_column_names_in_any_locale() -> None:
    _, body = exported(ExportFormat.JSONL, locale="zh-CN")
    assert list(json.loads(body.decode().splitlines()[0])) == ["n", "day", "amount", "text"]


def test_a_locale_without_a_label_falls_back_to_a_shorter_tag_then_to_the_default_header() -> None:
    _, body = exported(ExportFormat.CSV, locale="ja-JP")
    assert body.decode().splitlines()[0] == "番号,Day,Amount,Text"
    assert pick({"zh": "中", "zh-Hant": "繁"}, "zh-Hant-TW") == "繁"
    assert pick({"de": "x"}, "fr") is None


def test_locale_tags_are_taken_in_any_case_and_written_in_bcp_47s() -> None:
    assert canonical_locale("zh_cn") == "zh-CN"
    assert canonical_locale("ZH-hant-tw") == "zh-Hant-TW"
    with pytest.raises(UnknownLocale, match="is not a locale"):
        canonical_locale("english please")
    with pytest.raises(ValidationError, match="is not a locale"):
        ExportRequest(export_type="numbers", locale="x-1")


def test_the_pdf_heading_words_follow_the_locale_and_english_is_the_fallback() -> None:
    from datetime import UTC, datetime

    moment = datetime(2026, 12, 1, tzinfo=UTC)
    assert heading("T", {}, moment, "Europe/Berlin", "de-AT").lines == (
        "Filter: keine",
        "Erstellt: 2026-12-01 00:00:00 UTC",
        "Zeitzone: Europe/Berlin",
    )
    assert heading("T", {}, moment, locale="sv").lines[0] == "Filters: none"


def test_a_locale_other_than_the_types_default_makes_another_export_and_the_default_keeps_old_keys() -> None:
    base = dedup_key("u", "numbers", "csv", {}, False)
    assert dedup_key("u", "numbers", "csv", {}, False, locale=None) == base
    assert dedup_key("u", "numbers", "csv", {}, False, locale="zh-CN") != base


# CSV dialect


def test_a_german_dialect_writes_semicolons_and_decimal_commas_and_leaves_integers_and_dates() -> None:
    _, body = exported(ExportFormat.CSV, csv_dialect=CsvDialect(delimiter=";", decimal_separator=","), locale="de")
    lines = body.decode().split("\r\n")
    assert lines[0] == "Nr.;Tag;Betrag;Text"
    assert lines[2] == "1;2025-01-02;0,01;row 1 王芳 =x"


def test_gb18030_and_shift_jis_files_hold_their_characters_and_name_their_charset() -> None:
    result, body = exported(ExportFormat.CSV, csv_dialect=CsvDialect(encoding=CsvEncoding.GB18030), locale="zh-CN")
    assert result.content_type == "text/csv; charset=gb18030"
    assert body.decode("gb18030").splitlines()[0] == "编号,日期,金额,文本"
    assert "王芳".encode("gb18030") in body

    _, body = exported(
        ExportFormat.CSV, csv_dialect=CsvDialect(encoding=CsvEncoding.SHIFT_JIS, line_ending="lf"), locale="ja"
    )
    assert body.decode("cp932").split("\n")[:2] == ["番号,Day,Amount,Text", "0,2025-01-01,0,'=1+1"]


def test_a_value_the_encoding_cannot_hold_fails_the_export_naming_its_column_and_row() -> None:
    # Row 3 (n = 2) holds 王芳, which Windows-1252 has no bytes for; the pages are of two rows.
    with pytest.raises(ExportFailed) as failed:
        exported(ExportFormat.CSV, csv_dialect=CsvDialect(encoding=CsvEncoding.WINDOWS_1252))

    assert failed.value.code == "CSV_UNENCODABLE"
    assert failed.value.message.startswith("column 'Text', row 2: '王' (U+738B) cannot be written in windows-1252")


def test_a_value_the_encoding_cannot_hold_is_replaced_only_when_the_caller_chose_it() -> None:
    _, body = exported(
        ExportFormat.CSV, csv_dialect=CsvDialect(encoding=CsvEncoding.WINDOWS_1252, unencodable="replace")
    )
    assert body.decode("cp1252").splitlines()[2] == "1,2025-01-02,0.01,row 1 ?? =x"


def test_a_header_the_encoding_cannot_hold_is_named_as_the_header() -> None:
    out = io.BytesIO()
    with pytest.raises(UnencodableValue) as failed:
        csv_stream([Column("a", "名前"), Column("b", "B")], out, CsvDialect(encoding=CsvEncoding.WINDOWS_1252))
    assert failed.value.message(0).startswith("column '名前', the header:")


def test_a_tab_delimiter_quotes_tabs_not_commas_and_one_column_keeps_its_empty_rows() -> None:
    out = io.BytesIO()
    stream = csv_stream([Column("a", "A"), Column("b", "B", ColumnKind.FLOAT)], out, CsvDialect(delimiter="\t"))
    stream.write_rows([("x,y", 1.5), ("x\ty", None)])
    assert out.getvalue() == b'A\tB\r\nx,y\t1.5\r\n"x\ty"\t\r\n'

    out = io.BytesIO()
    csv_stream([Column("a", "A")], out, CsvDialect(delimiter="|")).write_rows([("",), (None,), ("a|b",)])
    assert out.getvalue() == b'A\r\n""\r\n""\r\n"a|b"\r\n'


def test_the_default_dialect_is_the_fast_writers_file_byte_for_byte() -> None:
    columns = [Column("a", "A"), Column("b", "B", ColumnKind.DECIMAL)]
    rows = [("x;y", Decimal("1.50")), ("=1", None)]
    fast, spelled = io.BytesIO(), io.BytesIO()
    stream = csv_stream(columns, fast)
    stream.write_rows(rows)
    stream.detach()
    # The same spelling through the dialect writer: the comma, CRLF and UTF-8 of the default.
    spelled_stream = csv_stream(columns, spelled, CsvDialect(line_ending="lf"))
    spelled_stream.write_rows(rows)
    assert spelled.getvalue().replace(b"\n", b"\r\n") == fast.getvalue()


def test_the_request_refuses_a_decimal_comma_with_a_comma_delimiter_and_a_bom_outside_utf8() -> None:
    with pytest.raises(ValidationError, match="needs another delimiter"):
        ExportRequest.model_validate({"export_type": "numbers", "csv_dialect": {"decimal_separator": ","}})
    with pytest.raises(ValidationError, match="csv_bom is for UTF-8"):
        ExportRequest.model_validate(
            {"export_type": "numbers", "csv_bom": True, "csv_dialect": {"encoding": "shift_jis"}}
        )


def test_a_dialect_makes_another_export_and_the_default_dialect_keeps_old_keys() -> None:
    base = dedup_key("u", "numbers", "csv", {}, False)
    assert dedup_key("u", "numbers", "csv", {}, False, csv_dialect=CsvDialect()) == base
    assert dedup_key("u", "numbers", "csv", {}, False, csv_dialect=CsvDialect(delimiter=";")) != base
    body = ExportRequest(export_type="numbers").idempotency_body()
    assert "csv_dialect" not in body and "locale" not in body


# PDF


def test_pdf_cells_keep_their_line_breaks_and_draw_tabs_as_spaces() -> None:
    out = io.BytesIO()
    write_pdf_stream([Column("a", "Note"), Column("b", "이름")], [("Line one\nLine two\r\nLine\tthree", "한국어")], out)
    lines = [line.text for line in page_lines(reader(out.getvalue()).pages[0])]
    assert [line for line in lines if line.startswith("Line")] == ["Line one", "Line two", "Line three"]
    assert "한국어" in lines


def test_the_bundled_font_draws_korean_rare_han_and_emoji_instead_of_empty_boxes() -> None:
    drawn = font_metrics().advances
    # Hangul syllables and jamo, an Extension A, a late URO and a supplementary-plane ideograph,
    # emoji (Symbola's, where Noto has none).
    missing = [char for char in "한국어 텍스트 뷁ᄀㄱ㐀鿏龘𠮷😀🎉👍❤☂" if char != " " and ord(char) not in drawn]
    assert missing == []


def test_every_pdf_page_carries_the_types_footer_in_the_locale_or_its_default() -> None:
    _, body = exported(ExportFormat.PDF, rows_total=400, locale="zh-CN")
    pages = reader(body).pages
    assert len(pages) > 1
    assert all(page_lines(page)[-1].text.endswith("Acme 有限公司 · 机密") for page in pages)

    _, body = exported(ExportFormat.PDF, locale="ja")
    assert page_lines(reader(body).pages[0])[-1].text.endswith("Acme Ltd · confidential")


def test_a_type_lists_the_locales_it_has_words_in_its_default_first(tmp_path: Any) -> None:
    from exports.api.models import ExportTypeView
    from exports.core.aws.clients import ClientFactory
    from exports.export_types.build import build_export_types
    from exports.export_types.loader import load_declarations
    from exports.sources.kind import SourceReaders

    assert ExportTypeView.of(LocalizedNumbers()).locales == ["en", "de", "zh-CN"]

    path = tmp_path / "exports.toml"
    path.write_text(
        '[sources.db]\nkind = "postgresql"\nurl_env = "DB_URL"\n'
        '[types.t]\ndescription = "Rechnungen"\nsource = "db"\nquery = "SELECT 1 AS n"\nlocale = "de"\n'
        'titles = { fr = "Factures" }\n'
        '[[types.t.columns]]\nname = "n"\nheader = { de = "Nummer", ja = "番号", ko = "번호" }\n',
        encoding="utf-8",
    )
    readers = SourceReaders(client=ClientFactory(), environ={"DB_URL": "postgresql://127.0.0.1:1/x"})
    (declared,) = build_export_types(load_declarations(path), readers).types
    view = ExportTypeView.of(declared)
    assert (view.default_locale, view.locales) == ("de", ["de", "fr", "ja", "ko"])
