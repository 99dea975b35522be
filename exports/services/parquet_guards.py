"""What stops a Parquet export before it runs out of room: like a workbook, a Parquet file cannot
continue in a new invocation (its footer describes every row group, and pyarrow's writer cannot
be saved and resumed), so it ends with ``PARQUET_TOO_LARGE`` while there is still time to abort
cleanly; a value its column's type cannot hold ends it with ``PARQUET_VALUE_INVALID``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from exports.domain.errors import ExportFailed
from exports.export_types.base import Page, Row
from exports.services.run_budget import RunBudget
from exports.services.xlsx_guards import RowCount
from exports.writers.parquet_writer import ParquetValueInvalid

PARQUET_TOO_LARGE: Final = "PARQUET_TOO_LARGE"
PARQUET_VALUE_INVALID: Final = "PARQUET_VALUE_INVALID"
# Stop when less than this is left: the last row group and the footer are written in it.
TIME_MARGIN_SEC: Final = 30


def guarded_rows(
    pages: Iterable[Page], counted: RowCount, on_page: Callable[[int, float | None], None], budget: RunBudget
) -> Iterator[Row]:
    """The rows of ``pages``, counted; ``on_page(rows, fraction)`` after each page. Stops with
    PARQUET_TOO_LARGE when less than :data:`TIME_MARGIN_SEC` is left of the run."""
    for page in pages:
        yield from page.rows
        counted.rows += len(page.rows)
        on_page(counted.rows, page.fraction)
        if budget.below(TIME_MARGIN_SEC):
            raise ExportFailed(
                f"the Parquet file cannot be finished in one worker run ({counted.rows} rows written); "
                "export jsonl.gz or csv.gz (they continue in a new run), or narrow the filters",
                code=PARQUET_TOO_LARGE,
            )


def value_invalid(error: ParquetValueInvalid, rows: int) -> ExportFailed:
    """The error of a value no Parquet column of its type holds, and what to do."""
    return ExportFailed(
        f"{error} (after about {rows} rows); cast the column in the query (e.g. to text), "
        "or export jsonl or csv, which write every value",
        code=PARQUET_VALUE_INVALID,
    )
