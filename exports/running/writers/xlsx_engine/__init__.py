"""Our XLSX engine: the workbook streamed straight into the output, no temporary file.

``rows`` turns rows into sheet XML from per-column cell templates (``arrow_rows`` the same XML
from Arrow record batches, a column at a time), ``parts`` holds the rest of
the OOXML package, ``zip_stream`` writes a zip forward only (deflate, data descriptors, no
seeking, no ZIP64 records), ``workbook`` puts them together as the rows come. See
docs/performance.md for what it measures against openpyxl.
"""

from exports.running.writers.xlsx_engine.workbook import (
    CONTENT_TYPE,
    MAX_DATA_ROWS_PER_SHEET,
    XlsxStream,
    write_xlsx_batches,
    write_xlsx_stream,
)
from exports.running.writers.xlsx_engine.zip_stream import ArchiveTooLarge

__all__ = [
    "CONTENT_TYPE",
    "MAX_DATA_ROWS_PER_SHEET",
    "ArchiveTooLarge",
    "XlsxStream",
    "write_xlsx_batches",
    "write_xlsx_stream",
]
