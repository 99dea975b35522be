"""What a caller reads of a failed export: a stable code and a message written for the
customers of our users, naming the task as the reference to quote.

Every channel that shows a task's error (the task itself, the console, push events, signed
webhooks, schedule mail, the CLI) reads the message stored here, so it is the one place the
driver's text, SQLSTATEs and relation or column names must not reach: the service logs them
with the task id (exports.running.endings) and stores only the message of the error's code. A
declared type may give a code its own message (``[types.NAME.messages]``).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Final

# The one placeholder a message may hold: the task id, for the customer to quote to support.
REFERENCE: Final = "reference"

_TOLD = "the operator has been told"
_NARROW = "narrow the filters"

# The message of each code a task's error may carry. Codes not listed get DEFAULT_MESSAGE.
MESSAGES: Final[Mapping[str, str]] = {
    # The data source: nothing about the database reaches the customer.
    "SOURCE_QUERY_FAILED": f"the export could not read its data; {_TOLD} (reference {{reference}})",
    "SOURCE_DATA_INVALID": f"the export met data it cannot read; {_TOLD} (reference {{reference}})",
    "SOURCE_QUERY_TIMEOUT": f"reading the data took too long; {_NARROW} and try again (reference {{reference}})",
    "SOURCE_QUERY_CANCELLED": "reading the data was interrupted; submit the export again (reference {reference})",
    "SOURCE_UNAVAILABLE": "the export's data could not be reached for now; it is tried again (reference {reference})",
    "SOURCE_NOT_CONFIGURED": f"the export could not reach its data; {_TOLD} (reference {{reference}})",
    "SOURCE_AUTH_FAILED": f"the export could not reach its data; {_TOLD} (reference {{reference}})",
    "SOURCE_ACCESS_DENIED": f"the export could not reach its data; {_TOLD} (reference {{reference}})",
    "SOURCE_DATABASE_UNKNOWN": f"the export could not reach its data; {_TOLD} (reference {{reference}})",
    "SOURCE_TLS_UNVERIFIED": f"the export could not reach its data; {_TOLD} (reference {{reference}})",
    "SOURCE_CONNECTION_LIMIT": "the export's data source is busy; submit the export again later "
    "(reference {reference})",
    "CURSOR_INVALID": "the export could not continue where it stopped; it is tried again (reference {reference})",
    # The file's format: what the customer can choose instead.
    "XLSX_TOO_LARGE": f"the data is too large for an Excel workbook; export CSV or csv.gz, or {_NARROW} "
    "(reference {reference})",
    "XLSX_CELL_TOO_LONG": "a value is longer than an Excel cell holds (32,767 characters); export CSV or csv.gz, "
    "which hold any length (reference {reference})",
    "PARQUET_TOO_LARGE": f"the data is too large for one Parquet file; export jsonl.gz or csv.gz, or {_NARROW} "
    "(reference {reference})",
    "PARQUET_VALUE_INVALID": "a value does not fit a Parquet column; export JSON Lines or CSV, which write every "
    "value (reference {reference})",
    "PDF_TOO_LARGE": f"the data is too large for a PDF; export CSV or XLSX, or {_NARROW} (reference {{reference}})",
    "JSON_VALUE_INVALID": f"a value meant to be JSON is not; {_TOLD} (reference {{reference}})",
    "EXPORT_TOO_LONG": f"the export is too large to finish; {_NARROW} (reference {{reference}})",
    "VALUE_ERROR": f"the export met a value it cannot write; {_TOLD} (reference {{reference}})",
    # The task itself.
    "INVALID_FILTERS": "the export's filters are no longer valid for its type; submit it again with valid "
    "filters (reference {reference})",
    "DEADLINE_PASSED": f"the export did not finish in its time; {_NARROW} and try again (reference {{reference}})",
    "DEADLINE_UNREACHABLE": "the export could no longer start in time to finish within its timeout_sec; submit "
    "it again, with a longer timeout_sec if it keeps happening (reference {reference})",
    "PROCESSING_FAILED": f"the export could not be run; {_TOLD} (reference {{reference}})",
    "FAN_OUT_FAILED": f"the export could not be completed; {_TOLD} (reference {{reference}})",
    "ENQUEUE_FAILED": "the export could not be started; submit it again shortly (reference {reference})",
    "SCHEDULE_FAILED": "the export could not be started; submit it again shortly (reference {reference})",
}
DEFAULT_MESSAGE: Final = f"the export could not be completed; {_TOLD} (reference {{reference}})"


def customer_message(code: str, reference: str, own: Mapping[str, str] | None = None) -> str:
    """The message a caller reads for ``code``: the type's ``own`` message for it if any, else
    ours; ``{reference}`` becomes ``reference`` (the task id)."""
    template = (own or {}).get(code) or MESSAGES.get(code, DEFAULT_MESSAGE)
    return template.format_map({REFERENCE: reference})


def message_problem(template: str) -> str | None:
    """Why ``template`` cannot be a code's message (None: it can): it may hold ``{reference}``
    and no other placeholder, and braces otherwise only doubled."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as error:
        return f"is not a message template ({error}); write a literal brace as {{{{ or }}}}"
    unknown = sorted(set(fields) - {REFERENCE})
    if unknown:
        return f"may use {{{REFERENCE}}} only, not {', '.join('{' + name + '}' for name in unknown)}"
    return None
