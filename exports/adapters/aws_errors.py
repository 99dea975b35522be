"""Turning SDK failures into the service's errors, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from exports.domain.errors import ExportsError, RetryableError

# Error codes AWS services use for "slow down" or "try again".
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "InternalServerError",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "TransactionConflictException",
    }
)


def error_code(error: ClientError) -> str:
    """The AWS error code of ``error``."""
    return str(error.response.get("Error", {}).get("Code", ""))


@contextmanager
def translated(operation: str) -> Iterator[None]:
    """Run an SDK call, raising :class:`RetryableError` for transient faults and
    :class:`ExportsError` for the rest."""
    try:
        yield
    except ClientError as error:
        code = error_code(error)
        if code in TRANSIENT_CODES:
            raise RetryableError(f"{operation}: {code}", aws_code=code) from error
        raise ExportsError(f"{operation}: {code}", aws_code=code) from error
    except BotoCoreError as error:
        # Connection and endpoint errors: the network or the service may come back.
        raise RetryableError(f"{operation}: {type(error).__name__}") from error
