"""The service's typed errors.

Every error the service raises on purpose derives from one base class, :class:`ExportsError`.
Each error carries the data a caller needs to act on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


class ExportsError(Exception):
    """The base class of every error this service raises on purpose. Each subclass sets its own
    ``code``."""

    code = "INTERNAL_ERROR"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRequest(ExportsError):
    """A field of the request breaks a rule. ``field`` names the field, for example ``priority``,
    ``filters.date_from`` or ``status``.

    Every such mistake has the same code, wherever the field is. A rule with a code of its own,
    such as an unknown export type or a refused callback URL, passes ``code``.
    """

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
        # When the request broke several rules at once: every (field, message), in the order found.
        self.problems = problems
        if code:
            self.code = code


class TaskNotFound(ExportsError):
    """No such task, or a task that is not the caller's. Both look the same from outside."""

    code = "TASK_NOT_FOUND"

    def __init__(self, task_id: str) -> None:
        super().__init__(f"export task {task_id} not found", task_id=task_id)
        self.task_id = task_id


class UnknownExportType(ExportsError):
    """No export type has that name among those the caller may use. On the type's own URL this
    is a 404."""

    code = "UNKNOWN_EXPORT_TYPE"


class InvalidTransition(ExportsError):
    """The transition table does not allow this status change."""

    code = "INVALID_TRANSITION"

    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"cannot go from {current} to {target}", current=current, target=target)
        self.current = current
        self.target = target


class TaskNotReady(ExportsError):
    """The task is not in the state the operation needs, for example a download before
    COMPLETED."""

    code = "TASK_NOT_READY"

    def __init__(self, task_id: str, status: str) -> None:
        super().__init__(f"export task {task_id} is {status}", task_id=task_id, status=status)
        self.status = status


class TaskNotCancellable(ExportsError):
    """The task cannot be cancelled because it already ended."""

    code = "TASK_NOT_CANCELLABLE"


class TaskNotRetryable(ExportsError):
    """The task cannot be tried again. Only FAILED, TIMEOUT and CANCELLED tasks can."""

    code = "TASK_NOT_RETRYABLE"


class ConditionFailed(ExportsError):
    """A conditional write lost because somebody else changed the item first. ``current`` is the
    item as it is now, when the store returned it."""

    code = "CONFLICT"

    def __init__(self, message: str, current: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.current = current


class LostOwnership(ExportsError):
    """The worker no longer owns its task: the task was cancelled, timed out, or reclaimed by
    another worker."""

    code = "LOST_OWNERSHIP"


class RetryableError(ExportsError):
    """A transient fault, such as throttling or a network error. Trying again later may
    succeed."""

    code = "TRANSIENT_ERROR"


class ServiceUnavailable(RetryableError):
    """A dependency did not take the request. The caller should retry after a pause."""

    code = "SERVICE_UNAVAILABLE"


class ExportFailed(ExportsError):
    """The export cannot succeed as requested. Retrying would fail the same way."""

    code = "EXPORT_FAILED"

    def __init__(self, message: str, code: str = "EXPORT_FAILED") -> None:
        super().__init__(message)
        self.code = code


class SourceCode:
    """The error codes of a failed read from a data source, kept in one place. The task shows
    them."""

    QUERY_FAILED: Final = "SOURCE_QUERY_FAILED"
    QUERY_TIMEOUT: Final = "SOURCE_QUERY_TIMEOUT"
    QUERY_CANCELLED: Final = "SOURCE_QUERY_CANCELLED"
    NOT_CONFIGURED: Final = "SOURCE_NOT_CONFIGURED"
    # The server refuses these connections for good. Waiting does not fix a wrong password.
    AUTH_FAILED: Final = "SOURCE_AUTH_FAILED"
    ACCESS_DENIED: Final = "SOURCE_ACCESS_DENIED"
    DATABASE_UNKNOWN: Final = "SOURCE_DATABASE_UNKNOWN"
    CONNECTION_LIMIT: Final = "SOURCE_CONNECTION_LIMIT"
    DATA_INVALID: Final = "SOURCE_DATA_INVALID"
    # The server's TLS certificate could not be verified: an untrusted CA, a wrong host name, or
    # no CA bundle. The error is final, since only a change of configuration makes it pass.
    TLS_UNVERIFIED: Final = "SOURCE_TLS_UNVERIFIED"


class SourceQueryTimeout(ExportFailed):
    """A source's query ran past its statement timeout.

    That timeout is the run's time left, which may have been the task's deadline. Then the task
    times out rather than fails.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, code=SourceCode.QUERY_TIMEOUT)


@dataclass(frozen=True)
class CapacityEstimate:
    """The estimate a capacity refusal was based on: in how many seconds the task would have
    started and been done, and the timeout it asked for."""

    estimated_start_sec: int
    estimated_completion_sec: int
    timeout_sec: int


class Overloaded(ExportsError):
    """Admission refused the task, and nothing was created.

    The work queued ahead would make the task miss its deadline (``estimate`` then holds the
    figures), the backlog is too deep, or the user has too many active tasks. ``retry_after``
    says when to try again.
    """

    def __init__(self, message: str, code: str, retry_after: int, estimate: CapacityEstimate | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.code = code
        self.retry_after = retry_after
        self.estimate = estimate


class DuplicateSubmission(ExportsError):
    """An identical task is already active. ``holder`` is its id."""

    code = "DUPLICATE"

    def __init__(self, holder: str) -> None:
        super().__init__(f"an identical export {holder} is already active", holder=holder)
        self.holder = holder
