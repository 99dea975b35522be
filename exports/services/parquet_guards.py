"""What stops a Parquet export before it runs out of room: like a workbook, a Parquet file cannot
continue in a new invocation (its footer describes every row group, and pyarrow's writer cannot
be saved and resumed), so it ends with ``PARQUET_TOO_LARGE`` while there is still time to abort
cleanly; a value its column's type cannot hold ends it with ``PARQUET_VALUE_INVALID``."""

from __future__ import annotations

from typing import Final

from exports.domain.errors import ExportFailed
from exports.writers.parquet_writer import ParquetValueInvalid

PARQUET_TOO_LARGE: Final = "PARQUET_TOO_LARGE"
PARQUET_VALUE_INVALID: Final = "PARQUET_VALUE_INVALID"
# Stop when less than this is left: the last row group and the footer are written in it.
TIME_MARGIN_SEC: Final = 30


def out_of_time(rows: int) -> ExportFailed:
    """The error of a Parquet file that cannot be finished in the worker run after ``rows`` rows."""
    return ExportFailed(
        f"the Parquet file cannot be finished in one worker run ({rows} rows written); "
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
