"""PDF: a paginated table to read and print (exports/writers/pdf), written in one worker run and
stopped in time (:mod:`exports.services.pdf_guards`). Not split: page numbers ("3 / 1,204"), the
font subset, the page tree and the offsets of the cross-reference table span the whole file
(docs/fan-out.md, "PDF")."""

from __future__ import annotations

from exports.domain.task import ExportFormat, ExportResult
from exports.formats.run import ExportRun
from exports.formats.spec import FormatSpec
from exports.services.one_run import rows_in_one_run
from exports.services.pdf_guards import TIME_MARGIN_SEC, heading, out_of_time
from exports.services.xlsx_guards import RowCount
from exports.writers import pdf
from exports.writers.sink import MultipartSink
from exports.writers.zones import ZoneStyle, pdf_text


def write_pdf(run: ExportRun) -> ExportResult:
    """Stream a PDF table in one pass; stop with PDF_TOO_LARGE before the time runs out."""
    upload = run.open_upload(None)
    try:
        sink = MultipartSink(upload, run.deps.settings.upload_part_bytes)
        title = run.export_type.description or run.export_type.name
        # The stored filters: the caller-bound values are not filters the caller chose.
        shown = heading(title, run.task.filters, run.deps.clock(), run.task.timezone)
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
