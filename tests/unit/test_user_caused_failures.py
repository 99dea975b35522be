"""The error codes ExportFailed's alarm leaves out (exports.config.metrics.USER_CAUSED_FAILURES) are the
ones the code really ends tasks with when what was asked does not fit its format or one run."""

from __future__ import annotations

from exports.config.metrics import USER_CAUSED_FAILURES
from exports.services.long_exports import EXPORT_TOO_LONG
from exports.services.parquet_guards import PARQUET_TOO_LARGE, PARQUET_VALUE_INVALID
from exports.services.pdf_guards import PDF_TOO_LARGE
from exports.services.xlsx_guards import XLSX_CELL_TOO_LONG, XLSX_TOO_LARGE


def test_the_user_caused_codes_are_the_guards_own():
    assert set(USER_CAUSED_FAILURES) == {
        EXPORT_TOO_LONG,
        PARQUET_TOO_LARGE,
        PDF_TOO_LARGE,
        XLSX_CELL_TOO_LONG,
        XLSX_TOO_LARGE,
    }


def test_a_value_the_declared_column_cannot_hold_still_pages():
    # The declaration or the data is wrong, not the request: an operator has something to fix.
    assert PARQUET_VALUE_INVALID not in USER_CAUSED_FAILURES
