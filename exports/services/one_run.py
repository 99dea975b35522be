"""The rows of an export whose file is written in one worker run (XLSX, PDF, Parquet: none can go
on in a new invocation), counted, with progress after each page, stopped with the format's error
while there is still time to finish the file and abort cleanly."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from exports.domain.errors import ExportFailed
from exports.export_types.base import Page, Row
from exports.services.run_budget import RunBudget


class RowCount:
    """Rows handed to the file's writer so far."""

    rows = 0


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
        counted.rows += len(page.rows)
        on_page(counted.rows, page.fraction)
        if budget.below(margin_sec):
            raise out_of_time(counted.rows)
