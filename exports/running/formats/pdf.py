"""PDF: a paginated table to read and print (exports/running/writers/pdf) and the heading its first page
shows. Not split: page numbers ("3 / 1,204"), the font subset, the page tree and the offsets of
the cross-reference table span the whole file (docs/fan-out.md, "PDF: refused for splitting"); like a workbook it is
written in one worker run, so it ends with ``PDF_TOO_LARGE`` while there is still time to abort
cleanly."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from exports.core.errors import ExportFailed
from exports.core.export_type import PdfLook
from exports.core.locales import pick
from exports.core.task import ExportFormat, ExportResult
from exports.core.zones import UTC_ZONE, is_utc
from exports.running.formats.run import ExportRun, RowCount, rows_in_one_run
from exports.running.formats.spec import FormatSpec
from exports.running.writers import pdf
from exports.running.writers.pdf import PdfHeading
from exports.running.writers.sink import MultipartSink
from exports.running.writers.zones import ZoneStyle, pdf_text

PDF_TOO_LARGE = "PDF_TOO_LARGE"
# No footer but the page numbers, no logo.
PLAIN: Final = PdfLook()
# Left for what follows the last page (the font subset, the page tree, the cross-reference
# table, completing the upload), measured at under 3 s; the rest is margin.
TIME_MARGIN_SEC = 30.0


def out_of_time(rows: int) -> ExportFailed:
    """The error of a PDF that cannot be finished in the worker run after ``rows`` rows."""
    return ExportFailed(
        f"the PDF cannot be finished in one worker run ({rows:,} rows written); export CSV or csv.gz, "
        "or narrow the filters",
        code=PDF_TOO_LARGE,
    )


@dataclass(frozen=True)
class HeadingWords:
    """The words of the first page's heading in one language."""

    filters: str
    none: str
    generated: str
    time_zone: str


# By locale tag (exports.core.locales.pick: ``de-AT`` finds ``de``); English for any other.
HEADING_WORDS: Final = {
    "en": HeadingWords("Filters", "none", "Generated", "Time zone"),
    "de": HeadingWords("Filter", "keine", "Erstellt", "Zeitzone"),
    "fr": HeadingWords("Filtres", "aucun", "Généré le", "Fuseau horaire"),
    "es": HeadingWords("Filtros", "ninguno", "Generado", "Zona horaria"),
    "it": HeadingWords("Filtri", "nessuno", "Generato", "Fuso orario"),
    "pt": HeadingWords("Filtros", "nenhum", "Gerado em", "Fuso horário"),
    "nl": HeadingWords("Filters", "geen", "Gemaakt", "Tijdzone"),
    "zh": HeadingWords("筛选条件", "无", "生成时间", "时区"),
    "zh-Hant": HeadingWords("篩選條件", "無", "產生時間", "時區"),
    "zh-TW": HeadingWords("篩選條件", "無", "產生時間", "時區"),
    "zh-HK": HeadingWords("篩選條件", "無", "產生時間", "時區"),
    "ja": HeadingWords("フィルター", "なし", "作成日時", "タイムゾーン"),
    "ko": HeadingWords("필터", "없음", "생성 시각", "시간대"),
}


def heading(
    title: str,
    filters: Mapping[str, Any],
    generated_at: datetime,
    timezone: str = UTC_ZONE,
    locale: str | None = None,
    look: PdfLook = PLAIN,
) -> PdfHeading:
    """The first page's title, the filters the export ran with (as stored on the task), when
    it was generated and, in another zone than UTC, the zone its date-times are in; the words in
    ``locale`` when :data:`HEADING_WORDS` has it (the filters' names and values as they are);
    every page's footer text and logo."""
    words = (pick(HEADING_WORDS, locale) if locale else None) or HEADING_WORDS["en"]
    shown = "; ".join(f"{name} = {_shown(value)}" for name, value in filters.items() if value is not None)
    moment = generated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    lines: tuple[str, ...] = (f"{words.filters}: {shown or words.none}", f"{words.generated}: {moment}")
    if not is_utc(timezone):
        lines = (*lines, f"{words.time_zone}: {timezone}")
    return PdfHeading(title, lines, generated_at, look.footer, look.logo)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def write_pdf(run: ExportRun) -> ExportResult:
    """Stream a PDF table in one pass; stop with PDF_TOO_LARGE before the time runs out."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        title = run.export_type.title(run.task.locale) or run.export_type.name
        # The stored filters: the caller-bound values are not filters the caller chose.
        shown = heading(
            title,
            run.task.filters,
            run.deps.clock(),
            run.task.timezone,
            run.task.locale,
            run.export_type.pdf_look(run.task.tenant, run.task.locale),
        )
        counted = RowCount()
        pages = run.pages(None)
        rows = rows_in_one_run(pages, counted, run.tracker.update, run.budget, TIME_MARGIN_SEC, out_of_time)
        pdf.write_pdf_stream(run.columns, rows, sink, shown)
        return run.finish(upload, sink, counted.rows)
    except BaseException:
        run.attempt.discard(upload)
        raise


SPEC = FormatSpec(
    format=ExportFormat.PDF,
    extension="pdf",
    content_type=pdf.CONTENT_TYPE,
    write=write_pdf,
    zone_style=ZoneStyle(pdf_text),
)
