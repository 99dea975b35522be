"""What stops a PDF export before it runs out of time: like a workbook, a PDF is written in one
worker run (docs/fan-out.md says why it is not split), so it ends with ``PDF_TOO_LARGE`` while
there is still time to abort cleanly; and the heading its first page shows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from exports.domain.errors import ExportFailed
from exports.domain.zones import UTC_ZONE, is_utc
from exports.writers.pdf import PdfHeading

PDF_TOO_LARGE = "PDF_TOO_LARGE"
# Left for what follows the last page (the font subset, the page tree, the cross-reference
# table, completing the upload), measured at under 3 s; the rest is margin.
TIME_MARGIN_SEC = 30.0


def out_of_time(rows: int) -> ExportFailed:
    """The error of a PDF that cannot be finished in the worker run after ``rows`` rows."""
    return ExportFailed(
        f"the PDF cannot be finished in one worker run ({rows:,} rows written); export CSV or csv.gz, "
        "or narrow the filters",
        code=PDF_TOO_LARGE,
    )


def heading(title: str, filters: Mapping[str, Any], generated_at: datetime, timezone: str = UTC_ZONE) -> PdfHeading:
    """The first page's title, the filters the export ran with (as stored on the task), when
    it was generated and, in another zone than UTC, the zone its date-times are in."""
    shown = "; ".join(f"{name} = {_shown(value)}" for name, value in filters.items() if value is not None) or "none"
    moment = generated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    lines: tuple[str, ...] = (f"Filters: {shown}", f"Generated: {moment}")
    if not is_utc(timezone):
        lines = (*lines, f"Time zone: {timezone}")
    return PdfHeading(title, lines, generated_at)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
