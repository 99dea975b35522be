"""PDF exports: a paginated table written in one pass (see :mod:`.document`), in the bundled
font subset to the characters used (:mod:`.font`), values shown as XLSX shows them
(:mod:`.values`). See docs/formats.md."""

from exports.running.writers.pdf.document import CONTENT_TYPE, PdfHeading, PdfStream, write_pdf_stream

__all__ = ["CONTENT_TYPE", "PdfHeading", "PdfStream", "write_pdf_stream"]
