"""CSV: RFC 4180 quoting, UTF-8 with an optional BOM so Excel reads non-ASCII text right."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from datetime import date, datetime
from decimal import Decimal
from typing import Any, BinaryIO

from exports.export_types.base import Column, Row
from exports.writers.cells import neutralise

CONTENT_TYPE = "text/csv; charset=utf-8"


def csv_text(value: Any) -> str:
    """How a typed value is written in CSV: ISO dates, plain decimals, nothing for None."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(neutralise(value))


def write_csv(
    columns: list[Column],
    rows: Iterable[Row],
    out: BinaryIO,
    bom: bool = False,
    on_row: Callable[[int], None] | None = None,
) -> int:
    """Stream ``rows`` as CSV into ``out``; returns the number of data rows."""
    text = io.TextIOWrapper(out, encoding="utf-8-sig" if bom else "utf-8", newline="", write_through=False)
    writer = csv.writer(text, dialect="excel", lineterminator="\r\n")
    count = 0
    try:
        writer.writerow([column.header for column in columns])
        for row in rows:
            writer.writerow([csv_text(value) for value in row])
            count += 1
            if on_row:
                on_row(count)
        text.flush()
    finally:
        # Detached, the wrapper cannot close the caller's stream when it is collected.
        text.detach()
    return count
