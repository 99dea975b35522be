"""The error codes ExportFailed's alarm leaves out (exports.core.config.metrics.USER_CAUSED_FAILURES) are the
ones the code really ends tasks with when what was asked does not fit its format or one run."""

from __future__ import annotations

from exports.core.config.metrics import USER_CAUSED_FAILURES
from exports.running.formats.parquet import PARQUET_TOO_LARGE, PARQUET_VALUE_INVALID
from exports.running.formats.pdf import PDF_TOO_LARGE
from exports.running.formats.xlsx import XLSX_CELL_TOO_LONG, XLSX_TOO_LARGE
from exports.running.long_exports import EXPORT_TOO_LONG


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
