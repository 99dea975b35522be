"""Typed errors of the SDK. Every error the client raises on purpose is an :class:`ExportsError`.

The service's error answers (``{"error": {"code", "message", "field"?}}``) become an
:class:`APIError` subclass chosen by HTTP status, carrying the service's ``code``, ``message``,
``field`` and, when the service sent ``Retry-After``, how many seconds to wait.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, ClassVar

import httpx
from pydantic import ValidationError as _PydanticValidationError

from exports_client.models import ErrorBody, RefusalEstimate

if TYPE_CHECKING:
    from exports_client.models import TaskView


class ExportsError(Exception):
    """Base of every error of this SDK."""

    #: Whether the same call may succeed if made again later.
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIError(ExportsError):
    """The service answered with an error status."""

    def __init__(
        self, status: int, code: str, message: str, field: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.field = field
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" (field: {self.field})" if self.field and self.field not in self.message else ""
        return f"{self.status} {self.code}: {self.message}{where}"


class AuthenticationError(APIError):
    """401/403: the token is missing, unknown or not allowed."""


class NotFoundError(APIError):
    """404: no such task (or not yours; the service does not tell them apart), no such export type
    among those you may use, or no such route."""


class ConflictError(APIError):
    """409: the task is not in a state that allows this (e.g. ``TASK_NOT_READY`` for a download)."""


class GoneError(APIError):
    """410: what the request needs is gone for good (``FILE_EXPIRED``: a task's file expired, so
    its delivery cannot be retried); asking again never helps, a new export does."""


class InvalidRequestError(APIError):
    """400/413/415/422: the request was refused as it is; ``field`` names the offending input."""


class RateLimitedError(APIError):
    """429: too many requests or exports; try again after ``retry_after`` seconds. A capacity
    refusal (``WOULD_TIME_OUT``) says what it was estimated on in ``estimate``."""

    retryable = True
    estimate: RefusalEstimate | None = None


class ServerError(APIError):
    """5xx: the service failed."""


class ServiceUnavailableError(ServerError):
    """503: the service cannot take the request now; try again after ``retry_after`` seconds."""

    retryable = True


class NetworkError(ExportsError):
    """The service could not be reached, or the connection broke or timed out."""

    retryable = True

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class UnexpectedResponseError(ExportsError):
    """An answer this SDK does not understand (a different API version, or a proxy's page)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class IntegrityError(ExportsError):
    """A downloaded file's sha256 differs from the one the service reported; nothing was kept."""

    def __init__(self, message: str, expected: str, actual: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class WaitTimeoutError(ExportsError):
    """The task did not end in time. ``task`` is its last state seen, if any was."""

    def __init__(self, message: str, task_id: str, task: TaskView | None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.task = task


class WebhookVerificationError(ExportsError):
    """A webhook's signature headers are missing, malformed, too old or too new, or do not match."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date), or ``None``."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())


def error_from_response(response: httpx.Response) -> APIError:
    """The typed error for an error answer of the service (its body must have been read)."""
    status = response.status_code
    estimate = None
    try:
        detail = ErrorBody.model_validate_json(response.content).error
        code, message, field, estimate = detail.code, detail.message, detail.field, detail.estimate
    except _PydanticValidationError:
        code, message, field = f"HTTP_{status}", response.reason_phrase or "error", None
    error_type = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    error = error_type(status, code, message, field, retry_after_seconds(response.headers.get("Retry-After")))
    if isinstance(error, RateLimitedError):
        error.estimate = estimate
    return error
