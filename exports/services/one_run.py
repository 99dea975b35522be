"""The rows of an export whose file is written in one worker run (PDF, Parquet: neither can go on
in a new invocation), counted, with progress after each page, stopped with the format's error
while there is still time to finish the file and abort cleanly."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from exports.domain.errors import ExportFailed
from exports.export_types.base import Page, Row
from exports.services.run_budget import RunBudget
from exports.services.xlsx_guards import RowCount

if TYPE_CHECKING:
    import pyarrow as pa


def rows_in_one_run(
    pages: Iterable[Page],
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> Iterator[Row]:
    """The rows of ``pages``, counted; ``on_page(rows, fraction)`` after each page. Raises
    ``out_of_time(rows)`` when less than ``margin_sec`` is left of the run."""
    for page in pages:
        yield from page.rows
        _passed(len(page.rows), page.fraction, counted, on_page, budget, margin_sec, out_of_time)


def batches_in_one_run(
    batches: Iterable[pa.RecordBatch],
    counted: RowCount,
    on_batch: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> Iterator[pa.RecordBatch]:
    """:func:`rows_in_one_run` of Arrow record batches (a batch counts as a page)."""
    for batch in batches:
        yield batch
        _passed(batch.num_rows, None, counted, on_batch, budget, margin_sec, out_of_time)


def _passed(
    rows: int,
    fraction: float | None,
    counted: RowCount,
    on_page: Callable[[int, float | None], None],
    budget: RunBudget,
    margin_sec: float,
    out_of_time: Callable[[int], ExportFailed],
) -> None:
    """Count a page's ``rows`` and report them; raise ``out_of_time`` when the run's time is short."""
    counted.rows += rows
    on_page(counted.rows, fraction)
    if budget.below(margin_sec):
        raise out_of_time(counted.rows)
