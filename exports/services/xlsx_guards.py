"""What stops an XLSX export before it runs out of room: a workbook cannot continue in a new
invocation, so it ends with ``XLSX_TOO_LARGE`` while there is still time to abort cleanly, before
the openpyxl engine's temporary files fill /tmp, or when the stream engine's archive would pass
the 2 GiB spreadsheet programs open."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence

from exports.domain.errors import ExportFailed
from exports.export_types.base import Column, Page, Row
from exports.services.run_budget import RunBudget
from exports.writers import xlsx_limits
from exports.writers.cells import CellTooLong

XLSX_TOO_LARGE = "XLSX_TOO_LARGE"
# A text longer than an XLSX cell holds (the file would have to cut it).
XLSX_CELL_TOO_LONG = "XLSX_CELL_TOO_LONG"


class RowCount:
    """Rows handed to the workbook so far."""

    rows = 0


def guarded_rows(
    pages: Iterable[Page],
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    temp_files: bool,
) -> Iterator[Row]:
    """The rows of ``pages``, counted; ``on_page(rows, fraction)`` after each page. Stops with
    XLSX_TOO_LARGE when the rest would not fit in the time left or, for an engine writing
    ``temp_files``, in /tmp (and their zipping in the time)."""
    temp_dir = tempfile.gettempdir()
    used_at_start = shutil.disk_usage(temp_dir).used if temp_files else 0
    for page in pages:
        yield from page.rows
        counted.rows += len(page.rows)
        on_page(counted.rows, page.fraction)
        save_sec = 0.0
        if temp_files:
            disk = shutil.disk_usage(temp_dir)
            if disk.free < xlsx_limits.TMP_RESERVE_BYTES:
                raise ExportFailed(
                    f"the workbook does not fit in the worker's temporary disk ({disk.free // 2**20} MiB left "
                    f"after {counted.rows} rows); export CSV or csv.gz, or narrow the filters",
                    code=XLSX_TOO_LARGE,
                )
            save_sec = max(0, disk.used - used_at_start) / xlsx_limits.SAVE_BYTES_PER_SEC
        if budget.below(xlsx_limits.TIME_MARGIN_SEC + save_sec):
            raise ExportFailed(
                f"the workbook cannot be finished in one worker run ({counted.rows} rows written); "
                "export CSV or csv.gz, or narrow the filters",
                code=XLSX_TOO_LARGE,
            )


def archive_too_large(rows: int) -> ExportFailed:
    """The error of a workbook that would pass 2 GiB after ``rows`` rows."""
    return ExportFailed(
        f"the workbook would pass 2 GiB, more than spreadsheet programs open ({rows} rows "
        "written); export CSV or csv.gz, or narrow the filters",
        code=XLSX_TOO_LARGE,
    )


def cell_too_long(error: CellTooLong, columns: Sequence[Column], rows: int) -> ExportFailed:
    """The error of a text no XLSX cell holds: which column, which row, and what to do."""
    column = columns[error.column].name if error.column is not None and error.column < len(columns) else "?"
    row = error.row - 1 if error.row is not None else rows
    return ExportFailed(
        f"column {column!r}, row {row:,}: {error}; export CSV or csv.gz, which hold any length",
        code=XLSX_CELL_TOO_LONG,
    )
