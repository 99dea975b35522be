"""What exportctl prints and exits with: the exit code of each error, the error's one line, and
the output in tables or JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import IntEnum
from typing import Final, TextIO

from pydantic import BaseModel
from rich.console import RenderableType

from exports_client.errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ExportsError,
    IntegrityError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    WaitTimeoutError,
)
from exports_client.options import TOKEN_ENV, URL_ENV
from exports_client.render import show, to_json


class ExitCode(IntEnum):
    """What ``exportctl`` exits with (docs/client.md has the same table)."""

    OK = 0
    #: Anything else, e.g. the file could not be written.
    FAILURE = 1
    #: Bad command line (argparse's own code), or filters the export type's schema refuses
    #: (unknown, missing, of the wrong type), found before anything is submitted.
    USAGE = 2
    #: No token, or the service refused it (401/403).
    AUTH = 3
    #: No such task or schedule (404).
    NOT_FOUND = 4
    #: The service refused the request as it is: invalid input (400/413/415/422) or the task's
    #: state does not allow it (409).
    REJECTED = 5
    #: Too many requests (429): try again after the time the message gives.
    RATE_LIMITED = 6
    #: The service failed or is unavailable (5xx), could not be reached, or sent something
    #: unexpected (including a download whose sha256 did not match).
    UNAVAILABLE = 7
    #: ``--wait``: the task ended FAILED, TIMEOUT or CANCELLED.
    TASK_NOT_COMPLETED = 8
    #: ``--wait``: the task had not ended when ``--timeout`` ran out (it goes on on the server).
    TIMEOUT = 9
    #: Ctrl-C.
    INTERRUPTED = 130
    #: stdout was closed before everything was written (``exportctl list | head -1``): 128 +
    #: SIGPIPE, what a shell reports for a command killed by a closed pipe. Nothing is printed.
    BROKEN_PIPE = 141


_EXIT_BY_ERROR: Final[tuple[tuple[type[ExportsError], ExitCode], ...]] = (
    (AuthenticationError, ExitCode.AUTH),
    (NotFoundError, ExitCode.NOT_FOUND),
    (ConflictError, ExitCode.REJECTED),
    (InvalidRequestError, ExitCode.REJECTED),
    (RateLimitedError, ExitCode.RATE_LIMITED),
    (ServerError, ExitCode.UNAVAILABLE),
    (APIError, ExitCode.REJECTED),
    (WaitTimeoutError, ExitCode.TIMEOUT),
)


def exit_code_for(error: ExportsError) -> ExitCode:
    """The exit code for an SDK error."""
    for error_type, code in _EXIT_BY_ERROR:
        if isinstance(error, error_type):
            return code
    return ExitCode.UNAVAILABLE


def _hint(error: ExportsError) -> str | None:
    if isinstance(error, NetworkError):
        return f"Is the exports API running there? Set {URL_ENV} or --url."
    if isinstance(error, AuthenticationError):
        return f"Check {TOKEN_ENV} or --token."
    if isinstance(error, APIError) and error.retryable:
        when = f"in {math.ceil(error.retry_after)} s" if error.retry_after is not None else "in a little while"
        return f"Retry {when}."
    if isinstance(error, WaitTimeoutError):
        return f"The export goes on on the server: exportctl status {error.task_id}"
    if isinstance(error, IntegrityError):
        return "Nothing was saved; download it again."
    return None


def describe(error: ExportsError) -> str:
    """What went wrong and what to do about it."""
    message = str(error) if isinstance(error, APIError) else error.message
    hint = _hint(error)
    return f"{message.rstrip('.')}. {hint}" if hint else message


class Output:
    """stdout for results, stderr for messages; tables for people, JSON with ``--json``."""

    def __init__(self, as_json: bool, out: TextIO, err: TextIO) -> None:
        self.as_json = as_json
        self.out = out
        self.err = err

    def result(self, data: BaseModel | Sequence[BaseModel] | dict[str, object], view: RenderableType | str) -> None:
        if self.as_json:
            print(to_json(data), file=self.out)
        elif isinstance(view, str):
            print(view, file=self.out)
        else:
            show(view, self.out)

    def note(self, message: str) -> None:
        print(message, file=self.err, flush=True)
