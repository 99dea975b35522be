"""The service's typed errors. One base class; each carries the data a caller needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


class ExportsError(Exception):
    """Base of every error this service raises on purpose."""

    code = "INTERNAL_ERROR"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRequest(ExportsError):
    """A field of the request breaks a rule; ``field`` names it (``priority``, ``filters.date_from``,
    ``status``). One code for every such mistake, wherever the field is; rules with a code of
    their own (an unknown export type, a refused callback URL) pass ``code``."""

    code = "VALIDATION_ERROR"

    def __init__(
        self,
        message: str,
        field: str | None = None,
        code: str | None = None,
        problems: tuple[tuple[str | None, str], ...] = (),
    ) -> None:
        super().__init__(message, field=field)
        self.field = field
        # Every (field, message) when the request broke several rules at once, first one first.
        self.problems = problems
        if code:
            self.code = code


class TaskNotFound(ExportsError):
    """No such task, or not the caller's: both look the same from outside."""

    code = "TASK_NOT_FOUND"

    def __init__(self, task_id: str) -> None:
        super().__init__(f"export task {task_id} not found", task_id=task_id)
        self.task_id = task_id


class UnknownExportType(ExportsError):
    """No export type of that name among those the caller may use (404 on its own URL)."""

    code = "UNKNOWN_EXPORT_TYPE"


class InvalidTransition(ExportsError):
    """The transition table does not allow this status change."""

    code = "INVALID_TRANSITION"

    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"cannot go from {current} to {target}", current=current, target=target)
        self.current = current
        self.target = target


class TaskNotReady(ExportsError):
    """The operation needs a state the task is not in (e.g. download before COMPLETED)."""

    code = "TASK_NOT_READY"

    def __init__(self, task_id: str, status: str) -> None:
        super().__init__(f"export task {task_id} is {status}", task_id=task_id, status=status)
        self.status = status


class TaskNotCancellable(ExportsError):
    """The task already ended."""

    code = "TASK_NOT_CANCELLABLE"


class TaskNotRetryable(ExportsError):
    """Only FAILED, TIMEOUT and CANCELLED tasks can be tried again."""

    code = "TASK_NOT_RETRYABLE"


class ConditionFailed(ExportsError):
    """A conditional write lost: somebody else changed the item first."""

    code = "CONFLICT"

    def __init__(self, message: str, current: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.current = current


class LostOwnership(ExportsError):
    """The worker no longer owns its task (cancelled, timed out or reclaimed)."""

    code = "LOST_OWNERSHIP"


class RetryableError(ExportsError):
    """A transient fault (throttling, a network error): trying again later may succeed."""

    code = "TRANSIENT_ERROR"


class ServiceUnavailable(RetryableError):
    """A dependency did not take the request; the caller should retry after a pause."""

    code = "SERVICE_UNAVAILABLE"


class ExportFailed(ExportsError):
    """The export cannot succeed as requested; retrying would fail the same way."""

    code = "EXPORT_FAILED"

    def __init__(self, message: str, code: str = "EXPORT_FAILED") -> None:
        super().__init__(message)
        self.code = code


class SourceCode:
    """The error codes of a failed read from a data source, in one place (the task shows them)."""

    QUERY_FAILED: Final = "SOURCE_QUERY_FAILED"
    QUERY_TIMEOUT: Final = "SOURCE_QUERY_TIMEOUT"
    QUERY_CANCELLED: Final = "SOURCE_QUERY_CANCELLED"
    NOT_CONFIGURED: Final = "SOURCE_NOT_CONFIGURED"
    # Connections the server refuses for good: waiting does not fix a wrong password.
    AUTH_FAILED: Final = "SOURCE_AUTH_FAILED"
    ACCESS_DENIED: Final = "SOURCE_ACCESS_DENIED"
    DATABASE_UNKNOWN: Final = "SOURCE_DATABASE_UNKNOWN"
    CONNECTION_LIMIT: Final = "SOURCE_CONNECTION_LIMIT"
    DATA_INVALID: Final = "SOURCE_DATA_INVALID"
    # The server's TLS certificate could not be verified (untrusted CA, wrong host name, no CA
    # bundle): final, since only a change of configuration makes it pass.
    TLS_UNVERIFIED: Final = "SOURCE_TLS_UNVERIFIED"


class SourceQueryTimeout(ExportFailed):
    """A source's query ran past its statement timeout: the run's time left, which may have been
    the task's deadline (then the task times out rather than fails)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=SourceCode.QUERY_TIMEOUT)


@dataclass(frozen=True)
class CapacityEstimate:
    """What a capacity refusal was estimated on: seconds until the task would have started and
    been done, against the timeout it asked for."""

    estimated_start_sec: int
    estimated_completion_sec: int
    timeout_sec: int


class Overloaded(ExportsError):
    """Admission refused: the work queued ahead would make the task miss its deadline (with
    ``estimate``), the backlog is too deep, or the user has too many active tasks. Nothing was
    created; ``retry_after`` says when to try again."""

    def __init__(self, message: str, code: str, retry_after: int, estimate: CapacityEstimate | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.code = code
        self.retry_after = retry_after
        self.estimate = estimate


class DuplicateSubmission(ExportsError):
    """An identical task is already active; ``holder`` is its id."""

    code = "DUPLICATE"

    def __init__(self, holder: str) -> None:
        super().__init__(f"an identical export {holder} is already active", holder=holder)
        self.holder = holder
